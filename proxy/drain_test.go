package proxy

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/perpetuity/perpetuity/e2e/fakeprovider"
)

// TestCutEndsInTheDialectsError: a request still running when the drain
// deadline cuts it (Proxy.Cut) ends with its dialect's error event once
// its stream started, or its error JSON before, never with a terminator;
// the part produced is stored flagged interrupted and counted as cut.
func TestCutEndsInTheDialectsError(t *testing.T) {
	t.Parallel()
	var words []string
	for i := range 40 {
		words = append(words, fmt.Sprintf("w%d", i))
	}
	full := strings.Join(words, " ")
	slow := fakeprovider.Reply{Text: full, ChunkDelay: 50 * time.Millisecond}
	for _, c := range []struct {
		name, path, body, header string
		up                       func(tp *testProxy) *fakeprovider.Provider
		reply                    fakeprovider.Reply
		stream                   bool
		// errEvent reports whether the last event is the dialect's error.
		errEvent func(event string, data []byte) bool
	}{
		{name: "openai", path: "/v1/chat/completions", header: "Authorization: Bearer sk-proj-k",
			body: `{"model":"gpt-4o","stream":true,"messages":[{"role":"user","content":"tell me a story"}]}`,
			up:   func(tp *testProxy) *fakeprovider.Provider { return tp.openai.Provider }, reply: slow, stream: true,
			errEvent: func(_ string, d []byte) bool { return json.Valid(d) && strings.HasPrefix(string(d), `{"error":`) }},
		{name: "anthropic", path: "/v1/messages", header: "x-api-key: sk-ant-k",
			body: `{"model":"claude-sonnet-4-5","max_tokens":100,"stream":true,"messages":[{"role":"user","content":"tell me a story"}]}`,
			up:   func(tp *testProxy) *fakeprovider.Provider { return tp.anthropic.Provider }, reply: slow, stream: true,
			errEvent: func(e string, d []byte) bool {
				return e == "error" && strings.Contains(string(d), `"overloaded_error"`)
			}},
		{name: "responses", path: "/v1/responses", header: "Authorization: Bearer sk-proj-k",
			body: `{"model":"gpt-4.1","stream":true,"input":"tell me a story"}`,
			up:   func(tp *testProxy) *fakeprovider.Provider { return tp.openai.Provider }, reply: slow, stream: true,
			errEvent: func(e string, d []byte) bool { return e == "error" && strings.Contains(string(d), `"type":"error"`) }},
		{name: "openai->anthropic", path: "/v1/chat/completions", header: "Authorization: Bearer sk-ant-k",
			body: `{"model":"claude-sonnet-4-5","stream":true,"messages":[{"role":"user","content":"tell me a story"}]}`,
			up:   func(tp *testProxy) *fakeprovider.Provider { return tp.anthropic.Provider }, reply: slow, stream: true,
			errEvent: func(_ string, d []byte) bool { return json.Valid(d) && strings.HasPrefix(string(d), `{"error":`) }},
		{name: "whole reply not started", path: "/v1/messages", header: "x-api-key: sk-ant-k",
			body:  `{"model":"claude-sonnet-4-5","max_tokens":100,"messages":[{"role":"user","content":"tell me a story"}]}`,
			up:    func(tp *testProxy) *fakeprovider.Provider { return tp.anthropic.Provider },
			reply: fakeprovider.Reply{Text: full, FirstByteDelay: 20 * time.Second}},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			tp := newTestProxy(t)
			up := c.up(tp)
			up.Script(c.reply)
			type answer struct {
				status int
				retry  string
				body   string
			}
			got := make(chan answer, 1)
			go func() {
				status, h, body := tp.post(c.path, c.body, c.header)
				got <- answer{status, h.Get("Retry-After"), body}
			}()
			// Cut while the provider is still talking (or, whole, thinking).
			deadline := time.Now().Add(10 * time.Second)
			for len(up.Requests()) == 0 && time.Now().Before(deadline) {
				time.Sleep(5 * time.Millisecond)
			}
			time.Sleep(400 * time.Millisecond)
			if n := tp.px.Counts().InFlight; n != 1 {
				t.Fatalf("in flight %d before the cut, want 1", n)
			}
			tp.px.Cut()
			var a answer
			select {
			case a = <-got:
			case <-time.After(10 * time.Second):
				t.Fatal("the cut request did not end")
			}
			if !strings.Contains(a.body, "restarting") {
				t.Fatalf("answer does not say the server is restarting: %d %s", a.status, a.body)
			}
			tp.settle(1)
			st := tp.mem.Stored()
			if c.stream {
				evs := events(t, a.body)
				last := evs[len(evs)-1]
				if a.status != 200 || !c.errEvent(last.Event, last.Data) {
					t.Fatalf("last event %q %s, want the dialect's error event; stream:\n%s", last.Event, last.Data, a.body)
				}
				for _, clean := range []string{"[DONE]", "message_stop", "response.completed", `"finish_reason":"stop"`, `"stop_reason":"end_turn"`} {
					if strings.Contains(a.body, clean) {
						t.Fatalf("a cut stream carries %s, which a client takes for a whole reply:\n%s", clean, a.body)
					}
				}
				if len(st) != 2 || st[1].Role != "assistant" || !st[1].Interrupted || st[1].Text == "" || st[1].Text == full || !strings.HasPrefix(full, st[1].Text) {
					t.Fatalf("stored %+v, want the part streamed, flagged interrupted", st)
				}
			} else {
				if a.status != 503 || a.retry != "1" || !strings.Contains(a.body, `"overloaded_error"`) {
					t.Fatalf("answer %d (Retry-After %q) %s, want a 503 overloaded_error", a.status, a.retry, a.body)
				}
				if len(st) != 1 || st[0].Role != "user" {
					t.Fatalf("stored %+v, want the question only", st)
				}
			}
			if n := tp.px.Counts(); n != (DrainCounts{InFlight: 0, Finished: 0, Cut: 1}) {
				t.Fatalf("counts %+v, want one cut", n)
			}
		})
	}
}

// TestCutBeforeForwarding: a request the drain cuts before it reached the
// provider is told the server is restarting (a 503 in its dialect, retry
// in a second) and counted as cut, not as memory failing or as finished.
func TestCutBeforeForwarding(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name, path, body, header, kind string
	}{
		{"anthropic", "/v1/messages", `{"model":"claude-sonnet-4-5","max_tokens":100,"messages":[{"role":"user","content":"tell me a story"}]}`,
			"x-api-key: sk-ant-k", `"overloaded_error"`},
		{"openai", "/v1/chat/completions", `{"model":"gpt-4o","messages":[{"role":"user","content":"tell me a story"}]}`,
			"Authorization: Bearer sk-proj-k", `"error"`},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			tp := newTestProxy(t)
			tp.px.Cut() // a request arriving after the cut is cut at once
			status, h, body := tp.post(c.path, c.body, c.header)
			if status != 503 || h.Get("Retry-After") != "1" || !strings.Contains(body, "restarting") || !strings.Contains(body, c.kind) {
				t.Fatalf("answer %d (Retry-After %q) %s, want a 503 saying the server is restarting", status, h.Get("Retry-After"), body)
			}
			if n := len(tp.openai.Requests()) + len(tp.anthropic.Requests()); n != 0 {
				t.Fatalf("the provider got %d requests", n)
			}
			if n := tp.px.Counts(); n != (DrainCounts{InFlight: 0, Finished: 0, Cut: 1}) {
				t.Fatalf("counts %+v, want one cut", n)
			}
		})
	}
}
