package e2e

// Issue 18, item 6: a turn with a pasted secret is redacted through the
// console in headless Chromium, against the real binary, and the secret
// never reaches the provider again, neither in a frame nor in a memory
// tool's result.

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/perpetuity/perpetuity/e2e/fakeprovider"
	"github.com/perpetuity/perpetuity/memory"
)

const pastedSecret = "sk-live-QZX7REDACTME42"

// chat sends one OpenAI chat completion through the proxy with key and
// returns the reply text.
func chat(t *testing.T, base, key string, messages ...string) string {
	t.Helper()
	var msgs []map[string]string
	for i, m := range messages {
		role := "user"
		if i%2 == 1 {
			role = "assistant"
		}
		msgs = append(msgs, map[string]string{"role": role, "content": m})
	}
	body, _ := json.Marshal(map[string]any{"model": "gpt-4o-mini", "messages": msgs})
	req, _ := http.NewRequest(http.MethodPost, base+"/k/"+key+"/v1/chat/completions", bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer sk-test-openai")
	resp, err := httpClient().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("proxy answered %d: %s", resp.StatusCode, b)
	}
	var out struct {
		Choices []struct {
			Message struct{ Content string }
		}
	}
	if err := json.Unmarshal(b, &out); err != nil || len(out.Choices) == 0 {
		t.Fatalf("reply %s: %v", b, err)
	}
	return out.Choices[0].Message.Content
}

// providerSaw is every body the fake provider received since its reset.
func providerSaw(s *server) string {
	var b strings.Builder
	for _, r := range s.Fake.Requests() {
		b.Write(r.Body)
		b.WriteString("\n")
	}
	return b.String()
}

// TestBrowserRedactPastedSecret: a user pastes a key into a turn; a later
// question in another conversation brings it to the provider in the frame
// and in a memory_search result. The admin opens the conversation in the
// console, follows the turn's redact link, is refused a wrong id, types the
// right one and sees the conversation without the turn. The same question
// afterwards reaches the provider without the secret, in the frame and in
// the tool's result, while the rest of the memory still comes along; the
// integrity check from the command line is clean.
func TestBrowserRedactPastedSecret(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	root := headlessBrowser(t)
	a := newTab(t, root)
	a.signUp(s.URL, "Redact Team", "redact@example.com")
	key := a.text(byTestID("new-key"))
	tenant := s.scalar(`SELECT id FROM tenants WHERE name = 'Redact Team'`)
	items := func() int64 { return s.scalar(`SELECT count(*) FROM items WHERE tenant_id = $1`, tenant) }
	waitItems := func(n int64) {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for items() < n {
			if time.Now().After(deadline) {
				t.Fatalf("%d items stored, want %d", items(), n)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}

	s.Fake.Script(fakeprovider.Reply{Text: "Noted: the harbour deploy runs on Friday from the blue runner."})
	chat(t, s.URL, key, "For the harbour deploy use this key: "+pastedSecret+" and the blue runner.")
	waitItems(2)
	ask := func(question string) string {
		t.Helper()
		s.Fake.Reset()
		s.Fake.Script(fakeprovider.Reply{ToolCalls: []fakeprovider.ToolCall{{Name: memory.ToolSearch, Arguments: `{"query":"harbour deploy key runner"}`}}},
			fakeprovider.Reply{Text: "Here is what I found."})
		if got := chat(t, s.URL, key, question); got != "Here is what I found." {
			t.Fatalf("the harness heard %q", got)
		}
		if n := len(s.Fake.Requests()); n != 2 {
			t.Fatalf("%d provider calls, want the frame's and the tool result's", n)
		}
		return providerSaw(s)
	}
	if saw := ask("Which key does the harbour deploy use?"); !strings.Contains(saw, pastedSecret) {
		t.Fatalf("before the redaction the provider never saw the pasted turn:\n%s", saw)
	}
	waitItems(4)

	secret := s.scalar(`SELECT id FROM items WHERE tenant_id = $1 AND body LIKE '%' || $2 || '%'`, tenant, pastedSecret)
	conv := s.scalar(`SELECT conversation_id FROM items WHERE tenant_id = $1 AND id = $2`, tenant, secret)
	id := strconv.FormatInt(secret, 10)
	link := chromedp.CSS(`#item-` + id + ` + .item-actions [data-testid="item-redact-link"]`)
	a.step("the conversation with the pasted turn",
		chromedp.Navigate(s.URL+"/console/conversations/"+strconv.FormatInt(conv, 10)),
		chromedp.WaitVisible(link),
		chromedp.Click(link),
		chromedp.WaitVisible(byTestID("redact-section")),
	)
	if loc := a.location(); loc != s.URL+"/console/items/"+id+"#redact" {
		t.Fatalf("the redact link went to %s", loc)
	}
	if what := a.text(byTestID("redact-section")); !strings.Contains(what, "#"+id) || !strings.Contains(what, "never what it said") {
		t.Fatalf("the confirmation does not say what it does: %q", what)
	}
	a.shot("redact-confirm.png", chromedp.FullScreenshot(100))
	a.step("a wrong id",
		chromedp.SendKeys(byTestID("redact-confirm"), id+"0"),
		chromedp.Click(byTestID("redact-submit")),
		chromedp.WaitVisible(byTestID("form-error")),
	)
	if n := s.scalar(`SELECT count(*) FROM items WHERE tenant_id = $1 AND id = $2`, tenant, secret); n != 1 {
		t.Fatal("a wrong id redacted the turn")
	}
	a.step("the item's id",
		chromedp.SendKeys(byTestID("redact-confirm"), id),
		chromedp.Click(byTestID("redact-submit")),
		chromedp.WaitVisible(byTestID("notice")),
	)
	if loc := a.location(); loc != s.URL+"/console/conversations/"+strconv.FormatInt(conv, 10) {
		t.Fatalf("after the redaction at %s", loc)
	}
	if b := a.body(); strings.Contains(b, pastedSecret) || !strings.Contains(b, "redacted") || !strings.Contains(b, "blue runner") {
		t.Fatalf("the conversation after the redaction:\n%s", b)
	}
	a.shot("redact-done.png", chromedp.FullScreenshot(100))

	saw := ask("Remind me which key the harbour deploy uses.")
	if strings.Contains(saw, pastedSecret) || strings.Contains(saw, "QZX7") {
		t.Fatalf("after the redaction the provider saw the secret:\n%s", saw)
	}
	if !strings.Contains(saw, "blue runner") {
		t.Fatalf("after the redaction the rest of the memory is gone from the frame:\n%s", saw)
	}
	a.step("the audit log", chromedp.Navigate(s.URL+"/console/audit?action=memory.redact"), chromedp.WaitVisible(byTestID("audit-target")))
	if b := a.body(); !strings.Contains(b, "redact@example.com") || !strings.Contains(b, id) || strings.Contains(b, pastedSecret) {
		t.Fatalf("the audit page:\n%s", b)
	}
	out, err := runCLI(append(os.Environ(), "DATABASE_URL="+s.DBURL), "integrity", "--tenant", strconv.FormatInt(tenant, 10))
	if err != nil {
		t.Fatalf("integrity after the redaction: %v\n%s", err, out)
	}
	a.noConsoleErrors(http.StatusBadRequest)
}
