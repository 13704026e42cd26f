package toolloop

import (
	"bytes"
	"encoding/json"
	"strings"

	"github.com/perpetuity/perpetuity/memory"
	"github.com/perpetuity/perpetuity/proxy/sse"
	"github.com/perpetuity/perpetuity/proxy/wire/jsonx"
)

// chatStitcher stitches OpenAI chat completion streams (see Stitcher).
// Later rounds' chunks take the first round's id and created time (the
// SDKs' accumulators refuse a chunk of another id) and lose the role.
type chatStitcher struct {
	loop *Loop
	stitchText
	hold

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
	call
	argsText strings.Builder
	out      int
}

func (s *chatStitcher) Terminator(ev sse.Event) bool {
	return bytes.Equal(bytes.TrimSpace(ev.Data), []byte("[DONE]"))
}

func (s *chatStitcher) Continuing() bool { return s.cont }

func (s *chatStitcher) Round() Round { return Round{calls: s.calls(), assistant: s.assistant()} }

func (s *chatStitcher) Push(ev sse.Event) []sse.Event {
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
	o, err := jsonx.ParseObject(data)
	if err != nil {
		return s.emit(ev)
	}
	if o.Has("error") {
		return append(s.release(), ev)
	}
	round := s.loop.round
	if round == 1 && s.id == nil {
		s.id, s.created = o.Get("id"), o.Get("created")
	}
	hasUsage := o.Has("usage")
	if hasUsage {
		s.roundUsage = o.Get("usage")
	}
	if s.cont {
		return nil // the usage chunk of a round that continues
	}
	changed := false
	wasHolding := s.holding
	var finish string
	choices := o.Array("choices")
	for i, raw := range choices {
		c, err := jsonx.ParseObject(raw)
		if err != nil {
			continue
		}
		var idx int
		if json.Unmarshal(c.Get("index"), &idx) == nil && idx != 0 {
			continue // only choice 0 takes part in the loop (n > 1 has no tools)
		}
		d, err := jsonx.ParseObject(c.Get("delta"))
		if err == nil && s.delta(d, round) {
			c.SetRaw("delta", d.JSON())
			choices[i] = c.JSON()
			changed = true
		}
		if c.Has("finish_reason") {
			finish = c.Str("finish_reason")
		}
	}
	if changed {
		o.Set("choices", choices)
	}
	if finish != "" {
		calls := s.calls()
		if s.loop.continues(calls, finish) {
			s.cont = true
			return nil
		}
		if len(calls) > 0 && !hasHarness(calls) && (finish == "tool_calls" || finish == "function_call") {
			choices[0] = setFinish(choices[0], "stop")
			o.Set("choices", choices)
			changed = true
		}
	}
	if round > 1 {
		o.SetRaw("id", s.id)
		if s.created != nil {
			o.SetRaw("created", s.created)
		}
		changed = true
	}
	if hasUsage && round > 1 {
		o.SetRaw("usage", sumUsage(s.usage, s.roundUsage))
		changed = true
	}
	if changed && !hasUsage && !o.Has("usage") && finish == "" && emptyChoices(choices) {
		return nil // nothing left once the memory calls and role are out
	}
	if !wasHolding && s.holding && finish == "" {
		// The chunk that opens the first harness call may also carry the
		// role or text (the API puts the first call in the role chunk):
		// that part goes out now, the call is held.
		if head, tail, ok := splitCalls(o); ok {
			s.held = append(s.held, newEvent(ev.Event, tail.JSON()))
			return []sse.Event{newEvent(ev.Event, head.JSON())}
		}
	}
	if changed {
		ev = newEvent(ev.Event, o.JSON())
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
		len(c.Usage) > 0 && !jsonx.IsNull(c.Usage) || len(c.Error) > 0 && !jsonx.IsNull(c.Error) {
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
func (s *chatStitcher) delta(d *jsonx.Object, round int) bool {
	changed := false
	if round > 1 && d.Has("role") {
		d.Del("role")
		changed = true
	}
	if d.Has("content") {
		t := d.Str("content")
		s.text.WriteString(t)
		if out := s.stitchText.text(t); out != t {
			d.Set("content", out)
			changed = true
		}
	}
	if !d.Has("tool_calls") {
		return changed
	}
	var keep []json.RawMessage
	for _, raw := range d.Array("tool_calls") {
		tc, err := jsonx.ParseObject(raw)
		if err != nil {
			keep = append(keep, raw)
			continue
		}
		var idx int
		_ = json.Unmarshal(tc.Get("index"), &idx)
		var fn struct {
			Name      string `json:"name"`
			Arguments string `json:"arguments"`
		}
		_ = json.Unmarshal(tc.Get("function"), &fn)
		cc, known := s.tools[idx]
		if !known {
			cc = &chatCall{call: call{id: callID(tc.Str("id"), len(s.order)), name: fn.Name, memory: memory.IsTool(fn.Name)}}
			s.tools[idx] = cc
			s.order = append(s.order, cc)
			if !cc.memory {
				if !s.holding {
					s.holding, s.holdFrom = true, s.nextTool
				}
				cc.out = s.nextTool
				s.nextTool++
			}
		}
		cc.argsText.WriteString(fn.Arguments)
		if cc.memory {
			changed = true
			continue
		}
		if cc.out != idx {
			tc.Set("index", cc.out)
			raw = tc.JSON()
			changed = true
		}
		keep = append(keep, raw)
	}
	if changed {
		if len(keep) == 0 {
			d.Del("tool_calls")
		} else {
			d.Set("tool_calls", keep)
		}
	}
	return changed
}

// splitCalls splits a chunk whose choice 0 carries tool calls beside other
// content into a chunk without the calls and one with only them.
func splitCalls(o *jsonx.Object) (head, tail *jsonx.Object, ok bool) {
	choices := o.Array("choices")
	if len(choices) != 1 {
		return nil, nil, false
	}
	c, err := jsonx.ParseObject(choices[0])
	if err != nil {
		return nil, nil, false
	}
	d, err := jsonx.ParseObject(c.Get("delta"))
	if err != nil || !d.Has("tool_calls") {
		return nil, nil, false
	}
	calls := d.Get("tool_calls")
	d.Del("tool_calls")
	if emptyChoices([]json.RawMessage{mustJSON(map[string]json.RawMessage{"delta": d.JSON()})}) {
		return nil, nil, false
	}
	edit := func(delta []byte) *jsonx.Object {
		x, _ := jsonx.ParseObject(o.JSON())
		cc, _ := jsonx.ParseObject(choices[0])
		cc.SetRaw("delta", delta)
		x.Set("choices", []json.RawMessage{cc.JSON()})
		return x
	}
	return edit(d.JSON()), edit(mustJSON(map[string]json.RawMessage{"tool_calls": calls})), true
}

func mustJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return b
}

func setFinish(raw json.RawMessage, reason string) json.RawMessage {
	c, err := jsonx.ParseObject(raw)
	if err != nil {
		return raw
	}
	c.Set("finish_reason", reason)
	return c.JSON()
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
		if len(c.FinishReason) > 0 && !jsonx.IsNull(c.FinishReason) {
			return false
		}
		for _, v := range c.Delta {
			if !jsonx.IsNull(v) && string(v) != `""` && string(v) != "[]" {
				return false
			}
		}
	}
	return true
}

func (s *chatStitcher) calls() []call {
	out := make([]call, 0, len(s.order))
	for _, c := range s.order {
		tc := c.call
		tc.args = compactArgs(c.argsText.String())
		out = append(out, tc)
	}
	return out
}

func (s *chatStitcher) assistant() json.RawMessage { return chatAssistant(s.text.String(), s.calls()) }

func (s *chatStitcher) NextRound() {
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
