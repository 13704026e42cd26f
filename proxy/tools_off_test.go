package proxy

import (
	"net/http"
	"strings"
	"testing"

	"github.com/perpetuity/perpetuity/e2e/fakeprovider"
	"github.com/perpetuity/perpetuity/memory"
	"github.com/perpetuity/perpetuity/proxy/dialect"
)

// mentionsTools reports any memory tool name or instruction text in s.
func mentionsTools(s string) string {
	for _, w := range []string{memory.ToolSearch, memory.ToolReopen, memory.ToolChain, memory.ToolCount, "memory_", memory.ToolInstructions[:40]} {
		if strings.Contains(s, w) {
			return w
		}
	}
	return ""
}

// TestToolsOff: with X-Perpetuity-Tools: off (or recall off, or the
// Responses API) no tool name or instruction text reaches the provider,
// and the frame is asked without tools.
func TestToolsOff(t *testing.T) {
	t.Parallel()
	type req struct {
		name, path, body, header, switchHeader, provider string
	}
	var cases []req
	for _, r := range toolRoutes {
		for _, stream := range []bool{false, true} {
			n := r.name
			if stream {
				n += "_stream"
			}
			cases = append(cases,
				req{n + "/tools_off", r.path, r.body(stream, true), r.header, HeaderTools + ": off", map[dialect.Dialect]string{dialect.OpenAIChat: "openai", dialect.AnthropicMessages: "anthropic"}[r.provider]},
				req{n + "/recall_off", r.path, r.body(stream, false), r.header, HeaderRecall + ": off", map[dialect.Dialect]string{dialect.OpenAIChat: "openai", dialect.AnthropicMessages: "anthropic"}[r.provider]})
		}
	}
	cases = append(cases, req{"responses", "/v1/responses", with(responsesIn, ""), "Authorization: Bearer sk-proj-k", "", "openai"},
		req{"responses_stream", "/v1/responses", with(responsesIn, `,"stream":true`), "Authorization: Bearer sk-proj-k", "", "openai"})
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			tp := newTestProxy(t)
			// A model that calls memory anyway gets no loop: the call is
			// the harness's business (it never offered such a tool).
			call := fakeprovider.Reply{Text: "Grey.", Usage: tokens(5, 5)}
			tp.openai.Script(call)
			tp.anthropic.Script(call)
			headers := []string{c.header}
			if c.switchHeader != "" {
				headers = append(headers, c.switchHeader)
			}
			status, _, body := tp.post(c.path, c.body, headers...)
			if status != http.StatusOK {
				t.Fatalf("status %d: %s", status, body)
			}
			tp.settle(1)
			reqs := tp.received()[c.provider]
			if len(reqs) != 1 {
				t.Fatalf("%d requests to %s", len(reqs), c.provider)
			}
			if w := mentionsTools(string(reqs[0].Body)); w != "" {
				t.Fatalf("provider request mentions %q:\n%s", w, reqs[0].Body)
			}
			if tp.mem.lastQueryTools() {
				t.Fatal("frame asked with Tools on")
			}
			if !strings.Contains(body, "Grey.") {
				t.Fatalf("reply %s", body)
			}
		})
	}
}

// TestToolsOffKeepsMemoryCallsForHarness: with tools off nothing is
// intercepted, whatever the tool is called.
func TestToolsOffKeepsMemoryCallsForHarness(t *testing.T) {
	t.Parallel()
	tp := newTestProxy(t)
	tp.openai.Script(fakeprovider.Reply{ToolCalls: []fakeprovider.ToolCall{memCall(memory.ToolSearch, `{"query":"x"}`)}})
	r := toolRoutes[0]
	status, _, body := tp.post(r.path, r.body(false, false), r.header, HeaderTools+": off")
	if status != http.StatusOK || !strings.Contains(body, memory.ToolSearch) {
		t.Fatalf("%d %s", status, body)
	}
	tp.settle(1)
	if n := len(tp.openai.Requests()); n != 1 || len(tp.mem.ToolCalls()) != 0 {
		t.Fatalf("%d provider calls, memory calls %v", n, tp.mem.ToolCalls())
	}
}

