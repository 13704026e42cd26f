package proxy

import (
	"net/http"
	"strings"
	"testing"

	"github.com/perpetuity/perpetuity/e2e/fakeprovider"
)

// TestUpstreamNoTools: a model served by an upstream declared notools gets
// the frame but never a memory tool or its instruction, streaming or not,
// from either dialect, while the same server declared without the option
// gets the tools.
func TestUpstreamNoTools(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name, path, body string
		tools            bool
	}{
		{"chat", "/v1/chat/completions", chatBody("qwen3-8b", false), false},
		{"chat_stream", "/v1/chat/completions", chatBody("qwen3-8b", true), false},
		{"messages", "/v1/messages", messagesBody("qwen3-8b", false), false},
		{"messages_stream", "/v1/messages", messagesBody("qwen3-8b", true), false},
		{"with_tools_upstream", "/v1/chat/completions", chatBody("llama-3.1-8b", false), true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			tp := newTestProxy(t)
			tp.vl.Script(fakeprovider.Reply{Text: "Grey.", Usage: tokens(5, 5)})
			status, h, body := tp.post(c.path, c.body, "Authorization: Bearer local-key")
			if status != http.StatusOK || !strings.Contains(body, "Grey.") {
				t.Fatalf("status %d: %s", status, body)
			}
			tp.settle(1)
			reqs := tp.vl.Requests()
			if len(reqs) != 1 {
				t.Fatalf("%d requests to the declared upstream", len(reqs))
			}
			sent := string(reqs[0].Body)
			if w := mentionsTools(sent); (w != "") != c.tools {
				t.Fatalf("tools offered = %v (%q), want %v:\n%s", w != "", w, c.tools, sent)
			}
			if tp.mem.lastQueryTools() != c.tools {
				t.Fatalf("frame asked with Tools = %v, want %v", tp.mem.lastQueryTools(), c.tools)
			}
			// The frame is still put in: recall is not what the option turns off.
			if h.Get(HeaderFrameItems) == "" || !strings.Contains(sent, "ada said her cat is called Miso") {
				t.Fatalf("no frame (items %q) in the upstream request:\n%s", h.Get(HeaderFrameItems), sent)
			}
		})
	}
}

func chatBody(model string, stream bool) string {
	b := `{"model":"` + model + `","messages":[{"role":"system","content":"You are terse."},` +
		`{"role":"user","content":"Hi, I am ada."},{"role":"assistant","content":"HARNESS COPY"},` +
		`{"role":"user","content":"What colour is my cat?"}]`
	if stream {
		b += `,"stream":true`
	}
	return b + "}"
}

func messagesBody(model string, stream bool) string {
	b := `{"model":"` + model + `","max_tokens":300,"system":"You are terse.","messages":[` +
		`{"role":"user","content":"Hi, I am ada."},{"role":"assistant","content":"HARNESS COPY"},` +
		`{"role":"user","content":"What colour is my cat?"}]`
	if stream {
		b += `,"stream":true`
	}
	return b + "}"
}
