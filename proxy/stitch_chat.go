package proxy

import (
	"bytes"
	"encoding/json"
	"strings"

	"github.com/perpetuity/perpetuity/memory"
	"github.com/perpetuity/perpetuity/proxy/sse"
)

// chatStitcher stitches OpenAI chat completion streams (see stitcher).
// Later rounds' chunks take the first round's id and created time (the
// SDKs' accumulators refuse a chunk of another id) and lose the role.
type chatStitcher struct {
	loop *toolLoop
	stitchText
	held     []sse.Event
	holding  bool
	holdFrom int // nextTool when holding began

	id      json.RawMessage
	created json.RawMessage

	order    []*chatCall // this round's calls, in the provider's order
	tools    map[int]*chatCall
	nextTool int // the harness's next tool_calls index
	text     strings.Builder

	usage      json.RawMessage // rounds already stitched
	roundUsage json.RawMessage
	cont       bool // the round continues: its remaining events are dropped
}

type chatCall struct {
	toolCall
	argsText strings.Builder
	out      int
}

func (s *chatStitcher) emit(ev sse.Event) []sse.Event {
	if s.holding {
		s.held = append(s.held, ev)
		return nil
	}
	return []sse.Event{ev}
}

func (s *chatStitcher) release() []sse.Event {
	out := s.held
	s.held, s.holding = nil, false
	return out
}

func (s *chatStitcher) flush() []sse.Event { return s.release() }

func (s *chatStitcher) continuing() bool { return s.cont }

func (s *chatStitcher) push(ev sse.Event) []sse.Event {
	data := bytes.TrimSpace(ev.Data)
	if bytes.Equal(data, []byte("[DONE]")) {
		if s.cont {
			return nil
		}
		return append(s.release(), ev)
	}
	if s.plain(data) {
		return s.emit(ev)
	}
	o, err := parseObject(data)
	if err != nil {
		return s.emit(ev)
	}
	if o.has("error") {
		return append(s.release(), ev)
	}
	round := s.loop.round
	if round == 1 && s.id == nil {
		s.id, s.created = o.get("id"), o.get("created")
	}
	hasUsage := o.has("usage")
	if hasUsage {
		s.roundUsage = o.get("usage")
	}
	if s.cont {
		return nil // the usage chunk of a round that continues
	}
	changed := false
	wasHolding := s.holding
	var finish string
	choices := o.array("choices")
	for i, raw := range choices {
		c, err := parseObject(raw)
		if err != nil {
			continue
		}
		var idx int
		if json.Unmarshal(c.get("index"), &idx) == nil && idx != 0 {
			continue // only choice 0 takes part in the loop (n > 1 has no tools)
		}
		d, err := parseObject(c.get("delta"))
		if err == nil && s.delta(d, round) {
			c.setRaw("delta", d.bytes())
			choices[i] = c.bytes()
			changed = true
		}
		if c.has("finish_reason") {
			finish = c.str("finish_reason")
		}
	}
	if changed {
		o.set("choices", choices)
	}
	if finish != "" {
		calls := s.calls()
		if s.loop.continues(calls, finish) {
			s.cont = true
			return nil
		}
		if len(calls) > 0 && !hasHarness(calls) && (finish == "tool_calls" || finish == "function_call") {
			choices[0] = setFinish(choices[0], "stop")
			o.set("choices", choices)
			changed = true
		}
	}
	if round > 1 {
		o.setRaw("id", s.id)
		if s.created != nil {
			o.setRaw("created", s.created)
		}
		changed = true
	}
	if hasUsage && round > 1 {
		o.setRaw("usage", sumUsage(s.usage, s.roundUsage))
		changed = true
	}
	if changed && !hasUsage && !o.has("usage") && finish == "" && emptyChoices(choices) {
		return nil // nothing left once the memory calls and role are out
	}
	if !wasHolding && s.holding && finish == "" {
		// The chunk that opens the first harness call may also carry the
		// role or text (the API puts the first call in the role chunk):
		// that part goes out now, the call is held.
		if head, tail, ok := splitCalls(o); ok {
			s.held = append(s.held, newEvent(ev.Event, tail.bytes()))
			return []sse.Event{newEvent(ev.Event, head.bytes())}
		}
	}
	if changed {
		ev = newEvent(ev.Event, o.bytes())
	}
	if finish != "" {
		return append(s.release(), ev)
	}
	return s.emit(ev)
}

// plainChunk is the part of a chunk that tells whether it needs editing.
type plainChunk struct {
	ID      json.RawMessage `json:"id"`
	Created json.RawMessage `json:"created"`
	Choices []struct {
		Index int `json:"index"`
		Delta struct {
			Content   *string         `json:"content"`
			ToolCalls json.RawMessage `json:"tool_calls"`
		} `json:"delta"`
		FinishReason *string `json:"finish_reason"`
	} `json:"choices"`
	Usage json.RawMessage `json:"usage"`
	Error json.RawMessage `json:"error"`
}

