package e2e

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// keyCall is one proxied chat call with a Perpetuity key in the
// X-Perpetuity-Key header, as the connect page's snippets send it; it
// returns the status and body.
func keyCall(t *testing.T, base, key string) (int, string) {
	t.Helper()
	body := `{"model":"gpt-4o-mini","messages":[{"role":"user","content":"hello"}]}`
	req, _ := http.NewRequest(http.MethodPost, base+"/v1/chat/completions", strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer not-a-provider-key")
	req.Header.Set("X-Perpetuity-Key", key)
	resp, err := httpClient().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var b strings.Builder
	buf := make([]byte, 4096)
	for {
		n, err := resp.Body.Read(buf)
		b.Write(buf[:n])
		if err != nil {
			break
		}
	}
	return resp.StatusCode, b.String()
}

// keyRowCell is a cell of the keys table's row for the key with this name.
func keyRowCell(name, cell string) chromedp.Search {
	return chromedp.Search(`//tr[td[@data-testid="key-name"][.="` + name + `"]]/td[@data-testid="` + cell + `"]`)
}

// searchText is the text of the element an XPath search finds.
func searchText(tb *tab, sel chromedp.Search) string {
	tb.t.Helper()
	return strings.TrimSpace(run(tb, "read "+string(sel), chromedp.Text(sel)))
}

func keyRowButton(name, button string) chromedp.Search {
	return chromedp.Search(`//tr[td[@data-testid="key-name"][.="` + name + `"]]//*[@data-testid="` + button + `"]`)
}

// TestConsoleKeyLifecycle is item 5 of issue 18 in the browser: a key made
// with an expiry date says when it ends; rotating a key asks for a grace
// period, shows the new key once, and leaves the old key working until the
// grace ends, after which the proxy refuses it as expired (logged with why,
// the tenant and the key's prefix, never the key); a key's own limits are
// edited, validated, audited, and hold from its next request.
func TestConsoleKeyLifecycle(t *testing.T) {
	t.Parallel()
	s := startStoppable(t)
	root := headlessBrowser(t)
	a := newTab(t, root)
	a.signUp(s.URL, "Life Team", "life@example.com")
	first := a.text(byTestID("new-key"))
	tenant := s.db.scalar(`SELECT id FROM tenants WHERE name = 'Life Team'`)

	// Create with an expiry date.
	day := time.Now().UTC().AddDate(0, 0, 3).Format("2006-01-02")
	a.step("create a key that expires", chromedp.Navigate(s.URL+"/console/keys"), chromedp.WaitVisible(byTestID("key-create-form")),
		chromedp.SendKeys(byTestID("key-name-input"), "expiring"),
		chromedp.SetValue(byTestID("key-user-select"), "new"),
		chromedp.SendKeys(byTestID("key-new-user"), "carol"),
		chromedp.SetValue(byTestID("key-expires-input"), day),
		chromedp.Click(byTestID("key-create")), chromedp.WaitVisible(byTestID("new-key")))
	if n := s.db.scalar(`SELECT count(*) FROM api_keys WHERE tenant_id = $1 AND name = 'expiring' AND expires_at = $2::date::timestamptz`, tenant, day); n != 1 {
		t.Fatalf("keys named expiring ending %s: %d", day, n)
	}
	if got := searchText(a, keyRowCell("expiring", "key-expires")); !strings.HasPrefix(got, "expires in 2 days") || !strings.Contains(got, day) {
		t.Errorf("the expiring key's row says %q", got)
	}
	if got := searchText(a, keyRowCell("first key", "key-expires")); got != "never" {
		t.Errorf("the first key's row says %q, want never", got)
	}

	// Rotate the first key with an hour's grace.
	if st, body := keyCall(t, s.URL, first); st != http.StatusOK {
		t.Fatalf("the first key before rotation: %d %s", st, body)
	}
	a.step("rotate", chromedp.Navigate(s.URL+"/console/keys"), chromedp.WaitVisible(byTestID("keys-table")),
		chromedp.Click(keyRowButton("first key", "key-rotate")), chromedp.WaitVisible(byTestID("key-rotate-form")))
	if got := a.text(byTestID("confirm-effects")); !strings.Contains(got, "keeps working for the grace period") {
		t.Errorf("the rotation page does not say its effect: %q", got)
	}
	a.step("choose the grace and rotate", chromedp.SetValue(byTestID("key-grace-select"), "1h"),
		chromedp.Click(byTestID("confirm-submit")), chromedp.WaitVisible(byTestID("new-key")))
	fresh := a.text(byTestID("new-key"))
	if !strings.HasPrefix(fresh, "ppk_") || fresh == first {
		t.Fatalf("rotation showed %q", fresh)
	}
	if got := a.text(byTestID("key-rotated")); !strings.Contains(got, first[:10]) || !strings.Contains(got, "keeps working until") {
		t.Errorf("the new key's page says of the old one %q", got)
	}
	a.step("reload the new key's page", chromedp.Reload(), chromedp.WaitVisible(byTestID("key-shown-once")))
	if b := a.body(); strings.Contains(b, fresh) {
		t.Fatal("the reloaded page shows the rotated key again")
	}
	a.step("keys page after rotation", chromedp.Navigate(s.URL+"/console/keys"), chromedp.WaitVisible(byTestID("keys-table")))
	if n := a.count(`[data-testid="key-name"]`); n != 3 {
		t.Errorf("%d keys listed after one rotation, want 3", n)
	}
	if got := searchText(a, chromedp.Search(`(//tr[td[@data-testid="key-name"][.="first key"]]/td[@data-testid="key-expires"])[contains(., "rotated")]`)); !strings.HasPrefix(got, "rotated, old key valid until ") {
		t.Errorf("the old key's row says %q", got)
	}
	for name, k := range map[string]string{"old key in its grace": first, "new key": fresh} {
		if st, body := keyCall(t, s.URL, k); st != http.StatusOK {
			t.Fatalf("%s: %d %s", name, st, body)
		}
	}
	// The grace ends (as an hour later would): the old key is refused as
	// expired, in the OpenAI dialect, once the serving process's key cache
	// has let its copy go; the new key works.
	s.db.scalar(`WITH u AS (UPDATE api_keys SET expires_at = now() WHERE tenant_id = $1 AND key_hash = sha256(convert_to($2, 'UTF8')) RETURNING 1) SELECT count(*) FROM u`, tenant, first)
	time.Sleep(2100 * time.Millisecond)
	st, body := keyCall(t, s.URL, first)
	if st != http.StatusUnauthorized || !strings.Contains(body, "key expired") || !strings.Contains(body, `"invalid_api_key"`) {
		t.Fatalf("the old key after its grace: %d %s", st, body)
	}
	if st, body := keyCall(t, s.URL, fresh); st != http.StatusOK {
		t.Fatalf("the new key after the old one's grace: %d %s", st, body)
	}
	var line map[string]any
	for deadline := time.Now().Add(5 * time.Second); line == nil && time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		for _, l := range s.logLines("request") {
			if r, _ := l["reason"].(string); strings.Contains(r, "key expired") {
				line = l
			}
		}
	}
	if line == nil || line["status"] != float64(401) || line["key_prefix"] != first[:10] || line["tenant"] != float64(tenant) {
		t.Errorf("the expired key's log line: %v", line)
	}
	if strings.Contains(s.log.String(), first[10:]) || strings.Contains(s.log.String(), fresh[10:]) {
		t.Fatal("a key reached the log")
	}
	a.step("keys page after the grace", chromedp.Navigate(s.URL+"/console/keys"), chromedp.WaitVisible(byTestID("keys-table")))
	if got := searchText(a, chromedp.Search(`(//tr[td[@data-testid="key-name"][.="first key"]]/td[@data-testid="key-expires"])[contains(., "expired")]`)); !strings.HasPrefix(got, "expired ") {
		t.Errorf("the old key's row after its grace says %q", got)
	}

	// Edit the new key's limits: a bad value is refused and saves nothing;
	// one request a minute holds from the key's next request.
	newRow := `(//tr[td[@data-testid="key-name"][.="first key"]][not(.//td[@data-testid="key-expires"][contains(., "expired")])])`
	a.step("limits form", chromedp.Click(chromedp.Search(newRow+`//*[@data-testid="key-edit-limits"]`)), chromedp.WaitVisible(byTestID("key-limits-form")))
	a.step("a bad limit", chromedp.SendKeys(byTestID("key-limit-rpm"), "-3"), chromedp.Click(byTestID("key-limits-save")),
		chromedp.WaitVisible(byTestID("form-error")))
	if got := a.text(byTestID("form-error")); !strings.Contains(got, "whole number") {
		t.Errorf("the bad limit's error: %q", got)
	}
	if n := s.db.scalar(`SELECT count(*) FROM api_keys WHERE tenant_id = $1 AND requests_per_minute IS NOT NULL`, tenant); n != 0 {
		t.Fatalf("a refused limit was saved on %d keys", n)
	}
	a.step("one request a minute", chromedp.SetValue(byTestID("key-limit-rpm"), "1"), chromedp.Click(byTestID("key-limits-save")),
		chromedp.WaitVisible(byTestID("keys-table")))
	if got := a.body(); !strings.Contains(got, "Key limits saved") {
		t.Errorf("no notice after saving limits:\n%s", got)
	}
	if got := searchText(a, chromedp.Search(newRow+`/td[@data-testid="key-limits"]`)); !strings.HasPrefix(got, "1 req/min") {
		t.Errorf("the new key's limits cell says %q", got)
	}
	if st, body := keyCall(t, s.URL, fresh); st != http.StatusOK {
		t.Fatalf("the first request under the new limit: %d %s", st, body)
	}
	if st, body := keyCall(t, s.URL, fresh); st != http.StatusTooManyRequests {
		t.Fatalf("the second request within the minute: %d %s", st, body)
	}
	for _, action := range []string{"key.create", "key.rotate", "key.limits"} {
		if n := s.db.scalar(`SELECT count(*) FROM audit_log WHERE tenant_id = $1 AND action = $2`, tenant, action); n < 1 {
			t.Errorf("no %s in the audit log", action)
		}
	}
	a.noConsoleErrors(http.StatusBadRequest)
}
