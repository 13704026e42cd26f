package edgeinput

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/perpetuity/perpetuity/e2e/fakeprovider"
	"github.com/perpetuity/perpetuity/e2e/reliability/figure"
	"github.com/perpetuity/perpetuity/e2e/rig"
	"github.com/perpetuity/perpetuity/memory/text"
)

// ceiling is the server's PERPETUITY_FRAME_CEILING here: small, so that a
// few dozen stored turns are several times what a frame may hold.
const ceiling = 1000

// filler makes a stored turn about a hundred tokens long.
var filler = strings.Fields(`the keeper climbed the spiral stairs at dusk and trimmed the wick while gulls
	circled the rocks below; storms came from the west most winters and the supply boat was often late, so
	the pantry held tins of beans, hard biscuits, lamp oil and a crate of letters never sent`)

func lighthouseTurns(n int) string {
	var b strings.Builder
	b.WriteString(`{"conversation":"lighthouse","turns":[`)
	at := time.Date(2024, 3, 1, 9, 0, 0, 0, time.UTC)
	for i := 0; i < n; i++ {
		if i > 0 {
			b.WriteString(",")
		}
		role := "user"
		if i%2 == 1 {
			role = "assistant"
		}
		words := append([]string{"Lighthouse", "note", strconv.Itoa(i) + ":"}, filler[i%7:]...)
		t, _ := json.Marshal(map[string]string{"role": role, "text": strings.Join(words, " "), "at": at.Add(time.Duration(i) * time.Minute).Format(time.RFC3339)})
		b.Write(t)
	}
	b.WriteString("]}\n")
	return b.String()
}

// messageText is every text of the request's messages (the frame and the
// live question; the proxy's tool instruction rides in the system prompt).
func messageText(body []byte) []string {
	var req struct {
		Messages []json.RawMessage `json:"messages"`
	}
	_ = json.Unmarshal(body, &req)
	var out []string
	for _, m := range req.Messages {
		var msg struct {
			Role    string          `json:"role"`
			Content json.RawMessage `json:"content"`
		}
		_ = json.Unmarshal(m, &msg)
		if msg.Role == "system" || msg.Role == "tool" {
			continue
		}
		var s string
		if json.Unmarshal(msg.Content, &s) == nil {
			out = append(out, s)
			continue
		}
		var blocks []struct {
			Type string `json:"type"`
			Text string `json:"text"`
		}
		_ = json.Unmarshal(msg.Content, &blocks)
		for _, b := range blocks {
			if b.Type == "text" {
				out = append(out, b.Text)
			}
		}
	}
	return out
}

// toolResults are the memory tool results a continuation request carries.
func toolResults(body []byte) []string {
	var req struct {
		Messages []struct {
			Role    string          `json:"role"`
			Content json.RawMessage `json:"content"`
		} `json:"messages"`
	}
	_ = json.Unmarshal(body, &req)
	var out []string
	for _, m := range req.Messages {
		if m.Role == "tool" {
			var s string
			_ = json.Unmarshal(m.Content, &s)
			out = append(out, s)
			continue
		}
		var blocks []struct {
			Type    string `json:"type"`
			Content string `json:"content"`
		}
		if json.Unmarshal(m.Content, &blocks) == nil {
			for _, b := range blocks {
				if b.Type == "tool_result" {
					out = append(out, b.Content)
				}
			}
		}
	}
	return out
}

