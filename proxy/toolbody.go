package proxy

import (
	"bytes"
	"encoding/json"
	"errors"

	"github.com/perpetuity/perpetuity/memory"
	"github.com/perpetuity/perpetuity/proxy/dialect"
)

// Non-streamed replies in the memory-tool loop: each round's reply is read
// for its calls, and the rounds are merged into the one reply the harness
// gets, in the provider's dialect (a crossing adapter translates it after).

// roundOf reads a non-streamed reply's tool calls, stop reason and the
// assistant message that goes back to the model if the loop continues.
func roundOf(d dialect.Dialect, body []byte) (calls []toolCall, stop string, assistant json.RawMessage, err error) {
	o, err := parseObject(body)
	if err != nil {
		return nil, "", nil, err
	}
	if d == dialect.AnthropicMessages {
		stop = o.str("stop_reason")
		blocks := o.array("content")
		for _, b := range blocks {
			if c, ok := anthropicCall(b); ok {
				calls = append(calls, c)
			}
		}
		return calls, stop, anthropicAssistant(nonEmptyBlocks(blocks)), nil
	}
	choice, msg, err := chatChoice(o)
	if err != nil {
		return nil, "", nil, err
	}
	stop = choice.str("finish_reason")
	text := msg.str("content")
	for i, raw := range msg.array("tool_calls") {
		var tc struct {
			ID       string `json:"id"`
			Function struct {
				Name      string `json:"name"`
				Arguments string `json:"arguments"`
			} `json:"function"`
		}
		if json.Unmarshal(raw, &tc) != nil {
			continue
		}
		calls = append(calls, toolCall{id: callID(tc.ID, i), name: tc.Function.Name, args: tc.Function.Arguments, memory: memory.IsTool(tc.Function.Name)})
	}
	return calls, stop, chatAssistant(text, calls), nil
}

// anthropicCall reads a tool_use block.
func anthropicCall(raw json.RawMessage) (toolCall, bool) {
	var b struct {
		Type  string          `json:"type"`
		ID    string          `json:"id"`
		Name  string          `json:"name"`
		Input json.RawMessage `json:"input"`
	}
	if json.Unmarshal(raw, &b) != nil || b.Type != "tool_use" {
		return toolCall{}, false
	}
	args := "{}"
	var c bytes.Buffer
	if len(b.Input) > 0 && json.Compact(&c, b.Input) == nil {
		args = c.String()
	}
	return toolCall{id: b.ID, name: b.Name, args: args, memory: memory.IsTool(b.Name)}, true
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

// chatChoice finds choice 0 and its message in a chat completion.
func chatChoice(o *object) (choice, msg *object, err error) {
	choices := o.array("choices")
	if len(choices) == 0 {
		return nil, nil, errors.New("reply has no choices")
	}
	if choice, err = parseObject(choices[0]); err != nil {
		return nil, nil, err
	}
	if msg, err = parseObject(choice.get("message")); err != nil {
		return nil, nil, err
	}
	return choice, msg, nil
}

// mergeRounds makes one reply of the rounds' replies: every round's text
// (a blank line between rounds), the last round's harness tool calls, the
// last round's stop reason (an answer, when only memory calls were
// dropped), and the usage of all rounds added up.
func mergeRounds(d dialect.Dialect, bodies [][]byte) ([]byte, error) {
	last, err := parseObject(bodies[len(bodies)-1])
	if err != nil {
		return nil, err
	}
	var usage json.RawMessage
	var text string
	if d == dialect.AnthropicMessages {
		var content []json.RawMessage
		harness := false
		for i, body := range bodies {
			o, err := parseObject(body)
			if err != nil {
				return nil, err
			}
			usage = sumUsage(usage, o.get("usage"))
			first := true
			for _, b := range o.array("content") {
				if c, ok := anthropicCall(b); ok {
					// Earlier rounds' calls were answered here; the last
					// round's harness calls go to the harness.
					if i == len(bodies)-1 && !c.memory {
						content = append(content, b)
						harness = true
					}
					continue
				}
				if bo, err := parseObject(b); err == nil && bo.str("type") == "text" {
					t := bo.str("text")
					if i > 0 && first && t != "" && needsBreak(text) {
						t = roundBreak + t
						bo.set("text", t)
						b = bo.bytes()
					}
					if t != "" {
						first = false
					}
					text += t
				}
				content = append(content, b)
			}
		}
		last.set("content", content)
		if last.str("stop_reason") == "tool_use" && !harness {
			last.set("stop_reason", "end_turn")
		}
		if len(usage) > 0 {
			last.setRaw("usage", usage)
		}
		return last.bytes(), nil
	}
	var keep []json.RawMessage
	for i, body := range bodies {
		o, err := parseObject(body)
		if err != nil {
			return nil, err
		}
		usage = sumUsage(usage, o.get("usage"))
		_, msg, err := chatChoice(o)
		if err != nil {
			return nil, err
		}
		if t := msg.str("content"); t != "" {
			if needsBreak(text) {
				text += roundBreak
			}
			text += t
		}
		if i == len(bodies)-1 {
			for _, raw := range msg.array("tool_calls") {
				var tc struct {
					Function struct {
						Name string `json:"name"`
					} `json:"function"`
				}
				if json.Unmarshal(raw, &tc) == nil && !memory.IsTool(tc.Function.Name) {
					keep = append(keep, raw)
				}
			}
		}
	}
	choices := last.array("choices")
	choice, msg, err := chatChoice(last)
	if err != nil {
		return nil, err
	}
	if text != "" {
		msg.set("content", text)
	}
	if len(keep) > 0 {
		msg.set("tool_calls", keep)
	} else {
		msg.del("tool_calls")
		if r := choice.str("finish_reason"); r == "tool_calls" || r == "function_call" {
			choice.set("finish_reason", "stop")
		}
	}
	choice.setRaw("message", msg.bytes())
	choices[0] = choice.bytes()
	last.set("choices", choices)
	if len(usage) > 0 {
		last.setRaw("usage", usage)
	}
	return last.bytes(), nil
}
