package web_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/perpetuity/perpetuity/memory/store"
	"github.com/perpetuity/perpetuity/web/webtest"
)

// Issue 18, item 4: a member manages keys and sees usage but reads no
// memory content; a reader reads content (audited) but changes nothing.

// TestMemberSeesNoContent: a member creates and revokes a key and reads
// usage; every memory page refuses them, and no page they may open
// carries a word of what was stored or a link to it.
func TestMemberSeesNoContent(t *testing.T) {
	t.Parallel()
	srv := webtest.Start(t, webtest.Options{})
	tm := signUpTeam(t, srv, "Keyholders")
	itemID, convID := storeTurn(t, srv, webtest.Turn{TenantID: tm.tenantID, UserID: tm.userID, Conversation: "wombat-plans", Role: "user",
		Text: "the secret wombat itinerary", BornClock: 1, Peak: 1})
	member, _, _ := addMember(t, srv, tm, "tenant_member")

	member.Get("/console/keys")
	page, key := member.CreateKey(url.Values{"name": {"ci runner"}, "user_id": {itoa(tm.userID)}})
	if key == "" {
		t.Fatalf("a member could not create a key: %d %s", page.Status, page.TestID("form-error").Text())
	}
	id, err := srv.DB.ResolveKey(context.Background(), key)
	if err != nil || id.TenantID != tm.tenantID {
		t.Fatalf("the member's key does not work: %v", err)
	}
	member.Get("/console/keys")
	if p := member.Post("/console/keys/"+itoa(id.KeyID)+"/revoke", nil); p.Status >= 400 {
		t.Fatalf("a member could not revoke: %d", p.Status)
	}
	if _, err := srv.DB.ResolveKey(context.Background(), key); err == nil {
		t.Fatal("the revoked key still resolves")
	}

	refused := []string{
		"/console/memory", "/console/memory?q=wombat", "/console/memory?user=all",
		"/console/conversations/" + itoa(convID), "/console/items/" + itoa(itemID),
		"/console/users/" + itoa(tm.userID), "/console/users/" + itoa(tm.userID) + "/export", "/console/audit",
	}
	for _, path := range refused {
		if p := member.Get(path); p.Status != http.StatusForbidden {
			t.Errorf("member GET %s: %d, want 403", path, p.Status)
		}
	}
	for _, path := range []string{"/console", "/console/connect", "/console/keys", "/console/users", "/console/usage", "/console/usage?days=30"} {
		p := member.Get(path)
		if p.Status != http.StatusOK {
			t.Errorf("member GET %s: %d", path, p.Status)
			continue
		}
		for _, leak := range []string{"wombat", "itinerary", `href="/console/memory`, `href="/console/users/`, `href="/console/conversations/`, `href="/console/items/`} {
			if strings.Contains(p.Body, leak) {
				t.Errorf("member page %s contains %q", path, leak)
			}
		}
		if p.TestID("nav-usage").Length() != 1 || p.TestID("nav-memory").Length() != 0 {
			t.Errorf("member page %s: nav has usage %d, memory %d", path, p.TestID("nav-usage").Length(), p.TestID("nav-memory").Length())
		}
	}
	var views int
	if err := srv.Owner.QueryRow(context.Background(), `SELECT count(*) FROM audit_log WHERE tenant_id = $1 AND action = 'memory.view'`,
		tm.tenantID).Scan(&views); err != nil || views != 0 {
		t.Errorf("the member's pages wrote %d memory views (%v)", views, err)
	}
}

