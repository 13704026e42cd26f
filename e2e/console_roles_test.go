package e2e

// Issue 18, items 3 and 4, in headless Chromium against the real binary: a
// member creates a key and reads usage but is refused every memory page
// and sees no content anywhere it may go; a reader's look at a
// conversation is in the audit log by the user's name; the usage page's
// figures per user, key and day are those of the requests sent through
// the proxy here.

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/perpetuity/perpetuity/e2e/fakeprovider"
)

// sent is what the client saw of one proxied request.
type sent struct {
	status         int
	in, out, frame int64
}

// proxied sends one chat turn with key and returns what came back: the
// provider's usage and the frame's size header.
func proxied(t *testing.T, s *server, key, question string, reply fakeprovider.Reply) sent {
	t.Helper()
	s.Fake.Script(reply)
	body := fmt.Sprintf(`{"model":"gpt-4o-mini","messages":[{"role":"user","content":%q}]}`, question)
	req, _ := http.NewRequest(http.MethodPost, s.URL+"/k/"+key+"/v1/chat/completions", strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer sk-test-openai")
	resp, err := httpClient().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	var r struct {
		Usage struct {
			Prompt     int64 `json:"prompt_tokens"`
			Completion int64 `json:"completion_tokens"`
		} `json:"usage"`
	}
	_ = json.Unmarshal(b, &r)
	frame, _ := strconv.ParseInt(resp.Header.Get("X-Perpetuity-Frame-Tokens"), 10, 64)
	return sent{status: resp.StatusCode, in: r.Usage.Prompt, out: r.Usage.Completion, frame: frame}
}

// figures adds requests up as the usage page does.
type figures struct{ requests, errors, in, frame, harness, out int64 }

func (f *figures) add(r sent) {
	f.requests++
	if r.status < 200 || r.status > 299 {
		f.errors++
	}
	f.in += r.in
	f.out += r.out
	f.frame += r.frame
	f.harness += max(r.in-r.frame, 0)
}

// cells is how the usage page writes the figures.
func (f figures) cells() map[string]string {
	rate := "–"
	if f.requests > 0 {
		rate = fmt.Sprintf("%.1f%%", 100*float64(f.errors)/float64(f.requests))
	}
	return map[string]string{"usage-requests": thousands(f.requests), "usage-errors": rate, "usage-in": thousands(f.in),
		"usage-frame": thousands(f.frame), "usage-harness": thousands(f.harness), "usage-out": thousands(f.out)}
}

func thousands(n int64) string {
	s := strconv.FormatInt(n, 10)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}

// usageCells reads one usage row's figures off the page.
func (tb *tab) usageCells(row string) map[string]string {
	tb.t.Helper()
	return run(tb, "usage row "+row, chromedp.Evaluate[map[string]string](`(() => {
		const r = document.querySelector('[data-testid="`+row+`"]'); const out = {};
		if (!r) return out;
		r.querySelectorAll('td[data-testid^="usage-"]').forEach(c => { out[c.dataset.testid] = c.textContent.trim(); });
		return out; })()`))
}

func (tb *tab) join(base, inviteURL string) {
	tb.t.Helper()
	tb.stepWithin("join", hashing, chromedp.Navigate(base+pathOf(tb.t, inviteURL)), chromedp.WaitVisible(byTestID("invite-form")),
		chromedp.SendKeys(byTestID("invite-password"), trustPassword),
		chromedp.Click(byTestID("invite-submit")), chromedp.WaitVisible(byTestID("account-email")))
}

func (tb *tab) invite(base, email, role string) string {
	tb.t.Helper()
	tb.step("invite "+role, chromedp.Navigate(base+"/console/accounts"), chromedp.WaitVisible(byTestID("invite-create-form")),
		chromedp.SendKeys(byTestID("invite-email-input"), email),
		chromedp.SetValue(byTestID("invite-role"), role),
		chromedp.Click(byTestID("invite-create")), chromedp.WaitVisible(byTestID("invite-url")))
	return tb.text(byTestID("invite-url"))
}

// TestRolesMemberKeysAndUsage: the member's day. They create a key in the
// browser; requests go through the proxy on it and on the admin's; the
// usage page shows exactly those requests per user, per key and per day;
// every memory page refuses them and no page they reach shows content.
func TestRolesMemberKeysAndUsage(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	root := headlessBrowser(t)
	a := newTab(t, root)
	a.signUp(s.URL, "Roles Team", "admin@roles.test")
	adminKey := a.text(byTestID("new-key"))
	tenant := s.scalar(`SELECT id FROM tenants WHERE name = 'Roles Team'`)
	link := a.invite(s.URL, "member@roles.test", "tenant_member")
	m := trustTab(t, root, "127.0.0.1")
	m.join(s.URL, link)

	m.step("create a key",
		chromedp.Navigate(s.URL+"/console/keys"), chromedp.WaitVisible(byTestID("key-create-form")),
		chromedp.SendKeys(byTestID("key-name-input"), "bob agent"),
		chromedp.SetValue(byTestID("key-user-select"), "new"),
		chromedp.SendKeys(byTestID("key-new-user"), "bob"),
		chromedp.Click(byTestID("key-create")), chromedp.WaitVisible(byTestID("new-key")))
	bobKey := m.text(byTestID("new-key"))
	if !strings.HasPrefix(bobKey, "ppk_") {
		t.Fatalf("the member's new key reads %q", bobKey)
	}

	var ada, bob, total figures
	for _, q := range []string{"Where does the platypus sleep at noon?", "And what does the platypus eat for breakfast?"} {
		r := proxied(t, s, adminKey, q, fakeprovider.Reply{Text: "The platypus naps in a burrow by the creek bank."})
		if r.status != http.StatusOK {
			t.Fatalf("admin's request: %d", r.status)
		}
		ada.add(r)
	}
	for _, r := range []sent{
		proxied(t, s, bobKey, "Which bridge has the wombat crossing?", fakeprovider.Reply{Text: "The wombat crosses at the stone bridge."}),
		proxied(t, s, bobKey, "Is the wombat crossing open today?", fakeprovider.Reply{Status: http.StatusInternalServerError}),
	} {
		bob.add(r)
	}
	if bob.errors != 1 || bob.requests != 2 {
		t.Fatalf("bob's requests: %+v", bob)
	}
	for _, f := range []figures{ada, bob} {
		total.requests, total.errors, total.in, total.out = total.requests+f.requests, total.errors+f.errors, total.in+f.in, total.out+f.out
		total.frame, total.harness = total.frame+f.frame, total.harness+f.harness
	}
	for deadline := time.Now().Add(10 * time.Second); s.scalar(`SELECT count(*) FROM requests WHERE tenant_id = $1`, tenant) < 4; {
		if time.Now().After(deadline) {
			t.Fatal("the requests were not recorded")
		}
		time.Sleep(50 * time.Millisecond)
	}
	if ada.in == 0 || ada.frame == 0 {
		t.Fatalf("the admin's requests carried no tokens or no frame (%+v): the figures would prove nothing", ada)
	}

	m.step("usage", chromedp.Navigate(s.URL+"/console/usage"), chromedp.WaitVisible(byTestID("usage-chart")))
	adaID := s.scalar(`SELECT id FROM memory_users WHERE tenant_id = $1 AND name = 'default'`, tenant)
	bobID := s.scalar(`SELECT id FROM memory_users WHERE tenant_id = $1 AND name = 'bob'`, tenant)
	adminKeyID := s.scalar(`SELECT id FROM api_keys WHERE tenant_id = $1 AND user_id = $2`, tenant, adaID)
	bobKeyID := s.scalar(`SELECT id FROM api_keys WHERE tenant_id = $1 AND user_id = $2`, tenant, bobID)
	today := time.Now().UTC().Format(time.DateOnly)
	for row, want := range map[string]figures{
		"usage-users-" + fmt.Sprint(adaID): ada, "usage-users-" + fmt.Sprint(bobID): bob,
		"usage-keys-" + fmt.Sprint(adminKeyID): ada, "usage-keys-" + fmt.Sprint(bobKeyID): bob,
		"usage-days-" + today: total,
	} {
		got := m.usageCells(row)
		for cell, v := range want.cells() {
			if got[cell] != v {
				t.Errorf("%s %s = %q, want %q (from the proxied requests)", row, cell, got[cell], v)
			}
		}
	}
	if n := m.count(`[data-testid="usage-bar"]`); n != 7 {
		t.Errorf("the chart has %d days, want 7", n)
	}
	m.shot("usage.png", chromedp.FullScreenshot(100))

	item := s.scalar(`SELECT min(id) FROM items WHERE tenant_id = $1`, tenant)
	conv := s.scalar(`SELECT min(id) FROM conversations WHERE tenant_id = $1`, tenant)
	for _, path := range []string{"/console/memory", "/console/memory?q=platypus", "/console/conversations/" + fmt.Sprint(conv),
		"/console/items/" + fmt.Sprint(item), "/console/users/" + fmt.Sprint(adaID)} {
		m.step("refused "+path, chromedp.Navigate(s.URL+path), chromedp.WaitVisible(byTestID("error-message")))
		if msg := m.text(byTestID("error-message")); msg != "Your role does not allow this." {
			t.Errorf("member at %s: %q", path, msg)
		}
	}
	for _, path := range []string{"/console", "/console/connect", "/console/keys", "/console/users", "/console/usage?days=30"} {
		m.step("open "+path, chromedp.Navigate(s.URL+path), chromedp.WaitVisible(byTestID("account-email")))
		html := run(m, "html "+path, chromedp.Evaluate[string](`document.documentElement.outerHTML`))
		for _, word := range []string{"platypus", "burrow", "wombat", "bridge"} {
			if strings.Contains(strings.ToLower(html), word) {
				t.Errorf("member page %s shows %q", path, word)
			}
		}
		if n := m.count(`a[href^="/console/memory"], a[href^="/console/users/"], a[href^="/console/conversations/"], a[href^="/console/items/"]`); n != 0 {
			t.Errorf("member page %s links to memory content %d times", path, n)
		}
	}
	if n := s.scalar(`SELECT count(*) FROM audit_log WHERE tenant_id = $1 AND action = 'memory.view'`, tenant); n != 0 {
		t.Errorf("the member's refused pages wrote %d memory views", n)
	}
	m.noConsoleErrors(http.StatusForbidden)
	a.noConsoleErrors()
}

// TestRolesReaderViewIsAudited: a reader opens a conversation from the
// user's page; the admin's audit log says who saw whose conversation, by
// the user's name, and holds none of its words.
func TestRolesReaderViewIsAudited(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	root := headlessBrowser(t)
	a := newTab(t, root)
	a.signUp(s.URL, "Reading Team", "admin@reading.test")
	key := a.text(byTestID("new-key"))
	tenant := s.scalar(`SELECT id FROM tenants WHERE name = 'Reading Team'`)
	if r := proxied(t, s, key, "Where is the kiwi nest?", fakeprovider.Reply{Text: "The kiwi nest is under the tree fern."}); r.status != http.StatusOK {
		t.Fatalf("proxied: %d", r.status)
	}
	for deadline := time.Now().Add(10 * time.Second); s.scalar(`SELECT count(*) FROM items WHERE tenant_id = $1`, tenant) < 2; {
		if time.Now().After(deadline) {
			t.Fatal("the turn was not stored")
		}
		time.Sleep(50 * time.Millisecond)
	}
	user := s.scalar(`SELECT id FROM memory_users WHERE tenant_id = $1`, tenant)
	a.step("name the user", chromedp.Navigate(s.URL+"/console/users/"+fmt.Sprint(user)), chromedp.WaitVisible(byTestID("rename-form")),
		chromedp.SetValue(byTestID("rename-label"), "Kiwi Warden"), chromedp.Click(byTestID("rename-submit")),
		chromedp.WaitVisible(chromedp.Search(`//td[@data-testid="binding-value"][normalize-space()="Kiwi Warden"]`)))
	link := a.invite(s.URL, "reader@reading.test", "tenant_reader")
	r := trustTab(t, root, "127.0.0.1")
	r.join(s.URL, link)
	if n := r.count(`[data-testid="nav-usage"]`); n != 0 {
		t.Error("a reader is offered the usage page")
	}
	r.step("the user's page", chromedp.Navigate(s.URL+"/console/users/"+fmt.Sprint(user)), chromedp.WaitVisible(byTestID("conversation-row")))
	r.step("the conversation", chromedp.Click(chromedp.CSS(`[data-testid="conversation-row"] a`)), chromedp.WaitVisible(byTestID("item-text")))
	if b := r.body(); !strings.Contains(b, "tree fern") {
		t.Fatal("the reader does not see the conversation")
	}

	a.step("audit", chromedp.Navigate(s.URL+"/console/audit?action=memory.view&actor=reader%40reading.test"), chromedp.WaitVisible(byTestID("audit-row")))
	type row struct{ Actor, Target, Detail string }
	rows := run(a, "audit rows", chromedp.Evaluate[[]row](`[...document.querySelectorAll('[data-testid="audit-row"]')].map(r => ({
		Actor: r.querySelector('[data-testid="audit-actor"]').textContent.trim(),
		Target: r.querySelector('[data-testid="audit-target"]').textContent.trim(),
		Detail: r.querySelector('.detail').textContent.trim()}))`))
	var conv *row
	for i, v := range rows {
		rows[i].Detail = strings.ReplaceAll(v.Detail, " ", "") // jsonb writes ": " and ", "
		if strings.Contains(rows[i].Detail, `"view":"conversation"`) {
			conv = &rows[i]
		}
		if strings.Contains(strings.ToLower(v.Detail), "kiwi nest") || strings.Contains(v.Detail, "fern") {
			t.Errorf("an audit entry holds content: %+v", v)
		}
	}
	if conv == nil {
		t.Fatalf("no entry for the reader's conversation view among %+v", rows)
	}
	if conv.Actor != "reader@reading.test" || conv.Target != "Kiwi Warden (default)" || !strings.Contains(conv.Detail, `"user":"default"`) ||
		!strings.Contains(conv.Detail, "tenant_reader") {
		t.Errorf("conversation view entry %+v", *conv)
	}
	a.shot("roles-reader-audit.png", chromedp.FullScreenshot(100))
	r.noConsoleErrors()
}
