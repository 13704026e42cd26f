package proxy

import (
	"encoding/json"
	"slices"

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
	return encodeWith(in.fields, in.listKey, raw)
}

// encodeWith is json.Marshal of fields with key's value replaced by raw,
// which json.Marshal made (compact, HTML escaped) and is written as it is:
// it holds the frame, tens of kB that encoding the map would scan and
// copy again.
func encodeWith(fields map[string]json.RawMessage, key string, raw []byte) ([]byte, error) {
	keys := make([]string, 0, len(fields)+1)
	size := len(raw)
	for k, v := range fields {
		if k != key {
			keys = append(keys, k)
			size += len(k) + len(v) + 4
		}
	}
	keys = append(keys, key)
	slices.Sort(keys)
	out := make([]byte, 0, size+len(key)+4)
	out = append(out, '{')
	for i, k := range keys {
		if i > 0 {
			out = append(out, ',')
		}
		kb, err := json.Marshal(k)
		if err != nil {
			return nil, err
		}
		out = append(append(out, kb...), ':')
		if k == key {
			out = append(out, raw...)
			continue
		}
		v, err := json.Marshal(fields[k])
		if err != nil {
			return nil, err
		}
		out = append(out, v...)
	}
	return append(out, '}'), nil
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
