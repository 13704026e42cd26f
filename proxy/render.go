package proxy

import (
	"encoding/json"
	"slices"
	"strings"

	"github.com/perpetuity/perpetuity/memory"
	"github.com/perpetuity/perpetuity/memory/text"
	"github.com/perpetuity/perpetuity/proxy/dialect"
)

// renderFrame replaces the harness's history with the frame, in the
// inbound dialect, and leaves every other field as sent. Kept: the system
// prompt (OpenAI system and developer messages at the head; Anthropic's
// top-level system; Responses instructions), the harness's instructions
// in the history (harnessInstructions), and the in-flight exchange after
// the live question (assistant tool calls and tool results), rendered
// natively so ids still match. A crossing adapter translates the result.
func renderFrame(in *inbound, f *memory.Frame) ([]byte, error) {
	if f == nil || in.live < 0 {
		return encodeWith(in.fields, "", nil)
	}
	live := in.messages[in.live]
	size := 2
	for _, m := range in.messages {
		size += len(m.raw) + 1
	}
	for _, t := range f.Turns {
		size += len(t.Text) + 32
	}
	list := append(make([]byte, 0, size), '[')
	add := func(v []byte) {
		if len(list) > 1 {
			list = append(list, ',')
		}
		list = append(list, v...)
	}
	if in.dialect != dialect.AnthropicMessages {
		for _, m := range in.messages {
			if m.role != "system" && m.role != "developer" {
				break
			}
			add(m.raw)
		}
	}
	for _, m := range harnessInstructions(in) {
		add(m)
	}
	endsWithUser := len(f.Turns) > 0 && f.Turns[len(f.Turns)-1].Role == "user"
	for i, t := range f.Turns {
		m := frameMessage{Role: t.Role, Content: t.Text}
		if i == len(f.Turns)-1 && t.Role == "user" && (live.nonText || in.liveScaffold || in.liveBreakpoint != nil) {
			m.Content = liveParts(in.dialect, t.Text, live.raw, in.liveScaffold, in.liveBreakpoint)
		}
		b, err := json.Marshal(m)
		if err != nil {
			return nil, err
		}
		add(b)
	}
	// A live message with no text of its own (an image, audio alone) is
	// stored as no turn (there is nothing to store), so the frame does not
	// close with it: it is empty on a first turn and ends with an earlier
	// turn, most often a quoted reply, later on. The message goes on as
	// sent after the frame; without it the provider got no messages at all,
	// or the frame alone (Anthropic then continued the quoted reply), and
	// the image never reached it. A frame ending with a user turn has its
	// parts already (above): a second user message would break Anthropic's
	// alternation.
	if !endsWithUser && strings.TrimSpace(live.text) == "" {
		add(live.raw)
	}
	for _, m := range in.messages[in.live+1:] {
		add(m.raw)
	}
	return encodeWith(in.fields, in.listKey, append(list, ']'))
}

// encodeWith writes fields as one object, keys sorted (one value per key,
// as the proxy read them), with key's value replaced by list when list is
// not nil. Values are written as they came: parseInbound read them from a
// body that is valid JSON, and re-encoding them (as json.Marshal does a
// RawMessage: compacting, validating) read the rest of a coding agent's
// request again, its tool definitions and its tool exchange in flight.
func encodeWith(fields map[string]json.RawMessage, key string, list []byte) ([]byte, error) {
	keys := make([]string, 0, len(fields)+1)
	size := len(list)
	for k, v := range fields {
		if list == nil || k != key {
			keys = append(keys, k)
			size += len(k) + len(v) + 4
		}
	}
	if list != nil {
		keys = append(keys, key)
	}
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
		if list != nil && k == key {
			out = append(out, list...)
			continue
		}
		if v := fields[k]; len(v) > 0 {
			out = append(out, v...)
		} else {
			out = append(out, "null"...)
		}
	}
	return append(out, '}'), nil
}

