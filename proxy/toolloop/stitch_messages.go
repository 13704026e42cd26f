package toolloop

import (
	"bytes"
	"encoding/json"
	"strings"

	"github.com/perpetuity/perpetuity/memory"
	"github.com/perpetuity/perpetuity/proxy/sse"
	"github.com/perpetuity/perpetuity/proxy/wire/jsonx"
)

// messagesStitcher stitches Anthropic message streams (see Stitcher).
type messagesStitcher struct {
	loop *Loop
	stitchText
	hold

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
	call     call
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

func (s *messagesStitcher) Terminator(ev sse.Event) bool { return ev.Event == "message_stop" }

func (s *messagesStitcher) Push(ev sse.Event) []sse.Event {
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
			blk.call = call{id: b.ID, name: b.Name, memory: memory.IsTool(b.Name)}
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
			ev = rewriteEvent(ev, func(o *jsonx.Object) { o.Set("index", blk.out) })
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
			ev = rewriteEvent(ev, func(o *jsonx.Object) {
				o.Set("index", blk.out)
				if text != d.Text {
					if do, err := jsonx.ParseObject(e.Delta); err == nil {
						do.Set("text", text)
						o.SetRaw("delta", do.JSON())
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
			ev = rewriteEvent(ev, func(o *jsonx.Object) { o.Set("index", blk.out) })
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
			ev = rewriteEvent(ev, func(o *jsonx.Object) {
				if dropped && s.stop == "tool_use" {
					if do, err := jsonx.ParseObject(o.Get("delta")); err == nil {
						do.Set("stop_reason", "end_turn")
						o.SetRaw("delta", do.JSON())
					}
				}
				if len(total) > 0 {
					o.SetRaw("usage", total)
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

func (s *messagesStitcher) Continuing() bool { return s.cont }

func (s *messagesStitcher) Round() Round { return Round{calls: s.calls(), assistant: s.assistant()} }

func (s *messagesStitcher) calls() []call {
	var out []call
	for _, b := range s.blocks {
		if b.typ == "tool_use" {
			c := b.call
			c.args = compactArgs(b.input.String())
			out = append(out, c)
		}
	}
	return out
}

func (s *messagesStitcher) assistant() json.RawMessage {
	var blocks []json.RawMessage
	for _, b := range s.blocks {
		o, err := jsonx.ParseObject(b.start)
		if err != nil {
			continue
		}
		switch b.typ {
		case "text":
			if b.text.Len() == 0 {
				continue
			}
			o.Set("text", b.text.String())
			if len(b.cites) > 0 {
				o.Set("citations", b.cites)
			}
		case "thinking":
			o.Set("thinking", b.thinking.String())
			o.Set("signature", b.sig)
		case "tool_use":
			o.SetRaw("input", json.RawMessage(compactArgs(b.input.String())))
		}
		blocks = append(blocks, o.JSON())
	}
	return anthropicAssistant(blocks)
}

func (s *messagesStitcher) NextRound() {
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
