package e2e

// Issue 18, "A console a team admin trusts", in headless Chromium against
// the real binary: secrets shown once and reloads that repeat nothing
// (finding 1), wrong passwords that cannot lock an admin out, an audited
// unlock and password reset links (finding 2), log lines that say why a
// proxy call was refused and when the server stops (finding 3), and an
// audit log that says who saw whose memory, by name and from where, with
// filters and pages (finding 4). Helpers: console_trust_helpers_test.go.

import (
	"fmt"
	"net/http"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/perpetuity/perpetuity/e2e/fakeprovider"
)

// TestTrustKeysAreShownOnce is finding 1: the welcome page and the new-key
// page come after a redirect and show their key once; reloading either
// shows it no more and makes nothing. A key needs a name and a memory user
// the admin chose.
func TestTrustKeysAreShownOnce(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	root := headlessBrowser(t)
	a := newTab(t, root)
	a.signUp(s.URL, "Trust Team", "trust@example.com")
	key := a.text(byTestID("new-key"))
	if loc := a.location(); !strings.HasPrefix(loc, s.URL+"/console/welcome/") || !strings.HasPrefix(key, "ppk_") || strings.Contains(loc, key) {
		t.Fatalf("after sign-up at %s with key %q", loc, key)
	}
	a.step("reload the welcome page", chromedp.Reload(), chromedp.WaitVisible(byTestID("key-shown-once")))
	if b := a.body(); strings.Contains(b, key) || strings.Contains(b, "expired") {
		t.Fatalf("the reloaded welcome page shows the key or an expired form:\n%s", b)
	}
	tenant := s.scalar(`SELECT id FROM tenants WHERE name = 'Trust Team'`)
	keys := func() int64 { return s.scalar(`SELECT count(*) FROM api_keys WHERE tenant_id = $1`, tenant) }

	a.step("keys page", chromedp.Navigate(s.URL+"/console/keys"), chromedp.WaitVisible(byTestID("key-create-form")))
	if v := run(a, "chosen user", chromedp.Evaluate[string](`document.querySelector('[data-testid="key-user-select"]').value`)); v != "" {
		t.Fatalf("the form chose memory user %q for the admin", v)
	}
	// Sent as it comes, the form is held back by the browser: nothing made.
	a.step("create with nothing filled in", chromedp.Click(byTestID("key-create")))
	time.Sleep(300 * time.Millisecond)
	if loc := a.location(); loc != s.URL+"/console/keys" || keys() != 1 {
		t.Fatalf("an empty form went to %s and left %d keys", loc, keys())
	}
	// Past the browser's checks, the server refuses a blank name itself.
	user := run(a, "a user", chromedp.Evaluate[string](`document.querySelector('[data-testid="key-user-select"] option:not([value=""]):not([value="new"])').value`))
	a.step("create with a blank name",
		js(`(document.querySelectorAll('[required]').forEach(e => e.removeAttribute('required')), true)`),
		chromedp.SetValue(byTestID("key-user-select"), user),
		chromedp.Click(byTestID("key-create")),
		chromedp.WaitVisible(byTestID("form-error")),
	)
	if msg := a.text(byTestID("form-error")); !strings.Contains(msg, "Name the key") || keys() != 1 {
		t.Fatalf("blank name: %q, %d keys", msg, keys())
	}
	a.step("create a named key",
		chromedp.SendKeys(byTestID("key-name-input"), "laptop agent"),
		chromedp.SetValue(byTestID("key-user-select"), user),
		chromedp.Click(byTestID("key-create")),
		chromedp.WaitVisible(byTestID("new-key")),
	)
	second := a.text(byTestID("new-key"))
	if loc := a.location(); !strings.HasPrefix(loc, s.URL+"/console/keys/new/") || strings.Contains(loc, second) || keys() != 2 {
		t.Fatalf("new key page %s, %d keys", loc, keys())
	}
	a.shot("trust-new-key.png", chromedp.FullScreenshot(100))
	for i := range 2 {
		a.step("reload the new-key page", chromedp.Reload(), chromedp.WaitVisible(byTestID("key-shown-once")))
		if b := a.body(); strings.Contains(b, second) || !strings.Contains(b, "laptop agent") {
			t.Fatalf("reload %d: key shown again %v, key named %v", i, strings.Contains(b, second), strings.Contains(b, "laptop agent"))
		}
	}
	if n := keys(); n != 2 {
		t.Fatalf("reloading the new-key page made keys: %d, want 2", n)
	}
	a.shot("trust-key-shown-once.png", chromedp.FullScreenshot(100))
	a.noConsoleErrors(http.StatusBadRequest)
}

