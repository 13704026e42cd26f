package proxy

import (
	"encoding/json"
	"net/http"

	"github.com/perpetuity/perpetuity/memory"
)

// upstream is one (inbound dialect, provider) adapter.
type upstream struct {
	provider string
	url      string
	dialect  Dialect // what the provider speaks
	build    func(in *inbound, f *memory.Frame) ([]byte, error)
}

func (u upstream) requestBody(in *inbound, f *memory.Frame) ([]byte, error) { return u.build(in, f) }

// route picks the adapter for a request. Upstream base URLs come from the
// operator's configuration only; nothing in the request can name another host.
func (p *Proxy) route(d Dialect, in *inbound, h http.Header) (upstream, error) {
	switch d {
	case OpenAIChat:
		return upstream{provider: "openai", url: p.cfg.OpenAIBaseURL + "/chat/completions", dialect: OpenAIChat,
			build: func(in *inbound, f *memory.Frame) ([]byte, error) { return renderSameDialect(in, f) }}, nil
	case AnthropicMessages:
		return upstream{provider: "anthropic", url: p.cfg.AnthropicBaseURL + "/v1/messages", dialect: AnthropicMessages,
			build: func(in *inbound, f *memory.Frame) ([]byte, error) { return renderSameDialect(in, f) }}, nil
	}
	return upstream{}, errBadRequest("no upstream for dialect %s", d)
}

// renderSameDialect replaces the harness's history with the frame and
// leaves every other field as sent. Kept: the system prompt (OpenAI system
// and developer messages at the head; Anthropic's top-level system) and the
// in-flight exchange after the live question (assistant tool calls and tool
// results), rendered natively so ids still match.
func renderSameDialect(in *inbound, f *memory.Frame) ([]byte, error) {
	if f == nil || in.live < 0 {
		return json.Marshal(in.fields)
	}
	var msgs []any
	if in.dialect != AnthropicMessages {
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
			msgs = append(msgs, map[string]any{"role": "user", "content": withNonTextParts(t.Text, live.raw)})
			continue
		}
		msgs = append(msgs, map[string]string{"role": t.Role, "content": t.Text})
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
	fields["messages"] = raw
	return json.Marshal(fields)
}

// withNonTextParts keeps a live message's images and other non-text parts
// beside the frame's rendering of its text.
func withNonTextParts(text string, liveRaw json.RawMessage) []json.RawMessage {
	var m struct {
		Content []json.RawMessage `json:"content"`
	}
	_ = json.Unmarshal(liveRaw, &m)
	first, _ := json.Marshal(map[string]string{"type": "text", "text": text})
	parts := []json.RawMessage{first}
	for _, p := range m.Content {
		var cp contentPart
		if json.Unmarshal(p, &cp) == nil && cp.Type != "text" {
			parts = append(parts, p)
		}
	}
	return parts
}
