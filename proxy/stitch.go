package proxy

import (
	"bytes"
	"encoding/json"
	"strings"

	"github.com/perpetuity/perpetuity/memory"
	"github.com/perpetuity/perpetuity/proxy/dialect"
	"github.com/perpetuity/perpetuity/proxy/sse"
)

// A stitcher makes one stream of a memory-tool loop's rounds, in the
// provider's dialect, so the harness (through a translator when the
// dialects cross) sees one continuous reply:
//
//   - the first round's opening (message_start, role chunk) only;
//   - text as it comes, every round, a blank line between rounds;
//   - never a memory call: its events are taken out (and Anthropic block
//     indexes renumbered, OpenAI tool-call indexes too);
//   - harness calls held from their first event to the round's end: they
//     go out when the round is the last, and are dropped (the model makes
//     them again) when it continues;
//   - no stop events of a round that continues; the last round's stop
//     carries the usage of every round, and an answer's stop reason when
//     only memory calls were dropped.
//
// After push returns the event that ended a round (message_stop, [DONE]),
// continuing says whether the loop goes on: the caller runs the calls,
// sends the next round and calls nextRound.
type stitcher interface {
	push(ev sse.Event) []sse.Event
	continuing() bool
	// calls and assistant describe the round that just ended.
	calls() []toolCall
	assistant() json.RawMessage
	nextRound()
	// flush returns the held events when the stream breaks off.
	flush() []sse.Event
}

func newStitcher(l *toolLoop) stitcher {
	if l.dialect == dialect.AnthropicMessages {
		return &anthropicStitcher{loop: l, byIndex: map[int]*anthBlock{}}
	}
	return &chatStitcher{loop: l, tools: map[int]*chatCall{}}
}

// stitchText tracks the text the harness was sent, for the break between
// rounds.
type stitchText struct {
	sent       strings.Builder
	breakAhead bool // the round's first text needs roundBreak before it
}

func (s *stitchText) text(t string) string {
	if t == "" {
		return t
	}
	if s.breakAhead {
		s.breakAhead = false
		if needsBreak(s.sent.String()) {
			t = roundBreak + t
		}
	}
	s.sent.WriteString(t)
	return t
}

// anthropicStitcher stitches Anthropic message streams.
type anthropicStitcher struct {
	loop *toolLoop
	stitchText
	held     []sse.Event
	holding  bool
	holdFrom int // nextOut when holding began

	blocks  []*anthBlock // this round's, in the provider's order
	byIndex map[int]*anthBlock
	nextOut int // the harness's next block index

	usage      json.RawMessage // rounds already stitched
	roundUsage json.RawMessage
	stop       string
	cont       bool
}

// anthBlock is one content block of the round, rebuilt from its events
// for the continuation request.
type anthBlock struct {
	start    json.RawMessage
	typ      string
	call     toolCall
	out      int
	text     strings.Builder
	thinking strings.Builder
	sig      string
	input    strings.Builder
	cites    []json.RawMessage
}

type anthEvent struct {
	Type         string          `json:"type"`
	Index        int             `json:"index"`
	Message      json.RawMessage `json:"message"`
	ContentBlock json.RawMessage `json:"content_block"`
	Delta        json.RawMessage `json:"delta"`
	Usage        json.RawMessage `json:"usage"`
}

func (s *anthropicStitcher) emit(ev sse.Event) []sse.Event {
	if s.holding {
		s.held = append(s.held, ev)
		return nil
	}
	return []sse.Event{ev}
}

