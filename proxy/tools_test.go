package proxy

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/perpetuity/perpetuity/e2e/fakeprovider"
	"github.com/perpetuity/perpetuity/memory"
	"github.com/perpetuity/perpetuity/proxy/dialect"
	"github.com/perpetuity/perpetuity/proxy/toolloop"
)

// toolRoute is one (client dialect, provider dialect) pair the memory-tool
// loop runs on.
type toolRoute struct {
	name, path, header, model string
	client, provider          dialect.Dialect
}

var toolRoutes = []toolRoute{
	{"chat", "/v1/chat/completions", "Authorization: Bearer sk-proj-secret", "gpt-4o", dialect.OpenAIChat, dialect.OpenAIChat},
	{"messages", "/v1/messages", "X-Api-Key: sk-ant-api03-secret", "claude-sonnet-4-5", dialect.AnthropicMessages, dialect.AnthropicMessages},
	{"chat_to_anthropic", "/v1/chat/completions", chatHeader, "claude-sonnet-4-5", dialect.OpenAIChat, dialect.AnthropicMessages},
	{"messages_to_openai", "/v1/messages", messagesHeader, "gpt-4o-mini", dialect.AnthropicMessages, dialect.OpenAIChat},
}

func (r toolRoute) upstream(tp *testProxy) upstreamServer {
	if r.provider == dialect.AnthropicMessages {
		return tp.anthropic
	}
	return tp.openai
}

// body is a request with a system prompt, a stale history and the live
// question, optionally with a harness tool.
func (r toolRoute) body(stream, harnessTool bool) string {
	var b strings.Builder
	if r.client == dialect.AnthropicMessages {
		fmt.Fprintf(&b, `{"model":%q,"max_tokens":300,"system":"You are terse.","messages":[`+
			`{"role":"user","content":"Hi, I am ada."},{"role":"assistant","content":"HARNESS COPY"},`+
			`{"role":"user","content":"What colour is my cat?"}]`, r.model)
		if harnessTool {
			b.WriteString(`,"tools":[{"name":"get_weather","input_schema":{"type":"object","properties":{"city":{"type":"string"}}}}]`)
		}
	} else {
		fmt.Fprintf(&b, `{"model":%q,"messages":[{"role":"system","content":"You are terse."},`+
			`{"role":"user","content":"Hi, I am ada."},{"role":"assistant","content":"HARNESS COPY"},`+
			`{"role":"user","content":"What colour is my cat?"}]`, r.model)
		if harnessTool {
			b.WriteString(`,"tools":[{"type":"function","function":{"name":"get_weather","parameters":{"type":"object","properties":{"city":{"type":"string"}}}}}]`)
		}
		if stream {
			b.WriteString(`,"stream_options":{"include_usage":true}`)
		}
	}
	if stream {
		b.WriteString(`,"stream":true`)
	}
	b.WriteString("}")
	return b.String()
}

func memCall(name, args string) fakeprovider.ToolCall {
	return fakeprovider.ToolCall{Name: name, Arguments: args}
}

var weatherCall = fakeprovider.ToolCall{Name: "get_weather", Arguments: `{"city":"Paris"}`}

func tokens(in, out int) *fakeprovider.Usage {
	return &fakeprovider.Usage{InputTokens: in, OutputTokens: out}
}

