package web_test

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/PuerkitoBio/goquery"

	"github.com/perpetuity/perpetuity/memory/chain"
	"github.com/perpetuity/perpetuity/memory/dict"
	"github.com/perpetuity/perpetuity/web/webtest"
)

// chainedMemory stores two conversations of the team's user that share
// rare names, and a reply whose request showed the model the first one,
// then runs the chain writer. It returns the items: the first mention, the
// later one that continues it, and the reply that drew on it.
func chainedMemory(t *testing.T, srv *webtest.Server, tm team) (first, later, reply, convFirst, convLater int64) {
	t.Helper()
	ctx := context.Background()
	turn := func(conv, role, text string) (int64, int64) {
		return storeTurn(t, srv, webtest.Turn{TenantID: tm.tenantID, UserID: tm.userID, Conversation: conv, Role: role, Text: text, Peak: 1})
	}
	// Earlier, unrelated memory makes the names rare in a real-sized memory.
	for _, text := range []string{"lunch was soup today", "the printer jammed again", "weather looks grey", "meeting moved to friday",
		"coffee machine is fixed", "new chairs arrived", "parking lot repainted"} {
		turn("misc", "user", text)
	}
	first, convFirst = turn("trip", "user", "planning the zanzibar trip with bartholomew esmeralda and captain ignatius on the quokkaferry")
	later, convLater = turn("return", "user", "back from zanzibar where bartholomew esmeralda ignatius and the quokkaferry were wonderful")
	reply, _ = turn("return", "assistant", "glad zanzibar went well for bartholomew esmeralda ignatius and the quokkaferry crew")
	// What the reply's request showed the model: the first mention.
	if _, err := srv.Owner.Exec(ctx, `INSERT INTO reply_sources (tenant_id, message_id, item_ids)
		SELECT tenant_id, message_id, ARRAY[$3::bigint] FROM items WHERE tenant_id = $1 AND id = $2`, tm.tenantID, reply, first); err != nil {
		t.Fatal(err)
	}
	lex, err := dict.Builtin(chain.LexiconVersion)
	if err != nil {
		t.Fatal(err)
	}
	if err := chain.NewWriter(srv.DB, lex, chain.Rules{}, nil).CatchUp(ctx, tm.tenantID); err != nil {
		t.Fatal(err)
	}
	return first, later, reply, convFirst, convLater
}

// neighbours lists, per group kind, the item ids a selection links to.
func neighbours(s *goquery.Selection, group string) map[string][]string {
	out := map[string][]string{}
	s.Find(group).Each(func(_ int, g *goquery.Selection) {
		kind := g.AttrOr("data-kind", "")
		g.Find(`[data-testid="chain-link"]`).Each(func(_ int, a *goquery.Selection) {
			out[kind] = append(out[kind], strings.TrimPrefix(a.AttrOr("href", ""), "/console/items/"))
		})
	})
	return out
}

func sameIDs(got []string, want ...int64) bool {
	if len(got) != len(want) {
		return false
	}
	for _, w := range want {
		if !contains(got, itoa(w)) {
			return false
		}
	}
	return true
}