// TestTrustLockoutUnlockAndReset is finding 2: wrong passwords for the
// admin from many addresses do not keep the admin out from another; an
// admin clears a member's failed sign-ins (audited, with the address);
// a platform admin's reset link, shown once, sets a new password and ends
// the member's other sessions; the operator's link resets a platform admin.
func TestTrustLockoutUnlockAndReset(t *testing.T) {
	t.Parallel()
	s := startServer(t, "PERPETUITY_TRUSTED_PROXIES=127.0.0.1")
	root := headlessBrowser(t)
	a := trustTab(t, root, "192.0.2.1")
	a.signUp(s.URL, "Lock Team", "admin@lock.test")

	// The storm: six addresses, five wrong passwords each, more than any
	// account-wide limit would let through.
	storm := map[int]int{}
	for i := range 30 {
		storm[wrongSignIn(t, s.URL, fmt.Sprintf("198.51.100.%d", 1+i/5), "admin@lock.test", fmt.Sprintf("guess %d", i))]++
	}
	if storm[http.StatusUnauthorized]+storm[http.StatusTooManyRequests] != 30 {
		t.Fatalf("the storm was answered %v", storm)
	}
	f := trustTab(t, root, "203.0.113.9")
	f.signIn(s.URL, "admin@lock.test", trustPassword)
	if loc := f.location(); loc != s.URL+"/console" {
		t.Fatalf("the admin, in a fresh browser at another address after the storm, is at %s: %s", loc, f.body())
	}

	// A member, and a throttle an admin clears.
	a.step("invite", chromedp.Navigate(s.URL+"/console/accounts"), chromedp.WaitVisible(byTestID("invite-create-form")),
		chromedp.SendKeys(byTestID("invite-email-input"), "member@lock.test"),
		chromedp.Click(byTestID("invite-create")), chromedp.WaitVisible(byTestID("invite-url")))
	invite := pathOf(t, a.text(byTestID("invite-url")))
	m := trustTab(t, root, "192.0.2.50")
	m.stepWithin("join", hashing, chromedp.Navigate(s.URL+invite), chromedp.WaitVisible(byTestID("invite-form")),
		chromedp.SendKeys(byTestID("invite-password"), trustPassword),
		chromedp.Click(byTestID("invite-submit")), chromedp.WaitVisible(byTestID("account-email")))
	m.step("sign out", chromedp.Click(byTestID("signout")), chromedp.WaitVisible(byTestID("signin-form")))
	for i := range 5 {
		m.signIn(s.URL, "member@lock.test", fmt.Sprintf("typo %d", i))
	}
	m.signIn(s.URL, "member@lock.test", trustPassword)
	if msg := m.text(byTestID("form-error")); !strings.Contains(msg, "try again in") {
		t.Fatalf("the member after five typos: %q", msg)
	}
	memberRow := `//tr[td[@data-testid="account-email"][normalize-space()="member@lock.test"]]`
	a.step("accounts", chromedp.Navigate(s.URL+"/console/accounts"), chromedp.WaitVisible(chromedp.Search(memberRow+`//*[@data-testid="account-throttled"]`)))
	a.shot("trust-throttled.png", chromedp.FullScreenshot(100))
	a.step("clear", chromedp.Click(chromedp.Search(memberRow+`//button[@data-testid="account-unlock"]`)), chromedp.WaitVisible(byTestID("notice")))
	m.signIn(s.URL, "member@lock.test", trustPassword)
	if loc := m.location(); loc != s.URL+"/console" {
		t.Fatalf("the member after the unlock is at %s: %s", loc, m.body())
	}
	a.step("audit of the unlock", chromedp.Navigate(s.URL+"/console/audit?action=account.unlock"), chromedp.WaitVisible(byTestID("audit-row")))
	if on, from := a.text(byTestID("audit-target")), a.text(byTestID("audit-address")); on != "member@lock.test" || from != "192.0.2.1" {
		t.Fatalf("the unlock's entry is on %q from %q", on, from)
	}

	// A platform admin's reset link for the member.
	createAdmin(t, s, "root@lock.test")
	r := trustTab(t, root, "192.0.2.9")
	r.signIn(s.URL, "root@lock.test", trustPassword)
	r.step("enter the team",
		chromedp.WaitVisible(byTestID("tenants-table")),
		chromedp.Click(chromedp.Search(`//tr[td[normalize-space()="Lock Team"]]//button[@data-testid="tenant-enter"]`)),
		chromedp.WaitVisible(byTestID("notice")),
		chromedp.Navigate(s.URL+"/console/accounts"),
		chromedp.Click(chromedp.Search(memberRow+`//button[@data-testid="account-reset-link"]`)),
		chromedp.WaitVisible(byTestID("reset-url")),
	)
	link := r.text(byTestID("reset-url"))
	if !strings.HasPrefix(pathOf(t, link), "/reset/") || strings.Contains(r.location(), "/reset/") {
		t.Fatalf("reset link %q on %s", link, r.location())
	}
	r.step("reload", chromedp.Reload(), chromedp.WaitVisible(byTestID("reset-shown-once")))
	if strings.Contains(r.body(), link) {
		t.Fatal("the reset link is shown again")
	}
	n := trustTab(t, root, "192.0.2.77")
	n.stepWithin("reset", hashing, chromedp.Navigate(s.URL+pathOf(t, link)), chromedp.WaitVisible(byTestID("reset-form")),
		chromedp.SendKeys(byTestID("reset-password"), "short"),
		js(`(document.querySelector('[data-testid="reset-password"]').removeAttribute('minlength'), true)`),
		chromedp.Click(byTestID("reset-submit")), chromedp.WaitVisible(byTestID("form-error")))
	if msg := n.text(byTestID("form-error")); !strings.Contains(msg, "at least 12") {
		t.Fatalf("a short new password: %q", msg)
	}
	n.stepWithin("reset again", hashing, chromedp.SendKeys(byTestID("reset-password"), "the member's new long password"),
		chromedp.Click(byTestID("reset-submit")), chromedp.WaitVisible(byTestID("notice")))
	if loc := n.location(); loc != s.URL+"/console" {
		t.Fatalf("after the reset at %s", loc)
	}
	m.step("the member's old session", chromedp.Navigate(s.URL+"/console"), chromedp.WaitVisible(byTestID("signin-form")))
	if st := wrongSignIn(t, s.URL, "192.0.2.78", "member@lock.test", trustPassword); st != http.StatusUnauthorized {
		t.Errorf("the old password after the reset: %d", st)
	}
	n.step("the used link", chromedp.Navigate(s.URL+pathOf(t, link)), chromedp.WaitVisible(byTestID("error")))

	// The operator's link, for the platform admin.
	out, err := runCLI(append(os.Environ(), "DATABASE_URL="+s.DBURL), "admin", "reset-link", "root@lock.test")
	opLink := strings.TrimSpace(out)
	if err != nil || !strings.Contains(opLink, "/reset/") {
		t.Fatalf("admin reset-link: %v %q", err, out)
	}
	o := trustTab(t, root, "192.0.2.90")
	o.stepWithin("reset root", hashing, chromedp.Navigate(s.URL+pathOf(t, opLink)), chromedp.WaitVisible(byTestID("reset-form")),
		chromedp.SendKeys(byTestID("reset-password"), "root's brand new password"),
		chromedp.Click(byTestID("reset-submit")), chromedp.WaitVisible(byTestID("tenants-table")))
	r.step("root's old session", chromedp.Navigate(s.URL+"/platform/tenants"), chromedp.WaitVisible(byTestID("signin-form")))

	a.step("audit", chromedp.Navigate(s.URL+"/console/audit"), chromedp.WaitVisible(byTestID("audit-table")))
	for _, act := range []string{"account.reset_link", "account.password_reset", "account.unlock", "signin.failed"} {
		if a.count(`[data-testid="audit-action"]`) == 0 || !strings.Contains(a.text(byTestID("audit-table")), act) {
			t.Errorf("the audit log lacks %s", act)
		}
	}
	a.shot("trust-audit.png", chromedp.FullScreenshot(100))
	for _, tb := range []*tab{a, f, m, r, n, o} {
		tb.noConsoleErrors(http.StatusUnauthorized, http.StatusTooManyRequests, http.StatusBadRequest, http.StatusNotFound)
	}
}

