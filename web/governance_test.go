package web_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/PuerkitoBio/goquery"

	"github.com/perpetuity/perpetuity/web"
	"github.com/perpetuity/perpetuity/web/webtest"
)

// Issue 18, finding 4: what the audit log tells a team admin.

// auditCells is each row of an audit page as action -> target shown.
func auditTargets(p *webtest.Page) map[string][]string {
	out := map[string][]string{}
	p.TestID("audit-row").Each(func(_ int, r *goquery.Selection) {
		a := strings.TrimSpace(r.Find(`[data-testid="audit-action"]`).Text())
		out[a] = append(out[a], strings.TrimSpace(r.Find(`[data-testid="audit-target"]`).Text()))
	})
	return out
}

// TestMemoryViewsAreAudited: every page that shows memory content, to a
// read-only member as to an admin, writes who saw whose memory, which
// view, which items and in what role; the export too. The audit page
// names the memory user by its current name.
func TestMemoryViewsAreAudited(t *testing.T) {
	t.Parallel()
	srv := webtest.Start(t, webtest.Options{})
	ctx := context.Background()
	tm := signUpTeam(t, srv, "Watched")
	itemID, convID := storeTurn(t, srv, webtest.Turn{TenantID: tm.tenantID, UserID: tm.userID, Conversation: "c", Role: "user",
		Text: "the watched words about quokkas", BornClock: 1, Peak: 1})
	member, memberEmail, _ := addMember(t, srv, tm, "tenant_reader")
	views := []struct {
		path, view string
	}{
		{"/console/memory", "latest"},
		{"/console/memory?q=quokkas&user=" + itoa(tm.userID), "search"},
		{"/console/conversations/" + itoa(convID), "conversation"},
		{"/console/items/" + itoa(itemID), "item"},
	}
	for _, v := range views {
		if p := member.Get(v.path); p.Status != http.StatusOK || !strings.Contains(p.Body, "quokkas") {
			t.Fatalf("member GET %s: %d", v.path, p.Status)
		}
	}
	if p := tm.admin.Get("/console/users/" + itoa(tm.userID) + "/export"); p.Status != http.StatusOK {
		t.Fatalf("export: %d", p.Status)
	}
	rows, err := srv.Owner.Query(ctx, `SELECT actor_email, action, target, detail::text, address FROM audit_log
		WHERE tenant_id = $1 AND action IN ('memory.view', 'memory.export') ORDER BY id`, tm.tenantID)
	if err != nil {
		t.Fatal(err)
	}
	type entry struct{ actor, action, target, detail, address string }
	var got []entry
	for rows.Next() {
		var e entry
		if err := rows.Scan(&e.actor, &e.action, &e.target, &e.detail, &e.address); err != nil {
			t.Fatal(err)
		}
		got = append(got, e)
	}
	if len(got) != len(views)+1 {
		t.Fatalf("%d memory entries, want one per view and the export: %+v", len(got), got)
	}
	for i, v := range views {
		e := got[i]
		var d struct {
			View  string  `json:"view"`
			As    string  `json:"as"`
			Items []int64 `json:"items"`
		}
		if err := json.Unmarshal([]byte(e.detail), &d); err != nil {
			t.Fatal(err)
		}
		if e.actor != memberEmail || e.action != "memory.view" || e.target != "memory_user:"+itoa(tm.userID) || e.address != "127.0.0.1" ||
			d.View != v.view || d.As != "tenant_reader" || len(d.Items) != 1 || d.Items[0] != itemID {
			t.Errorf("%s: entry %+v", v.path, e)
		}
		if strings.Contains(e.detail, "quokkas") {
			t.Errorf("%s: the entry holds memory content", v.path)
		}
	}
	if e := got[len(views)]; e.action != "memory.export" || e.actor != tm.email {
		t.Errorf("export entry %+v", e)
	}
	// By its current name, after a rename.
	tm.admin.Get("/console/users/" + itoa(tm.userID))
	if p := tm.admin.Post("/console/users/"+itoa(tm.userID)+"/rename", url.Values{"label": {"Ada Lovelace"}}); p.Status != http.StatusSeeOther {
		t.Fatalf("rename: %d", p.Status)
	}
	targets := auditTargets(tm.admin.Get("/console/audit?action=memory.view"))
	// The views, and the admin's own look at the user page.
	if len(targets["memory.view"]) != len(views)+1 {
		t.Fatalf("the filtered audit page lists %v", targets)
	}
	for _, tg := range targets["memory.view"] {
		if tg != "Ada Lovelace (default)" {
			t.Errorf("a view's entry is on %q, want the user's current name", tg)
		}
	}
}

