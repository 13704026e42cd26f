package proxy

import (
	"testing"

	"github.com/perpetuity/perpetuity/proxy/dialect"
)

// TestFindLive: the live question is the last user message with text of
// its own; tool results, and a user message with no text after them,
// continue the exchange in flight.
func TestFindLive(t *testing.T) {
	t.Parallel()
	const img = `{"type":"image_url","image_url":{"url":"data:image/png;base64,iVBORw0KGgo="}}`
	const aimg = `{"type":"image","source":{"type":"base64","media_type":"image/png","data":"iVBORw0KGgo="}}`
	for _, tc := range []struct {
		name string
		d    dialect.Dialect
		body string
		live int
		text string
	}{
		{"chat: the last question", dialect.OpenAIChat,
			`{"model":"m","messages":[{"role":"user","content":"one"},{"role":"assistant","content":"a"},{"role":"user","content":"two"}]}`, 2, "two"},
		{"chat: a screenshot after a tool's result", dialect.OpenAIChat,
			`{"model":"m","messages":[{"role":"system","content":"s"},{"role":"user","content":"look at the page"},` +
				`{"role":"assistant","content":null,"tool_calls":[{"id":"c1","type":"function","function":{"name":"shot","arguments":"{}"}}]},` +
				`{"role":"tool","tool_call_id":"c1","content":"taken"},{"role":"user","content":[` + img + `]}]}`, 1, "look at the page"},
		{"chat: an image alone is the question", dialect.OpenAIChat,
			`{"model":"m","messages":[{"role":"user","content":[` + img + `]}]}`, 0, ""},
		{"anthropic: a screenshot after a tool's result", dialect.AnthropicMessages,
			`{"model":"m","max_tokens":9,"messages":[{"role":"user","content":"look at the page"},` +
				`{"role":"assistant","content":[{"type":"tool_use","id":"t1","name":"shot","input":{}}]},` +
				`{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":"taken"}]},{"role":"user","content":[` + aimg + `]}]}`, 0, "look at the page"},
		{"responses: a screenshot after a call's output", dialect.OpenAIResponses,
			`{"model":"m","input":[{"role":"user","content":"look at the page"},{"type":"function_call","call_id":"c","name":"shot","arguments":"{}"},` +
				`{"type":"function_call_output","call_id":"c","output":"taken"},{"role":"user","content":[{"type":"input_image","image_url":"data:x"}]}]}`, 0, "look at the page"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			for _, skim := range []bool{true, false} {
				in, err := parseInboundWith(tc.d, []byte(tc.body), skim)
				if err != nil {
					t.Fatal(err)
				}
				if in.live != tc.live || in.messages[in.live].text != tc.text {
					t.Fatalf("skim %v: live %d %q, want %d %q", skim, in.live, in.messages[max(in.live, 0)].text, tc.live, tc.text)
				}
			}
		})
	}
}
