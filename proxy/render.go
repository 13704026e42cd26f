package proxy

import (
	"encoding/json"

	"github.com/perpetuity/perpetuity/memory"
	"github.com/perpetuity/perpetuity/proxy/dialect"
)

// renderFrame replaces the harness's history with the frame, in the
// inbound dialect, and leaves every other field as sent. Kept: the system
// prompt (OpenAI system and developer messages at the head; Anthropic's
// top-level system; Responses instructions) and the in-flight exchange
// after the live question (assistant tool calls and tool results), rendered
// natively so ids still match. A crossing adapter translates the result.
func renderFrame(in *inbound, f *memory.Frame) ([]byte, error) {
	if f == nil || in.live < 0 {
		return json.Marshal(in.fields)
	}
	var msgs []any
	if in.dialect != dialect.AnthropicMessages {
		for _, m := range in.messages {
			if m.role != "system" && m.role != "developer" {
				break
			}
			msgs = append(msgs, m.raw)
		}
	}
	live := in.messages[in.live]
	for i, t := range f.Turns {
		if i == len(f.Turns)-1 && t.Role == "user" && live.nonText {
			msgs = append(msgs, frameMessage{Role: "user", Content: withNonTextParts(in.dialect, t.Text, live.raw)})
			continue
		}
		msgs = append(msgs, frameMessage{Role: t.Role, Content: t.Text})
	}
	for _, m := range in.messages[in.live+1:] {
		msgs = append(msgs, m.raw)
	}
	raw, err := json.Marshal(msgs)
	if err != nil {
		return nil, err
	}
	fields := make(map[string]json.RawMessage, len(in.fields))
	for k, v := range in.fields {
		fields[k] = v
	}
	fields[in.listKey] = raw
	return json.Marshal(fields)
}

// frameMessage is one frame turn as a message (Responses: an input item);
// the shape is the same in every dialect.
type frameMessage struct {
	Role    string `json:"role"`
	Content any    `json:"content"`
}

// withNonTextParts keeps a live message's images and other non-text parts
// beside the frame's rendering of its text.
func withNonTextParts(d dialect.Dialect, text string, liveRaw json.RawMessage) []json.RawMessage {
	var m struct {
		Content []json.RawMessage `json:"content"`
	}
	_ = json.Unmarshal(liveRaw, &m)
	textType := "text"
	if d == dialect.OpenAIResponses {
		textType = "input_text"
	}
	first, _ := json.Marshal(map[string]string{"type": textType, "text": text})
	parts := []json.RawMessage{first}
	for _, p := range m.Content {
		var cp contentPart
		if json.Unmarshal(p, &cp) == nil && !isTextPart(cp.Type) {
			parts = append(parts, p)
		}
	}
	return parts
}

func isTextPart(typ string) bool { return typ == "text" || typ == "input_text" || typ == "output_text" }
