package toolloop

import (
	"bytes"
	"encoding/json"

	"github.com/perpetuity/perpetuity/memory"
	"github.com/perpetuity/perpetuity/proxy/wire/jsonx"
)

// messagesLoop is the loop in Anthropic messages.
type messagesLoop struct{}

func (messagesLoop) definition(s memory.ToolSpec) json.RawMessage {
	b, _ := json.Marshal(struct {
		Name        string          `json:"name"`
		Description string          `json:"description"`
		InputSchema json.RawMessage `json:"input_schema"`
	}{s.Name, s.Description, s.Parameters})
	return b
}

// instruct appends the instruction to the system prompt: after a string,
// or as a block of its own after the harness's blocks, so their cache
// breakpoints keep their prefix.
func (messagesLoop) instruct(o *jsonx.Object) { o.SetRaw("system", withInstructions(o.Get("system"))) }

func withInstructions(sys json.RawMessage) json.RawMessage {
	if len(sys) == 0 || jsonx.IsNull(sys) {
		b, _ := json.Marshal(memory.ToolInstructions)
		return b
	}
	var s string
	if json.Unmarshal(sys, &s) == nil {
		if s != "" {
			s += "\n\n"
		}
		b, _ := json.Marshal(s + memory.ToolInstructions)
		return b
	}
	var blocks []json.RawMessage
	if json.Unmarshal(sys, &blocks) != nil {
		return sys
	}
	blk, _ := json.Marshal(map[string]string{"type": "text", "text": memory.ToolInstructions})
	b, _ := json.Marshal(append(blocks, blk))
	return b
}

// results are one user message of tool_result blocks.
func (messagesLoop) results(calls []call, results []string) []json.RawMessage {
	var blocks []any
	for i, c := range calls {
		blocks = append(blocks, map[string]string{"type": "tool_result", "tool_use_id": c.id, "content": results[i]})
	}
	b, _ := json.Marshal(map[string]any{"role": "user", "content": blocks})
	return []json.RawMessage{b}
}

func (messagesLoop) noneChoice() json.RawMessage { return json.RawMessage(`{"type":"none"}`) }

func (messagesLoop) stitcher(l *Loop) Stitcher {
	return &messagesStitcher{loop: l, byIndex: map[int]*anthBlock{}}
}

func (messagesLoop) read(body []byte) (Round, error) {
	o, err := jsonx.ParseObject(body)
	if err != nil {
		return Round{}, err
	}
	var calls []call
	blocks := o.Array("content")
	for _, b := range blocks {
		if c, ok := anthropicCall(b); ok {
			calls = append(calls, c)
		}
	}
	return Round{calls: calls, stop: o.Str("stop_reason"), assistant: anthropicAssistant(nonEmptyBlocks(blocks))}, nil
}

func (messagesLoop) merge(bodies [][]byte) ([]byte, error) {
	last, err := jsonx.ParseObject(bodies[len(bodies)-1])
	if err != nil {
		return nil, err
	}
	var usage json.RawMessage
	var text string
	content := []json.RawMessage{} // an array even when nothing is left: the API never sends null
	harness := false
	for i, body := range bodies {
		o, err := jsonx.ParseObject(body)
		if err != nil {
			return nil, err
		}
		usage = sumUsage(usage, o.Get("usage"))
		first := true
		for _, b := range o.Array("content") {
			if c, ok := anthropicCall(b); ok {
				// Earlier rounds' calls were answered here; the last
				// round's harness calls go to the harness.
				if i == len(bodies)-1 && !c.memory {
					content = append(content, b)
					harness = true
				}
				continue
			}
			if bo, err := jsonx.ParseObject(b); err == nil && bo.Str("type") == "text" {
				t := bo.Str("text")
				if i > 0 && first && t != "" && needsBreak(text) {
					t = roundBreak + t
					bo.Set("text", t)
					b = bo.JSON()
				}
				if t != "" {
					first = false
				}
				text += t
			}
			content = append(content, b)
		}
	}
	last.Set("content", content)
	if last.Str("stop_reason") == "tool_use" && !harness {
		last.Set("stop_reason", "end_turn")
	}
	if len(usage) > 0 {
		last.SetRaw("usage", usage)
	}
	return last.JSON(), nil
}

// anthropicCall reads a tool_use block.
func anthropicCall(raw json.RawMessage) (call, bool) {
	var b struct {
		Type  string          `json:"type"`
		ID    string          `json:"id"`
		Name  string          `json:"name"`
		Input json.RawMessage `json:"input"`
	}
	if json.Unmarshal(raw, &b) != nil || b.Type != "tool_use" {
		return call{}, false
	}
	args := "{}"
	var c bytes.Buffer
	if len(b.Input) > 0 && json.Compact(&c, b.Input) == nil {
		args = c.String()
	}
	return call{id: b.ID, name: b.Name, args: args, memory: memory.IsTool(b.Name)}, true
}

// nonEmptyBlocks drops empty text blocks, which Anthropic refuses in a
// request.
func nonEmptyBlocks(blocks []json.RawMessage) []json.RawMessage {
	out := make([]json.RawMessage, 0, len(blocks))
	for _, b := range blocks {
		var t struct {
			Type string `json:"type"`
			Text string `json:"text"`
		}
		if json.Unmarshal(b, &t) == nil && t.Type == "text" && t.Text == "" {
			continue
		}
		out = append(out, b)
	}
	return out
}

// anthropicAssistant is the Anthropic assistant message of a round, every
// block as the model sent it (thinking blocks must go back with tool use).
func anthropicAssistant(blocks []json.RawMessage) json.RawMessage {
	b, _ := json.Marshal(map[string]any{"role": "assistant", "content": blocks})
	return b
}