// TestTrustLogsSayWhyAndWhenItStops is finding 3: a proxy call with a key
// the admin revoked in the console, and one naming a model no provider
// serves, are logged with their real status, why, the tenant when known
// and the key's public prefix, never the key; a SIGTERM is logged when the
// stop begins and when it ends.
func TestTrustLogsSayWhyAndWhenItStops(t *testing.T) {
	t.Parallel()
	s := startStoppable(t)
	root := headlessBrowser(t)
	a := newTab(t, root)
	a.signUp(s.URL, "Log Team", "log@example.com")
	live := a.text(byTestID("new-key"))
	a.step("make a key", chromedp.Navigate(s.URL+"/console/keys"), chromedp.WaitVisible(byTestID("key-create-form")),
		chromedp.SendKeys(byTestID("key-name-input"), "doomed"),
		chromedp.SetValue(byTestID("key-user-select"), "new"),
		chromedp.SendKeys(byTestID("key-new-user"), "bob"),
		chromedp.Click(byTestID("key-create")), chromedp.WaitVisible(byTestID("new-key")))
	doomed := a.text(byTestID("new-key"))
	a.step("revoke it", chromedp.Navigate(s.URL+"/console/keys"), chromedp.WaitVisible(byTestID("keys-table")),
		js(`(window.confirm = () => true, true)`),
		chromedp.Click(chromedp.Search(`//tr[td[@data-testid="key-name"][.="doomed"]]//button[@data-testid="key-revoke"]`)),
		chromedp.WaitVisible(chromedp.Search(`//tr[td[@data-testid="key-name"][.="doomed"]]/td[@data-testid="key-state"][contains(., "revoked")]`)))
	a.noConsoleErrors()

	call := func(key, model string) int {
		t.Helper()
		body := `{"model":"` + model + `","messages":[{"role":"user","content":"hello"}]}`
		req, _ := http.NewRequest(http.MethodPost, s.URL+"/k/"+key+"/v1/chat/completions", strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", "Bearer not-a-provider-key")
		resp, err := httpClient().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if st := call(doomed, "gpt-4o-mini"); st != http.StatusUnauthorized {
		t.Fatalf("the revoked key: %d", st)
	}
	if st := call(live, "mystery-model"); st != http.StatusBadRequest {
		t.Fatalf("an unknown model: %d", st)
	}
	var tenant float64
	want := []struct {
		status float64
		prefix string
		reason string
		tenant bool
	}{
		{401, doomed[:10], "invalid or revoked Perpetuity key", false},
		{400, live[:10], "cannot tell which provider serves model", true},
	}
	var refused []map[string]any
	for deadline := time.Now().Add(5 * time.Second); len(refused) < len(want) && time.Now().Before(deadline); {
		time.Sleep(20 * time.Millisecond) // the log is read from the server's stderr as it comes
		refused = refused[:0]
		for _, l := range s.logLines("request") {
			if l["route"] == "/k/:key/v1/chat/completions" {
				refused = append(refused, l)
			}
		}
	}
	if len(refused) != len(want) {
		t.Fatalf("%d proxy request lines, want %d:\n%s", len(refused), len(want), s.log.String())
	}
	for i, w := range want {
		l := refused[i]
		reason, _ := l["reason"].(string)
		if l["status"] != w.status || l["key_prefix"] != w.prefix || !strings.Contains(reason, w.reason) || l["failed"] != true || l["error_kind"] == nil {
			t.Errorf("line %d: %v", i, l)
		}
		if got, ok := l["tenant"].(float64); ok != w.tenant {
			t.Errorf("line %d: tenant %v, want one: %v", i, l["tenant"], w.tenant)
		} else if ok {
			tenant = got
		}
	}
	if id := float64(s.db.scalar(`SELECT id FROM tenants WHERE name = 'Log Team'`)); tenant != id {
		t.Errorf("logged tenant %v, the key's is %v", tenant, id)
	}
	for _, k := range []string{live, doomed} {
		if strings.Contains(s.log.String(), k) || strings.Contains(s.log.String(), k[10:]) {
			t.Fatalf("a key reached the log")
		}
	}

	if err := s.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case <-s.ended:
	case <-time.After(30 * time.Second):
		t.Fatal("the server did not stop on SIGTERM")
	}
	began, ended := s.logLines("perpetuity shutting down"), s.logLines("perpetuity shut down")
	if len(began) != 1 || len(ended) != 1 || strings.Index(s.log.String(), "perpetuity shutting down") > strings.Index(s.log.String(), "perpetuity shut down") {
		t.Fatalf("shutdown lines: began %v, ended %v", began, ended)
	}
}

// auditTarget is the audit row on this target, for waiting on a page.
func auditTarget(name string) chromedp.Search {
	return chromedp.Search(`//td[@data-testid="audit-target"][normalize-space()="` + name + `"]`)
}

// TestTrustAuditTellsWhoSawWhat is finding 4: a reader's views
// of memory are in the audit log with whose memory (by its current name)
// and from where; a purge says whom and from where; the log filters by
// action and day and pages; an admin who is signed in shows when.
func TestTrustAuditTellsWhoSawWhat(t *testing.T) {
	t.Parallel()
	s := startServer(t, "PERPETUITY_TRUSTED_PROXIES=127.0.0.1")
	root := headlessBrowser(t)
	a := trustTab(t, root, "192.0.2.1")
	a.signUp(s.URL, "Audit Team", "admin@audit.test")
	key := a.text(byTestID("new-key"))
	tenant := s.scalar(`SELECT id FROM tenants WHERE name = 'Audit Team'`)
	s.Fake.Script(fakeprovider.Reply{Text: "The otter den is behind the third willow."})
	req, _ := http.NewRequest(http.MethodPost, s.URL+"/k/"+key+"/v1/chat/completions",
		strings.NewReader(`{"model":"gpt-4o-mini","messages":[{"role":"user","content":"Where is the otter den?"}]}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer sk-test-openai")
	resp, err := httpClient().Do(req)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("proxied request: %v %v", err, resp)
	}
	resp.Body.Close()
	for deadline := time.Now().Add(10 * time.Second); s.scalar(`SELECT count(*) FROM items WHERE tenant_id = $1`, tenant) < 2; {
		if time.Now().After(deadline) {
			t.Fatal("the turn was not stored")
		}
		time.Sleep(50 * time.Millisecond)
	}

	a.step("invite", chromedp.Navigate(s.URL+"/console/accounts"), chromedp.WaitVisible(byTestID("invite-create-form")),
		chromedp.SendKeys(byTestID("invite-email-input"), "reader@audit.test"),
		chromedp.SetValue(byTestID("invite-role"), "tenant_reader"),
		chromedp.Click(byTestID("invite-create")), chromedp.WaitVisible(byTestID("invite-url")))
	m := trustTab(t, root, "192.0.2.60")
	m.stepWithin("join", hashing, chromedp.Navigate(s.URL+pathOf(t, a.text(byTestID("invite-url")))), chromedp.WaitVisible(byTestID("invite-form")),
		chromedp.SendKeys(byTestID("invite-password"), trustPassword),
		chromedp.Click(byTestID("invite-submit")), chromedp.WaitVisible(byTestID("account-email")))
	m.step("memory", chromedp.Navigate(s.URL+"/console/memory"), chromedp.WaitVisible(byTestID("item")))
	item, conv := m.attr(byTestID("item-link"), "href"), m.attr(byTestID("item-conversation"), "href")
	m.step("item", chromedp.Navigate(s.URL+item), chromedp.WaitVisible(byTestID("item-text")))
	m.step("conversation", chromedp.Navigate(s.URL+conv), chromedp.WaitVisible(byTestID("item-text")))

	user := s.scalar(`SELECT id FROM memory_users WHERE tenant_id = $1`, tenant)
	a.step("rename the user", chromedp.Navigate(s.URL+"/console/users/"+fmt.Sprint(user)), chromedp.WaitVisible(byTestID("rename-form")),
		chromedp.SetValue(byTestID("rename-label"), "Otter Keeper"), chromedp.Click(byTestID("rename-submit")),
		chromedp.WaitVisible(chromedp.Search(`//td[@data-testid="binding-value"][normalize-space()="Otter Keeper"]`)))
	a.step("views in the audit log", chromedp.Navigate(s.URL+"/console/audit"), chromedp.WaitVisible(byTestID("audit-filter")),
		chromedp.SetValue(byTestID("audit-filter-action"), "memory.view"), chromedp.Click(byTestID("audit-filter-apply")),
		// The filtered page, rendered with the filter chosen (the attribute,
		// which the choice in the page before does not set).
		chromedp.WaitReady(chromedp.Search(`//select[@data-testid="audit-filter-action"]/option[@selected][@value="memory.view"]`)))
	type row struct{ Actor, Target, From, Detail string }
	rows := func() []row {
		return run(a, "audit rows", chromedp.Evaluate[[]row](`[...document.querySelectorAll('[data-testid="audit-row"]')].map(r => ({
			Actor: r.querySelector('[data-testid="audit-actor"]').textContent.trim(),
			Target: r.querySelector('[data-testid="audit-target"]').textContent.trim(),
			From: r.querySelector('[data-testid="audit-address"]').textContent.trim(),
			Detail: r.querySelector('.detail').textContent.trim()}))`))
	}
	var views []row
	admins := 0
	for _, v := range rows() {
		if v.Actor == "admin@audit.test" {
			admins++ // the admin's own looks at the user page: to rename, and the page the rename returns to
			continue
		}
		views = append(views, v)
	}
	if len(views) != 3 || admins != 2 {
		t.Fatalf("%d reader memory.view entries, want the memory browser, the item and the conversation, and %d of the admin's, want 2: %v",
			len(views), admins, views)
	}
	for _, v := range views {
		if v.Actor != "reader@audit.test" || v.Target != "Otter Keeper (default)" || v.From != "192.0.2.60" ||
			!strings.Contains(v.Detail, "tenant_reader") || strings.Contains(v.Detail, "otter den") {
			t.Errorf("view entry %+v", v)
		}
	}
	a.shot("trust-audit-views.png", chromedp.FullScreenshot(100))

	a.step("purge", chromedp.Navigate(s.URL+"/console/users/"+fmt.Sprint(user)), chromedp.WaitVisible(byTestID("purge-form")),
		chromedp.SendKeys(byTestID("purge-confirm"), "default"), chromedp.Click(byTestID("purge-submit")),
		chromedp.WaitVisible(byTestID("notice")),
		chromedp.Navigate(s.URL+"/console/audit?action=memory.purge"), chromedp.WaitVisible(byTestID("audit-row")))
	if p := rows(); len(p) != 1 || p[0].Target != "Otter Keeper (default)" || p[0].From != "192.0.2.1" {
		t.Fatalf("purge entry %v", p)
	}

	// Paging, over entries enough for three pages, and a day filter.
	if n := s.scalar(`WITH x AS (INSERT INTO audit_log (tenant_id, actor_email, action, target)
		SELECT $1, 'filler@audit.test', 'test.filler', 'n' || g FROM generate_series(1, 210) g RETURNING 1) SELECT count(*) FROM x`, tenant); n != 210 {
		t.Fatal("filler entries")
	}
	a.step("first page", chromedp.Navigate(s.URL+"/console/audit?action=test.filler"), chromedp.WaitVisible(byTestID("audit-older")))
	if got := rows(); len(got) != 100 || got[0].Target != "n210" {
		t.Fatalf("first page: %d rows from %v", len(got), got[0])
	}
	a.step("older", chromedp.Click(byTestID("audit-older")), chromedp.WaitVisible(auditTarget("n110")))
	if got := rows(); len(got) != 100 || got[0].Target != "n110" || a.count(`[data-testid="audit-older"]`) != 1 {
		t.Fatalf("second page: %d rows from %v", len(got), got[0])
	}
	a.step("oldest", chromedp.Click(byTestID("audit-older")), chromedp.WaitVisible(auditTarget("n1")))
	if got := rows(); len(got) != 10 || got[9].Target != "n1" || a.count(`[data-testid="audit-older"]`) != 0 {
		t.Fatalf("last page: %d rows", len(got))
	}
	tomorrow := time.Now().UTC().AddDate(0, 0, 1).Format("2006-01-02")
	a.step("from tomorrow", chromedp.SetValue(byTestID("audit-filter-from"), tomorrow), chromedp.Click(byTestID("audit-filter-apply")),
		chromedp.WaitVisible(byTestID("audit-empty")))

	a.step("accounts", chromedp.Navigate(s.URL+"/console/accounts"), chromedp.WaitVisible(byTestID("accounts-table")))
	last := strings.TrimSpace(run(a, "last sign-in", chromedp.Text(chromedp.Search(
		`//tr[td[@data-testid="account-email"][normalize-space()="admin@audit.test"]]/td[@data-testid="account-last-sign-in"]`))))
	if last == "" || strings.EqualFold(last, "never") {
		t.Errorf("the signed-in admin's last sign-in reads %q", last)
	}
	a.noConsoleErrors()
	m.noConsoleErrors()
}