// plain handles the common chunk of the first round, text only, which
// goes out as it came; it reports false for anything else.
func (s *chatStitcher) plain(data []byte) bool {
	if s.loop.round != 1 || s.cont {
		return false
	}
	var c plainChunk
	if json.Unmarshal(data, &c) != nil || len(c.Choices) != 1 || c.Choices[0].Index != 0 ||
		c.Choices[0].FinishReason != nil || len(c.Choices[0].Delta.ToolCalls) > 0 ||
		len(c.Usage) > 0 && !isNull(c.Usage) || len(c.Error) > 0 && !isNull(c.Error) {
		return false
	}
	if s.id == nil {
		s.id, s.created = c.ID, c.Created
	}
	if t := c.Choices[0].Delta.Content; t != nil {
		s.text.WriteString(*t)
		s.stitchText.text(*t)
	}
	return true
}

// delta takes memory calls out of a choice's delta, renumbers harness
// calls, drops a later round's role and breaks between rounds' texts; it
// reports whether the delta changed.
func (s *chatStitcher) delta(d *object, round int) bool {
	changed := false
	if round > 1 && d.has("role") {
		d.del("role")
		changed = true
	}
	if d.has("content") {
		t := d.str("content")
		s.text.WriteString(t)
		if out := s.stitchText.text(t); out != t {
			d.set("content", out)
			changed = true
		}
	}
	if !d.has("tool_calls") {
		return changed
	}
	var keep []json.RawMessage
	for _, raw := range d.array("tool_calls") {
		tc, err := parseObject(raw)
		if err != nil {
			keep = append(keep, raw)
			continue
		}
		var idx int
		_ = json.Unmarshal(tc.get("index"), &idx)
		var fn struct {
			Name      string `json:"name"`
			Arguments string `json:"arguments"`
		}
		_ = json.Unmarshal(tc.get("function"), &fn)
		call, known := s.tools[idx]
		if !known {
			call = &chatCall{toolCall: toolCall{id: callID(tc.str("id"), len(s.order)), name: fn.Name, memory: memory.IsTool(fn.Name)}}
			s.tools[idx] = call
			s.order = append(s.order, call)
			if !call.memory {
				if !s.holding {
					s.holding, s.holdFrom = true, s.nextTool
				}
				call.out = s.nextTool
				s.nextTool++
			}
		}
		call.argsText.WriteString(fn.Arguments)
		if call.memory {
			changed = true
			continue
		}
		if call.out != idx {
			tc.set("index", call.out)
			raw = tc.bytes()
			changed = true
		}
		keep = append(keep, raw)
	}
	if changed {
		if len(keep) == 0 {
			d.del("tool_calls")
		} else {
			d.set("tool_calls", keep)
		}
	}
	return changed
}

// splitCalls splits a chunk whose choice 0 carries tool calls beside other
// content into a chunk without the calls and one with only them.
func splitCalls(o *object) (head, tail *object, ok bool) {
	choices := o.array("choices")
	if len(choices) != 1 {
		return nil, nil, false
	}
	c, err := parseObject(choices[0])
	if err != nil {
		return nil, nil, false
	}
	d, err := parseObject(c.get("delta"))
	if err != nil || !d.has("tool_calls") {
		return nil, nil, false
	}
	calls := d.get("tool_calls")
	d.del("tool_calls")
	if emptyChoices([]json.RawMessage{mustJSON(map[string]json.RawMessage{"delta": d.bytes()})}) {
		return nil, nil, false
	}
	edit := func(delta []byte) *object {
		x, _ := parseObject(o.bytes())
		cc, _ := parseObject(choices[0])
		cc.setRaw("delta", delta)
		x.set("choices", []json.RawMessage{cc.bytes()})
		return x
	}
	return edit(d.bytes()), edit(mustJSON(map[string]json.RawMessage{"tool_calls": calls})), true
}

func mustJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return b
}

func setFinish(raw json.RawMessage, reason string) json.RawMessage {
	c, err := parseObject(raw)
	if err != nil {
		return raw
	}
	c.set("finish_reason", reason)
	return c.bytes()
}

// emptyChoices reports choices whose deltas carry nothing.
func emptyChoices(choices []json.RawMessage) bool {
	for _, raw := range choices {
		var c struct {
			Delta        map[string]json.RawMessage `json:"delta"`
			FinishReason json.RawMessage            `json:"finish_reason"`
		}
		if json.Unmarshal(raw, &c) != nil {
			return false
		}
		if len(c.FinishReason) > 0 && !isNull(c.FinishReason) {
			return false
		}
		for _, v := range c.Delta {
			if !isNull(v) && string(v) != `""` && string(v) != "[]" {
				return false
			}
		}
	}
	return true
}

func (s *chatStitcher) calls() []toolCall {
	out := make([]toolCall, 0, len(s.order))
	for _, c := range s.order {
		tc := c.toolCall
		tc.args = compactArgs(c.argsText.String())
		out = append(out, tc)
	}
	return out
}

func (s *chatStitcher) assistant() json.RawMessage { return chatAssistant(s.text.String(), s.calls()) }

func (s *chatStitcher) nextRound() {
	s.usage = sumUsage(s.usage, s.roundUsage)
	if s.holding {
		s.nextTool = s.holdFrom
	}
	s.held, s.holding = nil, false
	s.order, s.tools = nil, map[int]*chatCall{}
	s.text.Reset()
	s.roundUsage, s.cont = nil, false
	s.breakAhead = true
}
