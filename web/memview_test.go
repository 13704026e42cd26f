package web_test

import (
	"context"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/PuerkitoBio/goquery"

	"github.com/perpetuity/perpetuity/web/webtest"
)

// TestMemorySearchAcrossUsers: an admin searches every user of the team at
// once, each result labelled with its owner; a member may not; another
// team's memory is never in it.
func TestMemorySearchAcrossUsers(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	srv := webtest.Start(t, webtest.Options{})
	tm := signUpTeam(t, srv, "Across")
	bob, err := srv.DB.EnsureUser(ctx, tm.tenantID, "bob")
	if err != nil {
		t.Fatal(err)
	}
	storeTurn(t, srv, webtest.Turn{TenantID: tm.tenantID, UserID: tm.userID, Conversation: "a", Role: "user", Text: "the Zephyr deploy is on Friday", BornClock: 10, Peak: 1})
	storeTurn(t, srv, webtest.Turn{TenantID: tm.tenantID, UserID: bob, Conversation: "b", Role: "user", Text: "zephyr rollback plan", BornClock: 10, Peak: 1})
	storeTurn(t, srv, webtest.Turn{TenantID: tm.tenantID, UserID: bob, Conversation: "b", Role: "assistant", Text: "lunch at noon", BornClock: 20, Peak: 1})
	other := signUpTeam(t, srv, "Elsewhere")
	storeTurn(t, srv, webtest.Turn{TenantID: other.tenantID, UserID: other.userID, Conversation: "x", Role: "user", Text: "zephyr secret of another team", BornClock: 10, Peak: 1})

	p := tm.admin.Get("/console/memory?user=all&q=zephyr")
	if p.Status != http.StatusOK {
		t.Fatalf("all-users search: %d", p.Status)
	}
	if strings.Contains(p.Body, "another team") {
		t.Fatal("another team's memory in the search")
	}
	var owners []string
	p.TestID("item").Each(func(_ int, s *goquery.Selection) {
		owners = append(owners, s.Find(`[data-testid="item-user"]`).Text())
	})
	slices.Sort(owners)
	if len(owners) != 2 || owners[0] != "bob" || owners[1] == "" || owners[1] == "bob" {
		t.Fatalf("results labelled %q, want bob's and the default user's", owners)
	}
	if got := p.TestID("memory-caption").Text(); !strings.Contains(got, "across all users") || !strings.Contains(got, "most relevant first") {
		t.Fatalf("caption %q", got)
	}
	if o := p.Doc.Find(`#memory-user option[value="all"]`); o.Length() != 1 || o.AttrOr("selected", "-") == "-" {
		t.Fatal("the user picker does not offer (and select) all users")
	}
	browse := tm.admin.Get("/console/memory?user=all")
	if browse.TestID("item").Length() != 3 || !strings.Contains(browse.TestID("memory-caption").Text(), "newest first") {
		t.Fatalf("browsing all users: %d items, caption %q", browse.TestID("item").Length(), browse.TestID("memory-caption").Text())
	}

	mem, _, _ := addMember(t, srv, tm, "tenant_reader")
	if p := mem.Get("/console/memory?user=all&q=zephyr"); p.Status != http.StatusForbidden {
		t.Fatalf("member searching all users: %d", p.Status)
	}
	if p := mem.Get("/console/memory"); p.Doc.Find(`#memory-user option[value="all"]`).Length() != 0 {
		t.Fatal("a member is offered all users")
	}
	if p := other.admin.Get("/console/memory?user=" + strconv.FormatInt(bob, 10)); p.Status != http.StatusNotFound {
		t.Fatalf("another team's admin opens bob's memory: %d", p.Status)
	}
}