func TestFrameCeiling(t *testing.T) {
	w := startWorld(t, "PERPETUITY_FRAME_CEILING="+strconv.Itoa(ceiling))
	tn := rig.CreateTenant(t, w.env, "edge ceiling", "--scope", "tenant")
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	stored := figure.N(120, 60)
	imp := dialect{name: "import", path: "/perpetuity/import"}
	if a := w.post(ctx, tn.Key, imp, nil, []byte(lighthouseTurns(stored))); a.status != 200 {
		t.Fatalf("import: %d %s", a.status, a.body)
	}
	counter, err := text.NewCounter()
	if err != nil {
		t.Fatal(err)
	}
	var storedTokens int
	for _, s := range w.strings(`SELECT body FROM items WHERE tenant_id = $1`, tn.TenantID) {
		storedTokens += counter.Count(s)
	}
	if storedTokens < 3*ceiling {
		t.Fatalf("stored %d tokens, want several times the ceiling %d", storedTokens, ceiling)
	}

	type frameRun struct {
		dialect           string
		budget            string
		header, upstream  int // X-Perpetuity-Frame-Tokens; tokens of the upstream messages
		upstreamBodyBytes int
		ok                bool
	}
	var runs []frameRun
	pass := true
	for _, d := range dialects[:2] {
		for _, budget := range []string{"", "500", strconv.Itoa(ceiling), "1000000"} {
			h := map[string]string{"X-Perpetuity-Mode": "probe", "X-Perpetuity-Tools": "off"}
			if budget != "" {
				h["X-Perpetuity-Frame-Budget"] = budget
			}
			before := len(w.fake.Requests())
			a := w.post(ctx, tn.Key, d, h, chat{live: "What do the lighthouse notes say about the keeper?"}.body(d))
			reqs := w.fake.Requests()
			if a.status != 200 || len(reqs) != before+1 {
				t.Fatalf("%s budget %q: %d %s (%d provider requests)", d.name, budget, a.status, a.body, len(reqs)-before)
			}
			r := frameRun{dialect: d.name, budget: budget, upstreamBodyBytes: len(reqs[len(reqs)-1].Body)}
			r.header, _ = strconv.Atoi(a.header.Get("X-Perpetuity-Frame-Tokens"))
			for _, s := range messageText(reqs[len(reqs)-1].Body) {
				r.upstream += counter.Count(s)
			}
			limit := ceiling
			if n, err := strconv.Atoi(budget); err == nil && n < ceiling {
				limit = n + 200 // a small budget still shows the three best matches whole
			}
			r.ok = r.header <= ceiling && r.upstream <= ceiling && r.header <= limit
			if !r.ok {
				t.Errorf("%s budget %q: frame %d tokens (header), %d upstream, %d body bytes; ceiling %d", d.name, budget, r.header, r.upstream, r.upstreamBodyBytes, ceiling)
			}
			pass = pass && r.ok
			runs = append(runs, r)
		}
	}

	// A memory tool's arguments cannot take its result past the ceiling.
	items := w.strings(`SELECT id::text FROM items WHERE tenant_id = $1 ORDER BY id LIMIT 1 OFFSET $2`, tn.TenantID, stored/2)
	tools := []struct{ name, args string }{
		{"memory_reopen", `{"limit":100}`},
		{"memory_search", `{"query":"lighthouse keeper note","limit":50}`},
		{"memory_chain", `{"item":` + items[0] + `,"direction":"around","depth":20}`},
		{"memory_count", `{"query":"lighthouse","by":"conversation","examples":5}`},
	}
	type toolRun struct {
		name   string
		tokens int
		ok     bool
	}
	var truns []toolRun
	for _, tl := range tools {
		w.fake.Script(fakeprovider.Reply{ToolCalls: []fakeprovider.ToolCall{{Name: tl.name, Arguments: tl.args}}}, fakeprovider.Reply{Text: "done"})
		before := len(w.fake.Requests())
		// A small frame leaves most of the matches for the tools to reach.
		h := map[string]string{"X-Perpetuity-Mode": "probe", "X-Perpetuity-Frame-Budget": "300"}
		a := w.post(ctx, tn.Key, dialects[0], h, chat{live: "What do the lighthouse notes say about the keeper?"}.body(dialects[0]))
		reqs := w.fake.Requests()
		if a.status != 200 || len(reqs) != before+2 {
			t.Fatalf("%s: %d %s (%d provider requests, want 2)", tl.name, a.status, a.body, len(reqs)-before)
		}
		res := toolResults(reqs[len(reqs)-1].Body)
		if len(res) != 1 {
			t.Fatalf("%s: %d tool results in the continuation", tl.name, len(res))
		}
		tr := toolRun{name: tl.name, tokens: counter.Count(res[0])}
		tr.ok = tr.tokens <= ceiling
		if !tr.ok {
			t.Errorf("%s %s: result of %d tokens, ceiling %d", tl.name, tl.args, tr.tokens, ceiling)
		}
		pass = pass && tr.ok
		truns = append(truns, tr)
	}

	var parts, details []string
	for _, r := range runs {
		b := r.budget
		if b == "" {
			b = "server's"
		}
		if r.budget == "1000000" {
			parts = append(parts, fmt.Sprintf("%s with budget 1,000,000: frame %d tokens (upstream messages %d, body %d bytes)", r.dialect, r.header, r.upstream, r.upstreamBodyBytes))
		}
		details = append(details, fmt.Sprintf("%s, budget %s: frame %d tokens by the header, %d counted in the upstream request, %d bytes", r.dialect, b, r.header, r.upstream, r.upstreamBodyBytes))
	}
	maxTool := 0
	for _, tr := range truns {
		maxTool = max(maxTool, tr.tokens)
		details = append(details, fmt.Sprintf("%s: result %d tokens", tr.name, tr.tokens))
	}
	parts = append(parts, fmt.Sprintf("largest memory tool result %d tokens (reopen 100, search 50, chain depth 20, count 5 examples)", maxTool))
	figure.Record(t, figure.Figure{
		Item:   111,
		Name:   "Frame budget header against the ceiling",
		Figure: fmt.Sprintf("ceiling %d tokens, %d tokens stored: ", ceiling, storedTokens) + strings.Join(parts, "; "),
		Target: "no frame and no memory tool result above PERPETUITY_FRAME_CEILING, whatever X-Perpetuity-Frame-Budget or the tool arguments ask",
		Pass:   pass,
		Details: "probe requests in the OpenAI and Anthropic dialects with X-Perpetuity-Frame-Budget unset, 500, the ceiling and 1,000,000; the upstream request the fake provider received is tokenized with the server's own o200k counter; " +
			"then each memory tool called by the fake with its largest arguments, and its result in the continuation request counted\n" + strings.Join(details, "\n"),
	})
	if !pass {
		t.Fatal("a frame or tool result went past the ceiling")
	}
}