// TestToolLoop drives the loop through every route, streaming and not:
// what the harness saw, what the provider got round by round, what was
// stored.
func TestToolLoop(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name        string
		harnessTool bool
		replies     []fakeprovider.Reply
		rounds      int      // provider calls expected
		text        string   // what the harness reads
		calls       []string // harness tool calls it gets
		stop        string   // "answer" or "tool"
		in, out     int      // usage the harness reads
		memCalls    int
	}{
		{name: "search_then_answer", replies: []fakeprovider.Reply{
			{ToolCalls: []fakeprovider.ToolCall{memCall(memory.ToolSearch, `{"query":"cat colour"}`)}, Usage: tokens(100, 10)},
			{Text: "Your cat Miso is grey.", Usage: tokens(150, 7)},
		}, rounds: 2, text: "Your cat Miso is grey.", stop: "answer", in: 250, out: 17, memCalls: 1},
		{name: "text_before_the_call", replies: []fakeprovider.Reply{
			{Text: "Let me check.", ToolCalls: []fakeprovider.ToolCall{memCall(memory.ToolReopen, `{}`)}, Usage: tokens(100, 10)},
			{Text: "Miso is grey.", Usage: tokens(150, 7)},
		}, rounds: 2, text: "Let me check.\n\nMiso is grey.", stop: "answer", in: 250, out: 17, memCalls: 1},
		{name: "round_limit", replies: []fakeprovider.Reply{
			{ToolCalls: []fakeprovider.ToolCall{memCall(memory.ToolSearch, `{"query":"cat"}`)}, Usage: tokens(10, 1)},
			{ToolCalls: []fakeprovider.ToolCall{memCall(memory.ToolChain, `{"item":7}`), memCall(memory.ToolCount, `{"query":"cat"}`)}, Usage: tokens(20, 2)},
			{Text: "Grey, I think.", ToolCalls: []fakeprovider.ToolCall{memCall(memory.ToolSearch, `{"query":"more"}`)}, Usage: tokens(30, 3)},
		}, rounds: 3, text: "Grey, I think.", stop: "answer", in: 60, out: 6, memCalls: 3},
		{name: "harness_tool_untouched", harnessTool: true, replies: []fakeprovider.Reply{
			{ToolCalls: []fakeprovider.ToolCall{weatherCall}, Usage: tokens(100, 10)},
		}, rounds: 1, calls: []string{"get_weather"}, stop: "tool", in: 100, out: 10},
		{name: "mixed_calls", harnessTool: true, replies: []fakeprovider.Reply{
			{ToolCalls: []fakeprovider.ToolCall{weatherCall, memCall(memory.ToolSearch, `{"query":"Paris trip"}`)}, Usage: tokens(100, 10)},
			{Text: "Checking the weather.", ToolCalls: []fakeprovider.ToolCall{weatherCall}, Usage: tokens(150, 7)},
		}, rounds: 2, text: "Checking the weather.", calls: []string{"get_weather"}, stop: "tool", in: 250, out: 17, memCalls: 1},
		{name: "round_limit_with_harness_tools", harnessTool: true, replies: []fakeprovider.Reply{
			{ToolCalls: []fakeprovider.ToolCall{memCall(memory.ToolSearch, `{"query":"cat"}`)}, Usage: tokens(10, 1)},
			{ToolCalls: []fakeprovider.ToolCall{memCall(memory.ToolSearch, `{"query":"dog"}`)}, Usage: tokens(20, 2)},
			{ToolCalls: []fakeprovider.ToolCall{memCall(memory.ToolSearch, `{"query":"x"}`), weatherCall}, Usage: tokens(30, 3)},
		}, rounds: 3, calls: []string{"get_weather"}, stop: "tool", in: 60, out: 6, memCalls: 2},
	}
	for _, r := range toolRoutes {
		for _, stream := range []bool{false, true} {
			for _, c := range cases {
				name := r.name + "/" + c.name
				if stream {
					name += "/stream"
				}
				t.Run(name, func(t *testing.T) {
					t.Parallel()
					tp := newTestProxy(t)
					up := r.upstream(tp)
					up.Script(c.replies...)
					status, h, body := tp.post(r.path, r.body(stream, c.harnessTool), r.header)
					if status != http.StatusOK {
						t.Fatalf("status %d: %s", status, body)
					}
					if isEventStream(h.Get("Content-Type")) != stream {
						t.Fatalf("content type %q", h.Get("Content-Type"))
					}
					got := clientSaw(t, r.client, stream, body)
					if strings.Contains(body, "memory_") || strings.Contains(body, "found: [memory]") {
						t.Fatalf("the harness saw a memory call or result:\n%s", body)
					}
					if got.text != c.text || strings.Join(got.calls, ",") != strings.Join(c.calls, ",") || got.stop != c.stop {
						t.Fatalf("harness saw text %q calls %v stop %q; want %q %v %q\n%s", got.text, got.calls, got.stop, c.text, c.calls, c.stop, body)
					}
					if got.in != c.in || got.out != c.out {
						t.Fatalf("usage in %d out %d, want %d %d\n%s", got.in, got.out, c.in, c.out, body)
					}
					tp.settle(1)
					reqs := up.Requests()
					if len(reqs) != c.rounds {
						t.Fatalf("%d provider calls, want %d", len(reqs), c.rounds)
					}
					checkRounds(t, r.provider, reqs, c.harnessTool, c.replies)
					if n := len(tp.mem.ToolCalls()); n != c.memCalls {
						t.Fatalf("%d memory calls run, want %d: %v", n, c.memCalls, tp.mem.ToolCalls())
					}
					if !tp.mem.lastQueryTools() {
						t.Fatal("frame asked without Tools")
					}
					stored := tp.mem.Stored()
					want := 2
					if c.text == "" {
						want = 1
					}
					if len(stored) != want || want == 2 && (stored[1].Text != c.text || stored[1].Interrupted) {
						t.Fatalf("stored %+v", stored)
					}
					recs := tp.dir.Records()
					if len(recs) != 1 || recs[0].TokensIn != c.in || recs[0].TokensOut != c.out {
						t.Fatalf("recorded %+v, want tokens %d/%d", recs, c.in, c.out)
					}
				})
			}
		}
	}
}