// frameMessage is one frame turn as a message (Responses: an input item);
// the shape is the same in every dialect.
type frameMessage struct {
	Role    string `json:"role"`
	Content any    `json:"content"`
}

// liveParts keeps a live message's images and other non-text parts
// beside the frame's rendering of its text, and with scaffold the
// harness's scaffolding parts memory left out of the question
// (question.go), as sent, ahead of it. The rendering carries the
// question's cache breakpoint, when it had one (inbound.liveBreakpoint).
func liveParts(d dialect.Dialect, text string, liveRaw json.RawMessage, scaffold bool, breakpoint json.RawMessage) []json.RawMessage {
	var m struct {
		Content []json.RawMessage `json:"content"`
	}
	_ = json.Unmarshal(liveRaw, &m)
	textType := "text"
	if d == dialect.OpenAIResponses {
		textType = "input_text"
	}
	var parts []json.RawMessage
	if scaffold {
		for _, p := range m.Content {
			if cp, ok := partOf(p); ok && cp.scaffold() { // breakpoint and all: the message's own, sent once
				parts = append(parts, p)
			}
		}
	}
	first, _ := json.Marshal(renderedPart{Text: text, Type: textType, CacheControl: breakpoint})
	parts = append(parts, first)
	for _, p := range m.Content {
		var cp contentPart
		if json.Unmarshal(p, &cp) == nil && !isTextPart(cp.Type) {
			parts = append(parts, p)
		}
	}
	return parts
}

// renderedPart is the frame's rendering of the live question's text
// (fields in the order the frames have always been sent in).
type renderedPart struct {
	Text         string          `json:"text"`
	Type         string          `json:"type"`
	CacheControl json.RawMessage `json:"cache_control,omitempty"`
}

func isTextPart(typ string) bool { return typ == "text" || typ == "input_text" || typ == "output_text" }

// harnessInstructions are what the frame must not replace of the
// history ahead of the live question: a harness's instructions, not the
// conversation. They go through as sent, after the system prompt.
//   - User messages ahead of the first turn that are nothing but
//     scaffolding (memory/text.Content): Codex CLI opens every request with
//     its AGENTS.md instructions and environment context (folder, shell,
//     sandbox) as a user message of their own.
//   - The scaffolding parts of the first turn, when it is history: Claude
//     Code puts the project's CLAUDE.md, as a reminder, in a part of its
//     own beside the first prompt.
//
// A harness resends both with every request; the frame replacing them lost
// them for the model from the second prompt on (Codex: on every request).
func harnessInstructions(in *inbound) []json.RawMessage {
	var out []json.RawMessage
	for _, m := range in.messages[:in.live] {
		switch {
		case m.role == "system" || m.role == "developer":
			continue
		case m.role != "user" || m.toolOnly || strings.TrimSpace(m.text) == "":
			return out
		case text.Content(m.text) == "":
			out = append(out, m.raw)
			continue
		}
		// The first turn of the conversation's own.
		if parts := scaffoldingParts(m.raw); parts != nil {
			out = append(out, parts)
		}
		return out
	}
	return out
}

// scaffoldingParts is the message of raw's text parts that are only
// scaffolding (without a cache breakpoint, which would count against the
// provider's limit), nil when there are none or raw's content is a string.
func scaffoldingParts(raw json.RawMessage) json.RawMessage {
	var parts []json.RawMessage
	if json.Unmarshal(rawContent(raw), &parts) != nil {
		return nil
	}
	var keep []json.RawMessage
	for _, p := range parts {
		if cp, ok := partOf(p); ok && cp.resendable() {
			keep = append(keep, p)
		}
	}
	if len(keep) == 0 {
		return nil
	}
	out, err := json.Marshal(struct {
		Role    string            `json:"role"`
		Content []json.RawMessage `json:"content"`
	}{"user", keep})
	if err != nil {
		return nil
	}
	return out
}