// TestAuditFiltersAndPages: the audit page narrows by actor, action and
// day, and pages through what it finds, keeping the filters.
func TestAuditFiltersAndPages(t *testing.T) {
	t.Parallel()
	srv := webtest.Start(t, webtest.Options{Config: func(c *web.Config) { c.AuditPageSize = 3 }})
	tm := signUpTeam(t, srv, "Pages")
	tm.admin.Get("/console/keys")
	for _, n := range []string{"k1", "k2", "k3", "k4", "k5"} {
		if _, key := tm.admin.CreateKey(url.Values{"name": {n}, "user_id": {itoa(tm.userID)}}); key == "" {
			t.Fatalf("create %s", n)
		}
	}
	_, memberEmail, _ := addMember(t, srv, tm, "tenant_reader")

	names := func(p *webtest.Page) []string {
		var out []string
		p.TestID("audit-row").Each(func(_ int, r *goquery.Selection) {
			out = append(out, strings.TrimSpace(r.Find(`[data-testid="audit-target"]`).Text()))
		})
		return out
	}
	p := tm.admin.Get("/console/audit?action=key.create")
	if got := names(p); strings.Join(got, ",") != "k5,k4,k3" {
		t.Fatalf("first page of key.create: %v", got)
	}
	older, ok := p.TestID("audit-older").Attr("href")
	if !ok || !strings.Contains(older, "action=key.create") || p.TestID("audit-newer").Length() != 0 {
		t.Fatalf("first page links: older %q, newer %d", older, p.TestID("audit-newer").Length())
	}
	p = tm.admin.Get(older)
	if got := names(p); strings.Join(got, ",") != "k2,k1" || p.TestID("audit-older").Length() != 0 {
		t.Fatalf("second page: %v, older link %d", got, p.TestID("audit-older").Length())
	}
	newer, _ := p.TestID("audit-newer").Attr("href")
	if got := names(tm.admin.Get(newer)); strings.Join(got, ",") != "k5,k4,k3" {
		t.Fatalf("back a page: %v", got)
	}
	if sel := p.TestID("audit-filter-action").Find("option[selected]").AttrOr("value", ""); sel != "key.create" {
		t.Errorf("the action filter shows %q", sel)
	}
	// Actor: the member's joining only.
	p = tm.admin.Get("/console/audit?actor=" + url.QueryEscape(strings.ToUpper(memberEmail[:6])))
	if a := auditTargets(p); len(a) != 1 || len(a["account.join"]) != 1 {
		t.Errorf("actor filter: %v", a)
	}
	// Day: today has everything, tomorrow nothing, a bad date is said so.
	today := time.Now().UTC().Format("2006-01-02")
	tomorrow := time.Now().UTC().AddDate(0, 0, 1).Format("2006-01-02")
	if p := tm.admin.Get("/console/audit?action=key.create&from=" + today + "&to=" + today); len(names(p)) != 3 {
		t.Errorf("today's key.create: %v", names(p))
	}
	if p := tm.admin.Get("/console/audit?from=" + tomorrow); p.TestID("audit-row").Length() != 0 || p.TestID("audit-empty").Length() != 1 {
		t.Errorf("from tomorrow: %d rows", p.TestID("audit-row").Length())
	}
	if p := tm.admin.Get("/console/audit?from=yesterday"); p.Status != http.StatusOK || p.TestID("form-error").Length() != 1 {
		t.Errorf("a bad date: %d", p.Status)
	}
	// Another team's entries are never listed, whatever the filter.
	other := signUpTeam(t, srv, "Others")
	if p := other.admin.Get("/console/audit?action=key.create"); p.TestID("audit-row").Length() != 0 {
		t.Errorf("another team sees %d key.create entries", p.TestID("audit-row").Length())
	}
}

// TestSignedInAccountsShowTheirSignIn: an admin who signed up, and a member
// who joined by invitation, show when they signed in, not "never".
func TestSignedInAccountsShowTheirSignIn(t *testing.T) {
	t.Parallel()
	srv := webtest.Start(t, webtest.Options{})
	tm := signUpTeam(t, srv, "Signed")
	_, memberEmail, _ := addMember(t, srv, tm, "tenant_reader")
	seen := map[string]string{}
	tm.admin.Get("/console/accounts").TestID("account-row").Each(func(_ int, r *goquery.Selection) {
		seen[strings.TrimSpace(r.Find(`[data-testid="account-email"]`).Text())] = strings.TrimSpace(r.Find(`[data-testid="account-last-sign-in"]`).Text())
	})
	for _, email := range []string{tm.email, memberEmail} {
		if s := seen[email]; s == "" || strings.EqualFold(s, "never") {
			t.Errorf("%s, signed in, shows last sign-in %q", email, s)
		}
	}
}