func (m *fakeMemory) lastQueryTools() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.lastQuery.Tools
}

// checkRounds: every round offers the memory tools after the harness's and
// the instruction; each round after the first ends with the previous
// round's calls and their results, natively; the last round makes the
// model answer.
func checkRounds(t *testing.T, d dialect.Dialect, reqs []fakeprovider.Recorded, harnessTool bool, replies []fakeprovider.Reply) {
	t.Helper()
	for i, rec := range reqs {
		u := readUpstream(t, d, rec.Body)
		last := i == len(reqs)-1 && len(reqs) == 3
		wantTools := []string{memory.ToolSearch, memory.ToolReopen, memory.ToolChain, memory.ToolCount}
		if harnessTool {
			wantTools = append([]string{"get_weather"}, wantTools...)
			if last {
				wantTools = []string{"get_weather"}
			}
		}
		if strings.Join(u.tools, ",") != strings.Join(wantTools, ",") {
			t.Fatalf("round %d tools %v, want %v", i+1, u.tools, wantTools)
		}
		wantChoice := ""
		if last && !harnessTool {
			wantChoice = map[dialect.Dialect]string{dialect.OpenAIChat: `"none"`, dialect.AnthropicMessages: `{"type":"none"}`}[d]
		}
		if u.toolChoice != wantChoice {
			t.Fatalf("round %d tool_choice %s, want %q", i+1, u.toolChoice, wantChoice)
		}
		if !strings.Contains(u.system, "You are terse.") || !strings.Contains(u.system, memory.ToolInstructions) ||
			strings.Index(u.system, "You are terse.") > strings.Index(u.system, memory.ToolInstructions) {
			t.Fatalf("round %d system %q", i+1, u.system)
		}
		if strings.Contains(string(rec.Body), "HARNESS COPY") {
			t.Fatalf("round %d got the harness's history instead of the frame", i+1)
		}
		// The instruction says what the frame is where it stands (issue 17):
		// in both dialects the frame follows the system prompt (Anthropic's
		// own field; OpenAI's leading system messages).
		var top map[string]json.RawMessage
		_ = json.Unmarshal(rec.Body, &top)
		ins, _ := json.Marshal(memory.ToolInstructions)
		at, frameAt := strings.Index(string(top["messages"]), strings.Trim(string(ins), `"`)), strings.Index(string(top["messages"]), "[memory]")
		if _, anthropic := top["system"]; anthropic {
			at = -1 // not among the messages: before all of them
		}
		if frameAt < 0 || at > frameAt || strings.Contains(memory.ToolInstructions, "above") {
			t.Fatalf("round %d: the instruction (at %d) must precede the frame (at %d) and say so: %q", i+1, at, frameAt, memory.ToolInstructions)
		}
		if i == 0 {
			if len(u.calls) != 0 {
				t.Fatalf("round 1 ends with tool calls: %s", rec.Body)
			}
			continue
		}
		prev := replies[i-1].ToolCalls
		if len(u.calls) != len(prev) {
			t.Fatalf("round %d carries %d calls, want %d: %s", i+1, len(u.calls), len(prev), rec.Body)
		}
		for j, call := range u.calls {
			res := u.results[call.id]
			switch {
			case call.name != prev[j].Name || call.id == "":
				t.Fatalf("round %d call %d is %+v, want %s", i+1, j, call, prev[j].Name)
			case memory.IsTool(call.name) && !strings.Contains(res, call.name+" found: [memory]"):
				t.Fatalf("round %d: result of %s is %q", i+1, call.name, res)
			case !memory.IsTool(call.name) && res != toolloop.NotRunYet:
				t.Fatalf("round %d: harness call answered %q", i+1, res)
			}
			var want, have any
			_ = json.Unmarshal([]byte(prev[j].Arguments), &want)
			_ = json.Unmarshal([]byte(call.args), &have)
			if fmt.Sprint(want) != fmt.Sprint(have) {
				t.Fatalf("round %d call %s arguments %s, want %s", i+1, call.name, call.args, prev[j].Arguments)
			}
		}
		if u.priorText != replies[i-1].Text {
			t.Fatalf("round %d: the assistant message carries %q, want %q", i+1, u.priorText, replies[i-1].Text)
		}
	}
}