// TestReaderChangesNothing: a reader reads a user's page (audited, by the
// user's name) but may not create or revoke keys nor see usage; the keys
// page offers them no form.
func TestReaderChangesNothing(t *testing.T) {
	t.Parallel()
	srv := webtest.Start(t, webtest.Options{})
	tm := signUpTeam(t, srv, "Readers")
	storeTurn(t, srv, webtest.Turn{TenantID: tm.tenantID, UserID: tm.userID, Conversation: "otters", Role: "user",
		Text: "otters hold hands", BornClock: 1, Peak: 1})
	reader, readerEmail, _ := addMember(t, srv, tm, "tenant_reader")
	keys := reader.Get("/console/keys")
	if keys.TestID("key-create-form").Length() != 0 || keys.TestID("key-revoke").Length() != 0 {
		t.Error("a reader is offered key changes")
	}
	if p := reader.Post("/console/keys", url.Values{"name": {"x"}, "user_id": {itoa(tm.userID)}}); p.Status != http.StatusForbidden {
		t.Errorf("reader creates a key: %d", p.Status)
	}
	if p := reader.Get("/console/usage"); p.Status != http.StatusForbidden {
		t.Errorf("reader GET usage: %d", p.Status)
	}
	if p := reader.Get("/console/users/" + itoa(tm.userID)); p.Status != http.StatusOK || !strings.Contains(p.Body, "otters") {
		t.Fatalf("reader user page: %d", p.Status)
	}
	var actor, target, detail string
	if err := srv.Owner.QueryRow(context.Background(), `SELECT actor_email, target, detail::text FROM audit_log
		WHERE tenant_id = $1 AND action = 'memory.view' ORDER BY id DESC LIMIT 1`, tm.tenantID).Scan(&actor, &target, &detail); err != nil {
		t.Fatal(err)
	}
	var d struct{ View, User, As string }
	if err := json.Unmarshal([]byte(detail), &d); err != nil {
		t.Fatal(err)
	}
	if actor != readerEmail || target != "memory_user:"+itoa(tm.userID) || d.View != "user" || d.User != "default" || d.As != "tenant_reader" {
		t.Errorf("user page entry: %s on %s: %s", actor, target, detail)
	}
}

// TestAccountsOfferEveryRole: the accounts page names the three roles with
// their rights in words, and an admin moves an account between them.
func TestAccountsOfferEveryRole(t *testing.T) {
	t.Parallel()
	srv := webtest.Start(t, webtest.Options{})
	tm := signUpTeam(t, srv, "Rights")
	_, _, id := addMember(t, srv, tm, "tenant_member")
	p := tm.admin.Get("/console/accounts")
	for _, r := range []struct{ role, words string }{
		{"tenant_member", "Never sees memory content"},
		{"tenant_reader", "audit log"},
		{"tenant_admin", "Everything a member and a reader may"},
	} {
		if got := p.TestID("role-rights-" + r.role).Text(); !strings.Contains(got, r.words) {
			t.Errorf("rights of %s: %q", r.role, got)
		}
		if p.Doc.Find(`[data-testid="invite-role"] option[value="`+r.role+`"]`).Length() != 1 {
			t.Errorf("the invitation offers no %s", r.role)
		}
	}
	for _, role := range []string{"tenant_reader", "tenant_admin", "tenant_member"} {
		if r := tm.admin.Post("/console/accounts/"+itoa(id)+"/role", url.Values{"role": {role}}); r.Status != http.StatusSeeOther {
			t.Fatalf("set %s: %d", role, r.Status)
		}
		var got string
		if err := srv.Owner.QueryRow(context.Background(), `SELECT role FROM console_accounts WHERE id = $1`, id).Scan(&got); err != nil || got != role {
			t.Errorf("after setting %s the account is %q (%v)", role, got, err)
		}
	}
	if r := tm.admin.Post("/console/accounts/"+itoa(id)+"/role", url.Values{"role": {"tenant_any"}}); r.Status < 400 {
		t.Errorf("an unknown role was accepted: %d", r.Status)
	}
}

