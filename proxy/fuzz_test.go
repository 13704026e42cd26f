package proxy

import (
	"encoding/json"
	"testing"

	"github.com/perpetuity/perpetuity/memory"
	"github.com/perpetuity/perpetuity/proxy/dialect"
	"github.com/perpetuity/perpetuity/proxy/translate"
)

// FuzzParseInbound: any body in any dialect parses or is a 400, and what
// parses renders into valid JSON with the frame, and translates without
// panicking.
func FuzzParseInbound(f *testing.F) {
	for _, s := range []string{
		with(chatIn, ""), with(messagesIn, `,"stream":true`), with(responsesIn, ""),
		`{"model":"m","input":"x"}`, `{"model":"m","messages":[{"role":"user","content":[{"type":"image_url"}]}]}`,
		`{"model":"m","messages":[{"role":"user","content":[{"type":"tool_result","tool_use_id":"a"},{"type":"text","text":"t"}]}]}`,
		`{"model":"m","input":[{"type":"function_call_output"},{"role":"user","content":[{"type":"input_image"}]}]}`,
	} {
		for d := range 3 {
			f.Add(uint8(d), []byte(s))
		}
	}
	frame := &memory.Frame{Turns: []memory.Turn{{Role: "user", Text: "m"}, {Role: "assistant", Text: "n"}, {Role: "user", Text: "live"}}}
	tr := translate.New(nil, nil)
	f.Fuzz(func(t *testing.T, d uint8, body []byte) {
		dl := []dialect.Dialect{dialect.OpenAIChat, dialect.AnthropicMessages, dialect.OpenAIResponses}[int(d)%3]
		in, err := parseInbound(dl, body)
		if err != nil {
			if ae, ok := err.(*APIError); !ok || ae.Status != 400 {
				t.Fatalf("error %v is not a 400", err)
			}
			return
		}
		out, err := renderFrame(in, frame)
		if err != nil || !json.Valid(out) {
			t.Fatalf("render: %v %s", err, out)
		}
		switch dl {
		case dialect.OpenAIChat:
			_, _ = tr.ChatRequestToMessages(out)
		case dialect.AnthropicMessages:
			_, _ = tr.MessagesRequestToChat(out)
		}
	})
}