// upstreamView is what a test reads of a provider request.
type upstreamView struct {
	tools      []string
	toolChoice string
	system     string
	// calls and results are the trailing exchange (the last assistant
	// message's calls and the results after it); priorText is that
	// assistant message's text.
	calls     []struct{ id, name, args string }
	results   map[string]string
	priorText string
}

// toolName reads a tool definition's name in either dialect.
func toolName(raw json.RawMessage) string {
	var t struct {
		Name     string `json:"name"`
		Function struct {
			Name string `json:"name"`
		} `json:"function"`
	}
	_ = json.Unmarshal(raw, &t)
	if t.Name != "" {
		return t.Name
	}
	return t.Function.Name
}

func readUpstream(t *testing.T, d dialect.Dialect, body []byte) upstreamView {
	t.Helper()
	var req struct {
		Tools      []json.RawMessage `json:"tools"`
		ToolChoice json.RawMessage   `json:"tool_choice"`
		System     json.RawMessage   `json:"system"`
		Messages   []struct {
			Role       string          `json:"role"`
			Content    json.RawMessage `json:"content"`
			ToolCallID string          `json:"tool_call_id"`
			ToolCalls  []struct {
				ID       string `json:"id"`
				Function struct {
					Name      string `json:"name"`
					Arguments string `json:"arguments"`
				} `json:"function"`
			} `json:"tool_calls"`
		} `json:"messages"`
	}
	if err := json.Unmarshal(body, &req); err != nil {
		t.Fatalf("provider request: %v\n%s", err, body)
	}
	u := upstreamView{toolChoice: string(req.ToolChoice), results: map[string]string{}}
	for _, raw := range req.Tools {
		u.tools = append(u.tools, toolName(raw))
	}
	text := func(raw json.RawMessage) string {
		s, _, _ := contentText(raw)
		return s
	}
	if d == dialect.AnthropicMessages {
		u.system = text(req.System)
		n := len(req.Messages)
		if n >= 2 && req.Messages[n-2].Role == "assistant" {
			var blocks []struct {
				Type      string          `json:"type"`
				Text      string          `json:"text"`
				ID        string          `json:"id"`
				Name      string          `json:"name"`
				Input     json.RawMessage `json:"input"`
				ToolUseID string          `json:"tool_use_id"`
				Content   json.RawMessage `json:"content"`
			}
			if json.Unmarshal(req.Messages[n-2].Content, &blocks) == nil {
				for _, b := range blocks {
					switch b.Type {
					case "tool_use":
						u.calls = append(u.calls, struct{ id, name, args string }{b.ID, b.Name, string(b.Input)})
					case "text":
						u.priorText += b.Text
					}
				}
			}
			blocks = nil
			if json.Unmarshal(req.Messages[n-1].Content, &blocks) == nil {
				for _, b := range blocks {
					if b.Type == "tool_result" {
						var s string
						_ = json.Unmarshal(b.Content, &s)
						u.results[b.ToolUseID] = s
					}
				}
			}
		}
		return u
	}
	var sys []string
	last := -1
	for i, m := range req.Messages {
		if m.Role == "system" || m.Role == "developer" {
			sys = append(sys, text(m.Content))
		}
		if m.Role == "assistant" && len(m.ToolCalls) > 0 {
			last = i
		}
	}
	u.system = strings.Join(sys, "\n")
	if last >= 0 && last == len(req.Messages)-1-len(req.Messages[last].ToolCalls) {
		m := req.Messages[last]
		u.priorText = text(m.Content)
		for _, c := range m.ToolCalls {
			u.calls = append(u.calls, struct{ id, name, args string }{c.ID, c.Function.Name, c.Function.Arguments})
		}
		for _, r := range req.Messages[last+1:] {
			var s string
			_ = json.Unmarshal(r.Content, &s)
			u.results[r.ToolCallID] = s
		}
	}
	return u
}
