package toolloop

import (
	"encoding/json"
	"errors"

	"github.com/perpetuity/perpetuity/memory"
	"github.com/perpetuity/perpetuity/proxy/wire/jsonx"
)

// chatLoop is the loop in OpenAI chat completions (and the
// OpenAI-compatible servers').
type chatLoop struct{}

func (chatLoop) definition(s memory.ToolSpec) json.RawMessage {
	type fn struct {
		Name        string          `json:"name"`
		Description string          `json:"description"`
		Parameters  json.RawMessage `json:"parameters"`
	}
	b, _ := json.Marshal(struct {
		Type     string `json:"type"`
		Function fn     `json:"function"`
	}{"function", fn{s.Name, s.Description, s.Parameters}})
	return b
}

// instruct adds the instruction as a message of its own after the
// harness's leading system (or developer) messages, in their role.
func (chatLoop) instruct(o *jsonx.Object) {
	msgs := o.Array("messages")
	at := 0
	role := "system"
	for at < len(msgs) {
		var m struct {
			Role string `json:"role"`
		}
		if json.Unmarshal(msgs[at], &m) != nil || (m.Role != "system" && m.Role != "developer") {
			break
		}
		role = m.Role
		at++
	}
	ins, _ := json.Marshal(struct {
		Role    string `json:"role"`
		Content string `json:"content"`
	}{role, memory.ToolInstructions})
	msgs = append(msgs[:at], append([]json.RawMessage{ins}, msgs[at:]...)...)
	o.Set("messages", msgs)
}

// results are one tool message per call.
func (chatLoop) results(calls []call, results []string) []json.RawMessage {
	var out []json.RawMessage
	for i, c := range calls {
		b, _ := json.Marshal(map[string]string{"role": "tool", "tool_call_id": c.id, "content": results[i]})
		out = append(out, b)
	}
	return out
}

func (chatLoop) noneChoice() json.RawMessage { return json.RawMessage(`"none"`) }

func (chatLoop) stitcher(l *Loop) Stitcher { return &chatStitcher{loop: l, tools: map[int]*chatCall{}} }

func (chatLoop) read(body []byte) (Round, error) {
	o, err := jsonx.ParseObject(body)
	if err != nil {
		return Round{}, err
	}
	choice, msg, err := chatChoice(o)
	if err != nil {
		return Round{}, err
	}
	var calls []call
	for i, raw := range msg.Array("tool_calls") {
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
		calls = append(calls, call{id: callID(tc.ID, i), name: tc.Function.Name, args: tc.Function.Arguments, memory: memory.IsTool(tc.Function.Name)})
	}
	return Round{calls: calls, stop: choice.Str("finish_reason"), assistant: chatAssistant(msg.Str("content"), calls)}, nil
}

func (chatLoop) merge(bodies [][]byte) ([]byte, error) {
	last, err := jsonx.ParseObject(bodies[len(bodies)-1])
	if err != nil {
		return nil, err
	}
	var usage json.RawMessage
	var text string
	var keep []json.RawMessage
	for i, body := range bodies {
		o, err := jsonx.ParseObject(body)
		if err != nil {
			return nil, err
		}
		usage = sumUsage(usage, o.Get("usage"))
		_, msg, err := chatChoice(o)
		if err != nil {
			return nil, err
		}
		if t := msg.Str("content"); t != "" {
			if needsBreak(text) {
				text += roundBreak
			}
			text += t
		}
		if i == len(bodies)-1 {
			for _, raw := range msg.Array("tool_calls") {
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
	choices := last.Array("choices")
	choice, msg, err := chatChoice(last)
	if err != nil {
		return nil, err
	}
	if text != "" {
		msg.Set("content", text)
	}
	if len(keep) > 0 {
		msg.Set("tool_calls", keep)
	} else {
		msg.Del("tool_calls")
		if r := choice.Str("finish_reason"); r == "tool_calls" || r == "function_call" {
			choice.Set("finish_reason", "stop")
		}
	}
	choice.SetRaw("message", msg.JSON())
	choices[0] = choice.JSON()
	last.Set("choices", choices)
	if len(usage) > 0 {
		last.SetRaw("usage", usage)
	}
	return last.JSON(), nil
}

// chatChoice finds choice 0 and its message in a chat completion.
func chatChoice(o *jsonx.Object) (choice, msg *jsonx.Object, err error) {
	choices := o.Array("choices")
	if len(choices) == 0 {
		return nil, nil, errors.New("reply has no choices")
	}
	if choice, err = jsonx.ParseObject(choices[0]); err != nil {
		return nil, nil, err
	}
	if msg, err = jsonx.ParseObject(choice.Get("message")); err != nil {
		return nil, nil, err
	}
	return choice, msg, nil
}

// chatAssistant is the OpenAI assistant message of a round with tool calls.
func chatAssistant(text string, calls []call) json.RawMessage {
	type fn struct {
		Name      string `json:"name"`
		Arguments string `json:"arguments"`
	}
	type tc struct {
		ID       string `json:"id"`
		Type     string `json:"type"`
		Function fn     `json:"function"`
	}
	m := struct {
		Role      string  `json:"role"`
		Content   *string `json:"content"`
		ToolCalls []tc    `json:"tool_calls"`
	}{Role: "assistant"}
	if text != "" {
		m.Content = &text
	}
	for _, c := range calls {
		m.ToolCalls = append(m.ToolCalls, tc{c.id, "function", fn{c.name, c.args}})
	}
	b, _ := json.Marshal(m)
	return b
}
