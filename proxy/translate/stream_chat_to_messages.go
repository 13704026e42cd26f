package translate

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/perpetuity/perpetuity/proxy/sse"
	"github.com/perpetuity/perpetuity/proxy/wire/anthropic"
	"github.com/perpetuity/perpetuity/proxy/wire/openai"
)

// NewChatToMessagesStream translates an OpenAI chat.completion.chunk stream
// into Anthropic events: message_start, then content_block_start / delta /
// stop for each text or tool_use block (tool arguments as input_json_delta),
// then message_delta with the stop reason and usage, and message_stop.
//
// message_delta waits for data: [DONE], because OpenAI sends usage in a
// chunk after the finish_reason one (the translated request always asks for
// it). Only choice 0 is translated.
func (t *Translator) NewChatToMessagesStream(opts StreamOptions) Stream {
	return &chatToMessages{t: t, opts: opts, id: t.ids.NewID("msg_"), tools: map[int]*toolBlock{}, current: -1}
}

type chatToMessages struct {
	t    *Translator
	opts StreamOptions
	id   string

	state   streamState
	started bool
	next    int // index of the next Anthropic block
	current int // index of the open block, -1 when none
	curText bool
	tools   map[int]*toolBlock // OpenAI tool_calls index -> its block
	finish  string
	usage   *openai.Usage
	dropped map[string]bool
}

type toolBlock struct {
	index int
	open  bool
}

func (s *chatToMessages) Push(ev sse.Event) ([]sse.Event, error) {
	if s.state != stateOpen {
		s.t.log.Debug("translate: upstream event after the stream ended")
		return nil, nil
	}
	data := bytes.TrimSpace(ev.Data)
	if len(data) == 0 {
		return nil, nil
	}
	var out []sse.Event
	emit := func(e anthropic.StreamEvent) error {
		ev, err := jsonEvent(e.Type, e)
		out = append(out, ev)
		return err
	}
	if string(data) == doneData {
		if err := s.done(emit); err != nil {
			return nil, err
		}
		return out, nil
	}
	var c openai.ChatCompletionChunk
	if err := json.Unmarshal(data, &c); err != nil {
		return nil, fmt.Errorf("openai chunk: %w", err)
	}
	if d, ok := openai.ParseErrorDetail(c.Error); ok {
		s.state = stateFailed
		if d.Message == "" {
			d.Message = "upstream error"
		}
		return []sse.Event{MessagesErrorEvent(openaiTypeToMessages(d), d.Message)}, nil
	}
	if err := s.start(c.Model, emit); err != nil {
		return nil, err
	}
	if c.Usage != nil {
		s.usage = c.Usage
	}
	for _, ch := range c.Choices {
		if ch.Index != 0 {
			s.dropOnce("choices[1:]", "Anthropic streams one message")
			continue
		}
		if err := s.choice(ch, emit); err != nil {
			return nil, err
		}
	}
	return out, nil
}

func (s *chatToMessages) start(model string, emit func(anthropic.StreamEvent) error) error {
	if s.started {
		return nil
	}
	s.started = true
	if s.opts.Model != "" {
		model = s.opts.Model
	}
	return emit(anthropic.StreamEvent{Type: anthropic.EventMessageStart, Message: &anthropic.Response{
		ID: s.id, Type: "message", Role: anthropic.RoleAssistant,
		Content: []anthropic.ContentBlock{}, Model: model,
	}})
}

func (s *chatToMessages) choice(ch openai.ChunkChoice, emit func(anthropic.StreamEvent) error) error {
	d := ch.Delta
	if (d.ReasoningContent != nil && *d.ReasoningContent != "") || (d.Reasoning != nil && *d.Reasoning != "") {
		s.dropOnce("reasoning", "a thinking block needs Anthropic's signature")
	}
	for _, text := range []*string{d.Content, d.Refusal} {
		if text == nil || *text == "" {
			continue
		}
		if !s.curText {
			if err := s.open(anthropic.ContentBlock{Type: anthropic.BlockText}, emit); err != nil {
				return err
			}
			s.curText = true
		}
		if err := emit(anthropic.StreamEvent{Type: anthropic.EventContentBlockDelta, Index: s.current,
			Delta: &anthropic.EventDelta{Type: anthropic.DeltaText, Text: *text}}); err != nil {
			return err
		}
	}
	for _, tc := range d.ToolCalls {
		if err := s.toolCall(tc, emit); err != nil {
			return err
		}
	}
	if ch.FinishReason != nil && *ch.FinishReason != "" {
		s.finish = *ch.FinishReason
		return s.closeCurrent(emit)
	}
	return nil
}