// TestMemoryCaptionFollowsOrder: browsing lists the newest first and says
// so; an empty user's page says what to do, not that a search failed.
func TestMemoryCaptionFollowsOrder(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	srv := webtest.Start(t, webtest.Options{})
	tm := signUpTeam(t, srv, "Order")
	first, _ := storeTurn(t, srv, webtest.Turn{TenantID: tm.tenantID, UserID: tm.userID, Conversation: "c", Role: "user", Text: "older turn about kites", BornClock: 10, Peak: 1})
	second, _ := storeTurn(t, srv, webtest.Turn{TenantID: tm.tenantID, UserID: tm.userID, Conversation: "c", Role: "user", Text: "newer turn", BornClock: 20, Peak: 1})
	p := tm.admin.Get("/console/memory")
	ids := []string{p.TestID("item").Eq(0).AttrOr("data-item-id", ""), p.TestID("item").Eq(1).AttrOr("data-item-id", "")}
	if ids[0] != strconv.FormatInt(second, 10) || ids[1] != strconv.FormatInt(first, 10) {
		t.Fatalf("browse order %v, want newest first", ids)
	}
	if got := p.TestID("memory-caption").Text(); !strings.Contains(got, "newest first") || strings.Contains(got, "relevant") {
		t.Fatalf("browse caption %q", got)
	}
	if p.TestID("item-why").Length() != 0 || p.Doc.Find("mark").Length() != 0 {
		t.Fatal("browsing explains a match nobody searched for")
	}
	empty, err := srv.DB.EnsureUser(ctx, tm.tenantID, "nobody-yet")
	if err != nil {
		t.Fatal(err)
	}
	e := tm.admin.Get("/console/memory?user=" + strconv.FormatInt(empty, 10))
	if got := e.TestID("memory-empty").Text(); !strings.Contains(got, "Nothing is stored for this user yet") || strings.Contains(got, "matches") {
		t.Fatalf("empty user says %q", got)
	}
	if got := tm.admin.Get("/console/memory?q=xylophone").TestID("memory-empty").Text(); !strings.Contains(got, "Nothing stored matches “xylophone”") {
		t.Fatalf("failed search says %q", got)
	}
}

// TestUserHeatOverview: the user page counts the user's items by heat now,
// by the engine's law, and says how many are warm.
func TestUserHeatOverview(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	srv := webtest.Start(t, webtest.Options{})
	tm := signUpTeam(t, srv, "Heatmap")
	u := tm.userID
	turn := func(text string, born int64, peak float64, reheats ...[2]float64) {
		storeTurn(t, srv, webtest.Turn{TenantID: tm.tenantID, UserID: u, Conversation: "c", Role: "user", Text: text, BornClock: born, Tau: 1000, Peak: peak, Reheats: reheats})
	}
	turn("long cold", 0, 1)                                    // e^-5: cold
	turn("never activated", 100, 0)                            // no activation: cold
	turn("recent", 4900, 1)                                    // e^-0.1 = 0.90
	turn("retrieved just now", 4000, 1, [2]float64{5000, 1.8}) // 1.8
	turn("fading", 2000, 1)                                    // e^-3 = 0.0498: just cold
	turn("lukewarm", 3500, 1)                                  // e^-1.5 = 0.22
	if err := webtest.SetClock(ctx, srv.DB, tm.tenantID, u, 5000); err != nil {
		t.Fatal(err)
	}
	p := tm.admin.Get("/console/users/" + strconv.FormatInt(u, 10))
	if got := p.TestID("user-heat-summary").Text(); !strings.HasPrefix(got, "3 of 6 items are warm") {
		t.Fatalf("summary %q", got)
	}
	counts := map[string]string{}
	p.TestID("heat-bin").Each(func(_ int, s *goquery.Selection) {
		counts[strings.TrimSpace(s.Find("text").First().Text())] = s.AttrOr("data-count", "")
	})
	want := map[string]string{"cold, below 0.05": "3", "0.05 to 0.2": "0", "0.2 to 0.5": "1", "0.5 to 1": "1", "over 1, reheated": "1"}
	for k, v := range want {
		if counts[k] != v {
			t.Errorf("bin %q has %q items, want %s (all: %v)", k, counts[k], v, counts)
		}
	}
}
