package web_test

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/perpetuity/perpetuity/memory"
	"github.com/perpetuity/perpetuity/web/webtest"
)

// TestRedactFromConsole: the item page offers an admin, and only an
// admin, the redaction; the typed id must match; a member and another
// team are refused; the redaction reaches both serving engines' arenas,
// leaves the rest of the conversation, and is audited on the owner by
// name with the item's id and no text.
func TestRedactFromConsole(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	srv := webtest.Start(t, webtest.Options{})
	o := newOpsTeam(t, srv, "Redactors")
	second := memory.New(srv.DB, memory.TextAnalyzer{C: mustCounter(t)}, memory.DictTerms{D: mustDict(t, 1)}, memory.Options{})
	alice := o.say(t, o.eng, "alice", 3)
	var ids []int64
	var conv int64
	if err := srv.Owner.QueryRow(ctx, `SELECT array_agg(id ORDER BY id), min(conversation_id) FROM items WHERE tenant_id = $1 AND user_id = $2`,
		o.tenantID, alice).Scan(&ids, &conv); err != nil || len(ids) != 3 {
		t.Fatalf("items %v: %v", ids, err)
	}
	item := ids[1]
	for _, e := range []*memory.Engine{o.eng, second} {
		if a, err := e.ArenaSnapshot(ctx, o.tenantID); err != nil || a.Count != 3 {
			t.Fatalf("warm-up: %+v %v", a.Count, err)
		}
	}
	itemPage := "/console/items/" + itoa(item)
	page := o.admin.Get(itemPage)
	if page.TestID("redact-form").Length() != 1 || !strings.Contains(page.TestID("redact-section").Text(), "never what it said") {
		t.Fatal("no redaction form, saying what it does, on the item page")
	}
	if conv := o.admin.Get("/console/conversations/" + itoa(conv)); conv.TestID("item-redact-link").Length() != 3 {
		t.Fatalf("the conversation offers %d redact links for 3 turns", conv.TestID("item-redact-link").Length())
	}
	mem, _, _ := addMember(t, srv, o.team, "tenant_reader")
	if p := mem.Get(itemPage); p.Status != http.StatusOK || p.TestID("redact-form").Length() != 0 {
		t.Fatalf("a reader sees the item page %d with %d redaction forms", p.Status, p.TestID("redact-form").Length())
	}
	path := itemPage + "/redact"
	if p := o.admin.Post(path, url.Values{"confirm": {itoa(ids[0])}}); p.Status != http.StatusBadRequest || p.TestID("form-error").Length() != 1 {
		t.Fatalf("wrong confirmation: %d", p.Status)
	}
	if p := mem.Post(path, url.Values{"confirm": {itoa(item)}}); p.Status != http.StatusForbidden {
		t.Fatalf("reader redaction: %d", p.Status)
	}
	other := signUpTeam(t, srv, "Outsiders")
	other.admin.Get("/console")
	if p := other.admin.Post(path, url.Values{"confirm": {itoa(item)}}); p.Status != http.StatusNotFound {
		t.Fatalf("another team's redaction: %d", p.Status)
	}
	count := func() int64 {
		var n int64
		if err := srv.Owner.QueryRow(ctx, `SELECT count(*) FROM items WHERE tenant_id = $1 AND user_id = $2`, o.tenantID, alice).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	if count() != 3 {
		t.Fatal("a refused redaction removed something")
	}
	o.admin.Get(itemPage)
	p := o.admin.Post(path, url.Values{"confirm": {"#" + itoa(item)}})
	if p.Status != http.StatusSeeOther || p.Location() != "/console/conversations/"+itoa(conv) {
		t.Fatalf("redaction: %d to %q", p.Status, p.Location())
	}
	after := o.admin.Get(p.Location())
	if n := after.TestID("notice").Text(); !strings.Contains(n, "redacted") {
		t.Fatalf("notice %q", n)
	}
	if after.TestID("item").Length() != 2 || strings.Contains(after.Body, "painted 1 tomatoes") {
		t.Fatalf("the conversation after the redaction shows %d turns", after.TestID("item").Length())
	}
	if count() != 2 {
		t.Fatalf("after the redaction alice has %d items", count())
	}
	for i, e := range []*memory.Engine{o.eng, second} {
		a, err := e.ArenaSnapshot(ctx, o.tenantID)
		if _, held := a.Items[item]; err != nil || held || a.Count != 2 {
			t.Fatalf("engine %d holds %d items after the redaction (the redacted one: %v): %v", i, a.Count, held, err)
		}
	}
	if g := o.admin.Get(itemPage); g.Status != http.StatusNotFound {
		t.Fatalf("the redacted item's page: %d", g.Status)
	}
	everyFrom(t, srv, o.tenantID, "memory.redact")
	a := o.admin.Get("/console/audit?action=memory.redact")
	if got := strings.TrimSpace(a.TestID("audit-target").Text()); got != "alice" {
		t.Errorf("the redaction's entry is on %q, want alice", got)
	}
	var named int64
	if err := srv.Owner.QueryRow(context.Background(), `SELECT (detail->>'item_id')::bigint FROM audit_log
		WHERE tenant_id = $1 AND action = 'memory.redact'`, o.tenantID).Scan(&named); err != nil || named != item {
		t.Errorf("the redaction's entry names item %d (%v), want %d", named, err, item)
	}
	if strings.Contains(a.Body, "tomatoes") {
		t.Errorf("the audit page shows the redacted text")
	}
}