func (s *chatToMessages) toolCall(tc openai.ToolCallDelta, emit func(anthropic.StreamEvent) error) error {
	tb, known := s.tools[tc.Index]
	if !known {
		id := sanitizeToolID(tc.ID)
		if id == "" {
			id = s.t.ids.NewID("toolu_")
		}
		name := ""
		if tc.Function != nil {
			name = tc.Function.Name
		}
		if err := s.open(anthropic.ContentBlock{Type: anthropic.BlockToolUse, ID: id, Name: name}, emit); err != nil {
			return err
		}
		tb = &toolBlock{index: s.current, open: true}
		s.tools[tc.Index] = tb
	}
	if tc.Function == nil || tc.Function.Arguments == "" {
		return nil
	}
	if !tb.open {
		// Servers stream parallel calls one after the other; a fragment for
		// a call already closed still goes to its own block (SDKs accumulate
		// by index) rather than being lost.
		s.dropOnce("block order", "tool call fragment after its block was closed; sent anyway")
	}
	return emit(anthropic.StreamEvent{Type: anthropic.EventContentBlockDelta, Index: tb.index,
		Delta: &anthropic.EventDelta{Type: anthropic.DeltaInputJSON, PartialJSON: tc.Function.Arguments}})
}

// open closes the open block and starts b at the next index.
func (s *chatToMessages) open(b anthropic.ContentBlock, emit func(anthropic.StreamEvent) error) error {
	if err := s.closeCurrent(emit); err != nil {
		return err
	}
	s.current = s.next
	s.next++
	return emit(anthropic.StreamEvent{Type: anthropic.EventContentBlockStart, Index: s.current, ContentBlock: &b})
}

func (s *chatToMessages) closeCurrent(emit func(anthropic.StreamEvent) error) error {
	if s.current < 0 {
		return nil
	}
	for _, tb := range s.tools {
		if tb.index == s.current {
			tb.open = false
		}
	}
	idx := s.current
	s.current, s.curText = -1, false
	return emit(anthropic.StreamEvent{Type: anthropic.EventContentBlockStop, Index: idx})
}

func (s *chatToMessages) done(emit func(anthropic.StreamEvent) error) error {
	s.state = stateDone
	if err := s.start("", emit); err != nil {
		return err
	}
	if err := s.closeCurrent(emit); err != nil {
		return err
	}
	if s.finish == "" {
		s.t.log.Debug("translate: upstream stream ended without finish_reason; reporting end_turn")
	}
	stop := stopReason(s.finish)
	if stop == anthropic.StopEndTurn && len(s.tools) > 0 {
		// Some OpenAI-compatible servers (Ollama) say "stop" after tool calls.
		stop = anthropic.StopToolUse
	}
	var usage anthropic.Usage
	if s.usage != nil {
		usage = messagesUsage(*s.usage)
	}
	if err := emit(anthropic.StreamEvent{Type: anthropic.EventMessageDelta,
		Delta: &anthropic.EventDelta{StopReason: &stop}, Usage: &usage}); err != nil {
		return err
	}
	return emit(anthropic.StreamEvent{Type: anthropic.EventMessageStop})
}

func (s *chatToMessages) dropOnce(what, why string) {
	if s.dropped == nil {
		s.dropped = map[string]bool{}
	}
	if !s.dropped[what] {
		s.dropped[what] = true
		s.t.dropped(what, why)
	}
}

func (s *chatToMessages) End() ([]sse.Event, error) {
	return nil, s.state.end()
}