func TestChainOnItemAndConversationPages(t *testing.T) {
	t.Parallel()
	srv := webtest.Start(t, webtest.Options{})
	tm := signUpTeam(t, srv, "Chains")
	other := signUpTeam(t, srv, "Elsewhere")
	first, later, reply, convFirst, convLater := chainedMemory(t, srv, tm)

	// The first mention: continued by the later turn, answered from by the
	// reply (what a reply drew on is not also its thread).
	p := tm.admin.Get("/console/items/" + itoa(first))
	if p.Status != http.StatusOK || p.TestID("item-title").Text() != "Item #"+itoa(first) {
		t.Fatalf("item page: %d %q", p.Status, p.TestID("item-title").Text())
	}
	got := neighbours(p.TestID("chain-section"), `[data-testid="chain-group"]`)
	if !sameIDs(got["continued-by"], later) || !sameIDs(got["answered-from"], reply) || len(got["continues"]) != 0 {
		t.Fatalf("first mention's chain %v, want continued by %d, answered from by %d", got, later, reply)
	}
	li := p.TestID("chain-section").Find(`[data-kind="continued-by"] [data-item-id="` + itoa(later) + `"]`)
	if s := li.Find(`[data-testid="chain-snippet"]`).Text(); !strings.HasPrefix(s, "back from zanzibar") {
		t.Errorf("neighbour snippet %q", s)
	}
	if c := li.Find(`[data-testid="chain-conversation"]`); c.Text() != "return" || c.AttrOr("href", "") != "/console/conversations/"+itoa(convLater)+"#item-"+itoa(later) {
		t.Errorf("neighbour conversation %q -> %q", c.Text(), c.AttrOr("href", ""))
	}
	if li.Find(`[data-testid="chain-date"]`).Text() == "" {
		t.Error("neighbour without a date")
	}

	// The reply drew on the first mention (and so is not also its thread).
	p = tm.admin.Get("/console/items/" + itoa(reply))
	got = neighbours(p.TestID("chain-section"), `[data-testid="chain-group"]`)
	if !sameIDs(got["drew-on"], first) || len(got["continues"]) != 0 || len(got["continued-by"]) != 0 {
		t.Fatalf("reply's chain %v, want drew on %d only", got, first)
	}
	// An item without links says so.
	misc := tm.admin.Get("/console/memory?q=printer").TestID("item").AttrOr("data-item-id", "")
	if p := tm.admin.Get("/console/items/" + misc); p.TestID("chain-empty").Length() != 1 || p.TestID("chain-group").Length() != 0 {
		t.Fatalf("unlinked item %s: %d empty notes, %d groups", misc, p.TestID("chain-empty").Length(), p.TestID("chain-group").Length())
	}

	// The conversation page marks each linked turn with its compact line.
	cv := tm.admin.Get("/console/conversations/" + itoa(convLater))
	card := func(p *webtest.Page, id int64) *goquery.Selection {
		return p.Doc.Find(`[data-testid="item"][data-item-id="` + itoa(id) + `"]`)
	}
	lg := neighbours(card(cv, later), `[data-testid="chain-line-group"]`)
	if !sameIDs(lg["continues"], first) || len(lg) != 1 {
		t.Fatalf("later turn's line %v, want continues %d", lg, first)
	}
	if w := card(cv, later).Find(`[data-testid="chain-where"]`).Text(); !strings.HasPrefix(w, "(trip, ") {
		t.Errorf("a neighbour in another conversation is shown as %q, want its conversation named", w)
	}
	rg := neighbours(card(cv, reply), `[data-testid="chain-line-group"]`)
	if !sameIDs(rg["drew-on"], first) || len(rg) != 1 {
		t.Fatalf("reply's line %v", rg)
	}
	cf := tm.admin.Get("/console/conversations/" + itoa(convFirst))
	line := card(cf, first).Find(`[data-testid="chain-line"]`).Text()
	for _, want := range []string{"continued by #", "answered from by #" + itoa(reply)} {
		if !strings.Contains(line, want) {
			t.Errorf("first mention's line %q lacks %q", line, want)
		}
	}
	// Search results carry the same lines.
	sr := tm.admin.Get("/console/memory?q=quokkaferry")
	if n := sr.TestID("chain-line").Length(); n != 3 {
		t.Errorf("search results show %d chain lines, want one per found turn", n)
	}

	// A member reads the chain too; another tenant's admin finds none of it.
	mem, _, _ := addMember(t, srv, tm, "tenant_reader")
	if p := mem.Get("/console/items/" + itoa(first)); p.Status != http.StatusOK || p.TestID("chain-neighbour").Length() != 2 {
		t.Fatalf("member on the item page: %d, %d neighbours", p.Status, p.TestID("chain-neighbour").Length())
	}
	for _, path := range []string{"/console/items/" + itoa(first), "/console/items/" + itoa(reply), "/console/conversations/" + itoa(convLater)} {
		p := other.admin.Get(path)
		if p.Status != http.StatusNotFound {
			t.Errorf("other tenant GET %s = %d, want 404", path, p.Status)
		}
		if strings.Contains(p.Body, "zanzibar") || p.TestID("chain-link").Length() != 0 {
			t.Errorf("other tenant GET %s shows the chain", path)
		}
	}
	if p := tm.admin.Get("/console/items/999999999"); p.Status != http.StatusNotFound {
		t.Errorf("missing item: %d", p.Status)
	}
}