// TestToolsUntouchedReply: when the model calls no memory tool, the
// harness gets exactly the bytes it would get with tools off, text or
// harness tool call, streaming or not.
func TestToolsUntouchedReply(t *testing.T) {
	t.Parallel()
	replies := map[string]fakeprovider.Reply{
		"text": {Text: "Your cat Miso is grey.", Usage: tokens(50, 6)},
		"tool": {Text: "Checking.", ToolCalls: []fakeprovider.ToolCall{weatherCall}, Usage: tokens(50, 6)},
	}
	for _, r := range toolRoutes {
		for _, stream := range []bool{false, true} {
			for kind, reply := range replies {
				t.Run(r.name+"/"+kind+map[bool]string{false: "", true: "/stream"}[stream], func(t *testing.T) {
					t.Parallel()
					var got [2]string
					for i, sw := range []string{HeaderTools + ": on", HeaderTools + ": off"} {
						tp := newTestProxy(t)
						r.upstream(tp).Script(reply)
						status, _, body := tp.post(r.path, r.body(stream, true), r.header, sw)
						if status != http.StatusOK {
							t.Fatalf("%s: %d %s", sw, status, body)
						}
						got[i] = body
					}
					if got[0] != got[1] {
						t.Fatalf("tools on:\n%s\ntools off:\n%s", got[0], got[1])
					}
				})
			}
		}
	}
}

// TestToolLoopGolden pins the stitched reply of a round that says
// something, calls a harness tool and memory together, and a round that
// answers and calls the harness tool again.
func TestToolLoopGolden(t *testing.T) {
	t.Parallel()
	for _, r := range toolRoutes {
		for _, stream := range []bool{false, true} {
			name := r.name + map[bool]string{false: "", true: "_stream"}[stream]
			t.Run(name, func(t *testing.T) {
				t.Parallel()
				tp := newTestProxy(t)
				r.upstream(tp).Script(
					fakeprovider.Reply{Text: "Let me check.", ToolCalls: []fakeprovider.ToolCall{weatherCall, memCall(memory.ToolSearch, `{"query":"Paris"}`)}, Usage: tokens(100, 10)},
					fakeprovider.Reply{Text: "You liked Paris.", ToolCalls: []fakeprovider.ToolCall{weatherCall}, Usage: tokens(150, 7)})
				status, _, body := tp.post(r.path, r.body(stream, true), r.header)
				if status != http.StatusOK {
					t.Fatalf("%d %s", status, body)
				}
				tp.settle(1)
				golden(t, "tools/"+name+".reply", []byte(body))
				golden(t, "tools/"+name+".round2.request.json", append(r.upstream(tp).Requests()[1].Body, '\n'))
			})
		}
	}
}

// TestToolLoopLaterRoundFails: a provider error after a memory round
// reaches the harness as an error (in band once the stream started), and
// the partial reply is stored flagged.
func TestToolLoopLaterRoundFails(t *testing.T) {
	t.Parallel()
	for _, r := range toolRoutes {
		for _, stream := range []bool{false, true} {
			t.Run(r.name+map[bool]string{false: "", true: "/stream"}[stream], func(t *testing.T) {
				t.Parallel()
				tp := newTestProxy(t)
				r.upstream(tp).Script(
					fakeprovider.Reply{Text: "Let me check.", ToolCalls: []fakeprovider.ToolCall{memCall(memory.ToolReopen, `{}`)}},
					fakeprovider.Reply{Status: 529, ErrorMessage: "Overloaded"})
				status, _, body := tp.post(r.path, r.body(stream, false), r.header)
				tp.settle(1)
				stored := tp.mem.Stored()
				if !stream {
					if status != 529 || !strings.Contains(body, "Overloaded") || len(stored) != 1 {
						t.Fatalf("%d %s; stored %+v", status, body, stored)
					}
					return
				}
				evs := events(t, body)
				last := evs[len(evs)-1]
				if status != 200 || !strings.Contains(string(last.Data), "error") || strings.Contains(body, "[DONE]") || strings.Contains(body, "message_stop") {
					t.Fatalf("stream does not end in an error:\n%s", body)
				}
				if len(stored) != 2 || !stored[1].Interrupted || stored[1].Text != "Let me check." {
					t.Fatalf("stored %+v", stored)
				}
			})
		}
	}
}
