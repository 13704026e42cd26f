package toolloop

import (
	"bytes"
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
// harness's leading system (or developer) messages, in their role. The
// messages (the whole frame) are read only up to there, and the
// instruction goes into the array's bytes.
func (chatLoop) instruct(o *jsonx.Object) {
	msgs, compact := o.GetCompact("messages")
	lead, err := leadingSystem(msgs)
	ins, _ := json.Marshal(struct {
		Role    string `json:"role"`
		Content string `json:"content"`
	}{lead.role, memory.ToolInstructions})
	if err != nil { // no array of messages: the instruction alone
		o.Set("messages", []json.RawMessage{ins})
		return
	}
	out := make([]byte, 0, len(msgs)+len(ins)+1)
	out = append(out, msgs[:lead.end]...)
	if lead.n > 0 {
		out = append(out, ',')
	}
	out = append(out, ins...)
	if lead.n == 0 && lead.more {
		out = append(out, ',')
	}
	out = append(out, msgs[lead.end:]...)
	if compact { // and so is the instruction
		o.SetCompact("messages", out)
	} else {
		o.SetRaw("messages", out)
	}
}

// leading is where a messages array's leading system or developer
// messages end.
type leading struct {
	n    int    // how many
	end  int    // the offset just past the last of them, or past the '['
	role string // the last one's role; "system" when none
	more bool   // another element follows
}

// leadingSystem reads a messages array up to its first message that is
// not a system or developer message. The array is valid JSON (a parsed
// object's member).
func leadingSystem(msgs []byte) (leading, error) {
	l := leading{role: "system"}
	dec := json.NewDecoder(bytes.NewReader(msgs))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('[') {
		return l, errors.New("messages: not an array")
	}
	l.end = int(dec.InputOffset())
	for dec.More() {
		var m struct {
			Role string `json:"role"`
		}
		var te *json.UnmarshalTypeError
		if err := dec.Decode(&m); errors.As(err, &te) || (err == nil && m.Role != "system" && m.Role != "developer") {
			l.more = true
			return l, nil
		} else if err != nil {
			return l, err
		}
		l.n, l.end, l.role = l.n+1, int(dec.InputOffset()), m.Role
	}
	return l, nil
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