func (s *anthropicStitcher) push(ev sse.Event) []sse.Event {
	var e anthEvent
	if json.Unmarshal(bytes.TrimSpace(ev.Data), &e) != nil {
		return s.emit(ev)
	}
	if e.Type == "" {
		e.Type = ev.Event
	}
	round := s.loop.round
	switch e.Type {
	case "message_start":
		var m struct {
			Usage json.RawMessage `json:"usage"`
		}
		_ = json.Unmarshal(e.Message, &m)
		s.roundUsage = m.Usage
		if round == 1 {
			return []sse.Event{ev}
		}
		return nil
	case "ping":
		if round == 1 {
			return s.emit(ev)
		}
		return nil
	case "content_block_start":
		var b struct {
			Type  string          `json:"type"`
			ID    string          `json:"id"`
			Name  string          `json:"name"`
			Text  string          `json:"text"`
			Input json.RawMessage `json:"input"`
		}
		_ = json.Unmarshal(e.ContentBlock, &b)
		blk := &anthBlock{start: e.ContentBlock, typ: b.Type}
		s.blocks = append(s.blocks, blk)
		s.byIndex[e.Index] = blk
		if b.Type == "tool_use" {
			blk.call = toolCall{id: b.ID, name: b.Name, memory: memory.IsTool(b.Name)}
			if in := bytes.TrimSpace(b.Input); len(in) > 0 && string(in) != "{}" {
				blk.input.Write(in)
			}
			if blk.call.memory {
				return nil
			}
			if !s.holding {
				s.holding, s.holdFrom = true, s.nextOut
			}
		}
		blk.out = s.nextOut
		s.nextOut++
		if b.Text != "" {
			blk.text.WriteString(b.Text)
		}
		if blk.out != e.Index {
			ev = rewriteEvent(ev, func(o *object) { o.set("index", blk.out) })
		}
		return s.emit(ev)
	case "content_block_delta":
		blk := s.byIndex[e.Index]
		if blk == nil {
			return s.emit(ev)
		}
		var d struct {
			Type        string          `json:"type"`
			Text        string          `json:"text"`
			Thinking    string          `json:"thinking"`
			Signature   string          `json:"signature"`
			PartialJSON string          `json:"partial_json"`
			Citation    json.RawMessage `json:"citation"`
		}
		_ = json.Unmarshal(e.Delta, &d)
		switch d.Type {
		case "text_delta":
			blk.text.WriteString(d.Text)
		case "thinking_delta":
			blk.thinking.WriteString(d.Thinking)
		case "signature_delta":
			blk.sig = d.Signature
		case "input_json_delta":
			blk.input.WriteString(d.PartialJSON)
		case "citations_delta":
			blk.cites = append(blk.cites, d.Citation)
		}
		if blk.call.memory {
			return nil
		}
		text := d.Text
		if d.Type == "text_delta" {
			text = s.text(d.Text)
		}
		if blk.out != e.Index || text != d.Text {
			ev = rewriteEvent(ev, func(o *object) {
				o.set("index", blk.out)
				if text != d.Text {
					if do, err := parseObject(e.Delta); err == nil {
						do.set("text", text)
						o.setRaw("delta", do.bytes())
					}
				}
			})
		}
		return s.emit(ev)
	case "content_block_stop":
		blk := s.byIndex[e.Index]
		if blk == nil {
			return s.emit(ev)
		}
		if blk.call.memory {
			return nil
		}
		if blk.out != e.Index {
			ev = rewriteEvent(ev, func(o *object) { o.set("index", blk.out) })
		}
		return s.emit(ev)
	case "message_delta":
		var d struct {
			StopReason string `json:"stop_reason"`
		}
		_ = json.Unmarshal(e.Delta, &d)
		s.stop = d.StopReason
		s.roundUsage = overlay(s.roundUsage, e.Usage)
		calls := s.calls()
		if s.loop.continues(calls, s.stop) {
			s.cont = true
			return nil
		}
		out := s.release()
		dropped := len(calls) > 0 && !hasHarness(calls)
		if round > 1 || dropped {
			total := sumUsage(s.usage, s.roundUsage)
			ev = rewriteEvent(ev, func(o *object) {
				if dropped && s.stop == "tool_use" {
					if do, err := parseObject(o.get("delta")); err == nil {
						do.set("stop_reason", "end_turn")
						o.setRaw("delta", do.bytes())
					}
				}
				if len(total) > 0 {
					o.setRaw("usage", total)
				}
			})
		}
		return append(out, ev)
	case "message_stop":
		if s.cont {
			return nil
		}
		return append(s.release(), ev)
	case "error":
		return append(s.release(), ev)
	}
	return s.emit(ev)
}

// release ends holding and returns the held events.
func (s *anthropicStitcher) release() []sse.Event {
	out := s.held
	s.held, s.holding = nil, false
	return out
}

func (s *anthropicStitcher) flush() []sse.Event { return s.release() }

func (s *anthropicStitcher) continuing() bool { return s.cont }

func (s *anthropicStitcher) calls() []toolCall {
	var out []toolCall
	for _, b := range s.blocks {
		if b.typ == "tool_use" {
			c := b.call
			c.args = compactArgs(b.input.String())
			out = append(out, c)
		}
	}
	return out
}

func (s *anthropicStitcher) assistant() json.RawMessage {
	var blocks []json.RawMessage
	for _, b := range s.blocks {
		o, err := parseObject(b.start)
		if err != nil {
			continue
		}
		switch b.typ {
		case "text":
			if b.text.Len() == 0 {
				continue
			}
			o.set("text", b.text.String())
			if len(b.cites) > 0 {
				o.set("citations", b.cites)
			}
		case "thinking":
			o.set("thinking", b.thinking.String())
			o.set("signature", b.sig)
		case "tool_use":
			o.setRaw("input", json.RawMessage(compactArgs(b.input.String())))
		}
		blocks = append(blocks, o.bytes())
	}
	return anthropicAssistant(blocks)
}

func (s *anthropicStitcher) nextRound() {
	s.usage = sumUsage(s.usage, s.roundUsage)
	if s.holding {
		// The held harness calls are made again in the next round.
		s.nextOut = s.holdFrom
	}
	s.held, s.holding = nil, false
	s.blocks, s.byIndex = nil, map[int]*anthBlock{}
	s.roundUsage, s.stop, s.cont = nil, "", false
	s.breakAhead = true
}

func hasMemory(calls []toolCall) bool {
	for _, c := range calls {
		if c.memory {
			return true
		}
	}
	return false
}

func hasHarness(calls []toolCall) bool {
	for _, c := range calls {
		if !c.memory {
			return true
		}
	}
	return false
}

// compactArgs makes streamed argument text one JSON object; anything that
// does not parse becomes {} (the tool reports missing arguments).
func compactArgs(s string) string {
	var b bytes.Buffer
	if strings.TrimSpace(s) == "" || json.Compact(&b, []byte(s)) != nil {
		return "{}"
	}
	return b.String()
}