// TestUsagePage: the figures of recorded requests, per user, per key and
// per day, formatted, with the frame apart from the harness and the
// error share.
func TestUsagePage(t *testing.T) {
	t.Parallel()
	srv := webtest.Start(t, webtest.Options{})
	ctx := context.Background()
	tm := signUpTeam(t, srv, "Counters")
	k, err := srv.DB.ResolveKey(ctx, tm.key)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range []store.RequestRecord{
		{Status: 200, TokensIn: 12000, TokensOut: 300, FrameTokens: 9500},
		{Status: 200, TokensIn: 2000, TokensOut: 100, FrameTokens: 500},
		{Status: 500},
		{Status: 200, TokensIn: 1000, TokensOut: 40, FrameTokens: 0},
	} {
		r.TenantID, r.UserID, r.KeyID, r.RequestID, r.Dialect, r.Provider = tm.tenantID, tm.userID, k.KeyID, "r", "openai", "openai"
		if err := srv.DB.RecordRequest(ctx, r); err != nil {
			t.Fatal(err)
		}
	}
	p := tm.admin.Get("/console/usage")
	if p.Status != http.StatusOK {
		t.Fatalf("usage: %d", p.Status)
	}
	want := map[string]string{"usage-requests": "4", "usage-errors": "25.0%", "usage-in": "15,000", "usage-frame": "10,000",
		"usage-harness": "5,000", "usage-out": "440"}
	for _, row := range []string{"usage-users-" + itoa(tm.userID), "usage-keys-" + itoa(k.KeyID)} {
		r := p.TestID(row)
		if r.Length() != 1 {
			t.Errorf("no row %s", row)
			continue
		}
		for cell, v := range want {
			if got := strings.TrimSpace(r.Find(`[data-testid="` + cell + `"]`).Text()); got != v {
				t.Errorf("%s %s = %q, want %q", row, cell, got, v)
			}
		}
	}
	days := p.TestID("usage-days").Find("tbody tr")
	if days.Length() != 7 {
		t.Errorf("%d days listed, want the 7 of the range", days.Length())
	}
	if got := strings.TrimSpace(days.First().Find(`[data-testid="usage-frame"]`).Text()); got != "10,000" {
		t.Errorf("today's frame tokens %q", got)
	}
	if got := strings.TrimSpace(days.Last().Find(`[data-testid="usage-requests"]`).Text()); got != "0" {
		t.Errorf("a quiet day counts %q requests", got)
	}
	if n := p.TestID("usage-bar").Length(); n != 7 {
		t.Errorf("chart has %d bars, want 7", n)
	}
	if n := tm.admin.Get("/console/usage?days=30").TestID("usage-days").Find("tbody tr").Length(); n != 30 {
		t.Errorf("30-day range lists %d days", n)
	}
}

// TestReaderListsRequestsOneUserAtATime: every user's questions at once are
// an admin's view, as in the memory browser; a reader's list is one user's,
// and each owner's audit entry names that owner's own requests only.
func TestReaderListsRequestsOneUserAtATime(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	srv := webtest.Start(t, webtest.Options{})
	tm := signUpTeam(t, srv, "Inspected")
	bob, err := srv.DB.EnsureUser(ctx, tm.tenantID, "bob")
	if err != nil {
		t.Fatal(err)
	}
	record := func(rid string, user int64, question string) {
		t.Helper()
		in := &store.Inspection{Question: question, Turns: []store.InspectTurn{{Role: "user", Text: question}}}
		if err := srv.DB.RecordRequest(ctx, store.RequestRecord{TenantID: tm.tenantID, RequestID: rid, UserID: user,
			Dialect: "openai-chat", Provider: "openai", Status: 200, Inspection: in, InspectRetention: time.Hour}); err != nil {
			t.Fatal(err)
		}
	}
	record("r-default", tm.userID, "where is the default ferry")
	record("r-bob", bob, "where is bob's kayak")
	reader, _, _ := addMember(t, srv, tm, "tenant_reader")
	if p := reader.Get("/console/requests?user=all"); p.Status != http.StatusForbidden {
		t.Errorf("a reader listing every user's requests: %d, want 403", p.Status)
	}
	if p := reader.Get("/console/requests"); p.Status != http.StatusOK || strings.Contains(p.Body, "kayak") == strings.Contains(p.Body, "ferry") {
		t.Errorf("a reader's default list (%d) shows one user's questions: ferry %v, kayak %v", p.Status,
			strings.Contains(p.Body, "ferry"), strings.Contains(p.Body, "kayak"))
	}
	if p := tm.admin.Get("/console/requests"); !strings.Contains(p.Body, "kayak") || !strings.Contains(p.Body, "ferry") {
		t.Error("the admin's list does not show every user's questions")
	}
	rows, err := srv.Owner.Query(ctx, `SELECT target, detail->'requests' FROM audit_log
		WHERE tenant_id = $1 AND action = 'memory.view' AND detail->>'view' = 'requests' AND detail->>'as' = 'tenant_admin'`, tm.tenantID)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	seen := map[string]int{}
	for rows.Next() {
		var target string
		var reqs []int64
		if err := rows.Scan(&target, &reqs); err != nil {
			t.Fatal(err)
		}
		seen[target] = len(reqs)
	}
	if len(seen) != 2 || seen["memory_user:"+itoa(bob)] != 1 || seen["memory_user:"+itoa(tm.userID)] != 1 {
		t.Errorf("the admin's list audited %v, want each owner with their one request", seen)
	}
}
