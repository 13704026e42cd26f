package e2e

// The request inspector (issue 18, item 2) in a real browser against the
// real binary: a proxied request whose model called a memory tool is kept
// with its frame, item by item with why each was in, and reached from the
// item page ("frames this item was in") and from the user page. The
// record keeps neither the provider's key nor the Perpetuity key.

import (
	"context"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/openai/openai-go/v3"
	ooption "github.com/openai/openai-go/v3/option"

	"github.com/perpetuity/perpetuity/e2e/fakeprovider"
	"github.com/perpetuity/perpetuity/memory"
)

func TestBrowserInspector(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	a := newTab(t, headlessBrowser(t))
	a.signUp(s.URL, "Inspect Team", "inspect@example.com")
	key := a.text(byTestID("new-key"))
	tenantID := s.scalar(`SELECT id FROM tenants WHERE name = 'Inspect Team'`)
	base := s.URL + "/k/" + key + "/v1"

	sayThrough(t, s, base, "The Quokkaferry leaves from platform nine on Fridays.", "Noted: platform nine, Fridays.")
	sayThrough(t, s, base, "My sister Wilhelmina keeps bees in Utrecht.", "Lovely, bees in Utrecht.")
	// Replies are captured after their response went out: the inspected
	// frame is to hold the ferry's answer beside it, so both are stored
	// first (a loaded machine once had the question ask before they were).
	const replies = `SELECT count(*) FROM messages WHERE tenant_id = $1 AND role = 'assistant'`
	for deadline := time.Now().Add(15 * time.Second); s.scalar(replies, tenantID) < 2; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the two replies were not stored within 15s")
		}
	}

	// The inspected request: a provider key of its own, and the model
	// searches memory before it answers.
	const providerKey = "sk-inspector-provider-key-7f3a9c1e5b"
	const question = "Which platform does the Quokkaferry leave from?"
	s.Fake.Script(
		fakeprovider.Reply{ToolCalls: []fakeprovider.ToolCall{{Name: memory.ToolSearch, Arguments: `{"query":"quokkaferry platform"}`}}},
		fakeprovider.Reply{Text: "It leaves from platform nine."},
	)
	oc := openai.NewClient(ooption.WithBaseURL(base), ooption.WithAPIKey(providerKey), ooption.WithMaxRetries(0))
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	if _, err := oc.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{
		Model: "gpt-4o-mini", Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage(question)},
	}); err != nil {
		t.Fatal(err)
	}
	// The record is written after the reply went out.
	const kept = `SELECT count(*) FROM request_inspections WHERE tenant_id = $1 AND record::json->>'question' = $2`
	for deadline := time.Now().Add(15 * time.Second); s.scalar(kept, tenantID, question) == 0; time.Sleep(100 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("no inspector record of the request after 15s")
		}
	}
	for _, tc := range []struct{ name, secret string }{{"provider key", providerKey}, {"Perpetuity key", key}} {
		if n := s.scalar(`SELECT count(*) FROM request_inspections p JOIN requests r ON r.tenant_id = p.tenant_id AND r.id = p.request_id
			WHERE strpos(p.record::text || r::text, $1) > 0`, tc.secret); n != 0 {
			t.Errorf("the %s is in %d stored records", tc.name, n)
		}
	}
	if n := s.scalar(`SELECT count(*) FROM request_inspections WHERE tenant_id = $1 AND record::json->'tools'->0->>'name' = 'memory_search'
		AND strpos(record::json->>'reply', 'platform nine') > 0`, tenantID); n != 1 {
		t.Errorf("%d records keep the tool call and the reply, want 1", n)
	}
	ferry := s.scalar(`SELECT id FROM items WHERE tenant_id = $1 AND body LIKE 'The Quokkaferry leaves%'`, tenantID)
	owner := s.scalar(`SELECT user_id FROM items WHERE id = $1`, ferry)
	id := strconv.FormatInt(ferry, 10)

	// From the memory browser's item page to the frame it was in.
	a.step("item page", chromedp.Navigate(s.URL+"/console/items/"+id), chromedp.WaitVisible(byTestID("item-frames")))
	var link string
	for _, l := range a.texts(`[data-testid="item-frame-link"]`) {
		if l == question {
			link = l
		}
	}
	if link == "" {
		t.Fatalf("the item page lists frames %q, not the question's", a.texts(`[data-testid="item-frame-link"]`))
	}
	a.step("open the inspector", chromedp.Click(chromedp.CSS(`[data-testid="item-frame"]:first-of-type [data-testid="item-frame-link"]`)),
		chromedp.WaitVisible(byTestID("frame-items")))
	if got := a.text(chromedp.CSS(`[data-testid="request-question"] pre`)); got != question {
		t.Errorf("question shown %q", got)
	}
	if n := a.count(`[data-testid="request-question"] mark`); n != 1 {
		t.Errorf("the question is not highlighted (%d marks)", n)
	}
	row := `[data-testid="frame-items"] [data-testid="frame-item"][data-item-id="` + id + `"]`
	if n := a.count(row); n != 1 {
		t.Fatalf("the frame lists item %s %d times: %q", id, n, a.texts(`[data-testid="frame-items"] [data-testid="frame-item"]`))
	}
	reasons := a.texts(row + ` [data-testid="frame-item-reasons"] li`)
	if !slices.Contains(reasons, "matched the question") {
		t.Errorf("item %s in the frame because %q, want it matched", id, reasons)
	}
	if score := a.text(chromedp.CSS(row + ` [data-testid="frame-item-score"]`)); score == "—" || score == "" {
		t.Errorf("a match shows score %q", score)
	}
	if heat, err := strconv.ParseFloat(a.text(chromedp.CSS(row+` [data-testid="frame-item-heat"]`)), 64); err != nil || heat < memory.WarmThreshold {
		t.Errorf("a shown item's heat %v (%v)", heat, err)
	}
	// Every row says why it was there, in words; the live question is one.
	for _, r := range a.texts(`[data-testid="frame-items"] [data-testid="frame-item-reasons"]`) {
		if r == "" {
			t.Error("a frame row with no reason")
		}
	}
	if !slices.Contains(a.texts(`[data-testid="frame-items"] [data-testid="frame-item-reasons"] li`), "the question itself") {
		t.Error("the live question is not among the frame's rows")
	}
	if n := a.count(`[data-testid="frame-turn"]`); n < 2 {
		t.Errorf("%d frame turns shown", n)
	}
	if marks := a.texts(`[data-testid="frame-turns"] mark`); !slices.Contains(marks, "Quokkaferry") {
		t.Errorf("the question's words are not marked in the frame: %q", marks)
	}
	if got := a.text(chromedp.CSS(`[data-testid="tool-call"] td:nth-child(2)`)); !strings.HasPrefix(got, memory.ToolSearch) {
		t.Errorf("tool call %q", got)
	}
	if got := a.text(byTestID("request-status")); got != "200 OK" {
		t.Errorf("provider status %q", got)
	}
	if got := a.text(byTestID("request-latency")); !strings.HasSuffix(got, " ms") {
		t.Errorf("provider latency %q", got)
	}
	if got := a.text(byTestID("request-reply")); got != "It leaves from platform nine." {
		t.Errorf("reply %q", got)
	}
	if strings.Contains(a.body(), providerKey) || strings.Contains(a.body(), key) {
		t.Error("a key is on the inspector page")
	}
	a.shot("inspector.png", chromedp.FullScreenshot(100))

	// From the user page: the user's requests, the inspected one linked.
	a.step("user page", chromedp.Navigate(s.URL+"/console/users/"+strconv.FormatInt(owner, 10)),
		chromedp.Click(byTestID("user-requests-link")), chromedp.WaitVisible(byTestID("requests-table")))
	if got := a.texts(`[data-testid="request-link"]`); !slices.Contains(got, question) || len(got) != 3 {
		t.Errorf("the user's requests list %q, want the three questions", got)
	}
	// Viewing memory through the inspector is audited like the browser.
	if n := s.scalar(`SELECT count(*) FROM audit_log WHERE tenant_id = $1 AND action = 'memory.view' AND detail->>'view' IN ('request', 'requests')`, tenantID); n < 2 {
		t.Errorf("%d inspector views audited, want 2", n)
	}
	a.noConsoleErrors()
}
