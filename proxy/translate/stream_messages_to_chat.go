package translate

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/perpetuity/perpetuity/proxy/sse"
	"github.com/perpetuity/perpetuity/proxy/wire/anthropic"
	"github.com/perpetuity/perpetuity/proxy/wire/openai"
)

// NewMessagesToChatStream translates an Anthropic messages stream into
// OpenAI chat.completion.chunk events: a role chunk, content and tool-call
// deltas (id and name first, then argument fragments), a finish_reason
// chunk, the usage chunk when asked for, and data: [DONE].
func (t *Translator) NewMessagesToChatStream(opts StreamOptions) Stream {
	return &messagesToChat{
		t:       t,
		opts:    opts,
		id:      t.ids.NewID("chatcmpl-"),
		created: t.ids.Now(),
		tools:   map[int]int{},
	}
}

type messagesToChat struct {
	t       *Translator
	opts    StreamOptions
	id      string
	created int64
	model   string

	state      streamState
	started    bool
	finishSent bool
	tools      map[int]int // Anthropic block index -> OpenAI tool_calls index
	usage      anthropic.Usage
	dropped    map[string]bool
}

func (s *messagesToChat) Push(ev sse.Event) ([]sse.Event, error) {
	if s.state != stateOpen {
		s.t.log.Debug("translate: upstream event after the stream ended", "event", ev.Event)
		return nil, nil
	}
	data := bytes.TrimSpace(ev.Data)
	if len(data) == 0 {
		return nil, nil
	}
	var e anthropic.StreamEvent
	if err := json.Unmarshal(data, &e); err != nil {
		return nil, fmt.Errorf("anthropic %q event: %w", ev.Event, err)
	}
	if e.Type == "" {
		e.Type = ev.Event
	}
	var out []sse.Event
	emit := func(c openai.ChatCompletionChunk) error {
		c.ID, c.Object, c.Created, c.Model = s.id, openai.ObjectChatCompletionChunk, s.created, s.model
		c.UsageNull = s.opts.IncludeUsage && c.Usage == nil
		e, err := jsonEvent("", c)
		out = append(out, e)
		return err
	}
	delta := func(d openai.Delta) error {
		return emit(openai.ChatCompletionChunk{Choices: []openai.ChunkChoice{{Delta: d}}})
	}
	if !s.started && e.Type != anthropic.EventError && e.Type != anthropic.EventPing {
		s.started = true
		s.model = s.opts.Model
		if e.Type == anthropic.EventMessageStart && e.Message != nil {
			if s.model == "" {
				s.model = e.Message.Model
			}
			s.usage = e.Message.Usage
		}
		empty := ""
		if err := delta(openai.Delta{Role: openai.RoleAssistant, Content: &empty}); err != nil {
			return nil, err
		}
	}

	var err error
	switch e.Type {
	case anthropic.EventMessageStart, anthropic.EventPing, anthropic.EventContentBlockStop:
	case anthropic.EventContentBlockStart:
		err = s.blockStart(e, delta)
	case anthropic.EventContentBlockDelta:
		err = s.blockDelta(e, delta)
	case anthropic.EventMessageDelta:
		if e.Usage != nil {
			s.mergeUsage(*e.Usage)
		}
		if e.Delta != nil && e.Delta.StopReason != nil {
			err = s.finish(*e.Delta.StopReason, emit)
		}
	case anthropic.EventMessageStop:
		if !s.finishSent {
			err = s.finish(anthropic.StopEndTurn, emit)
		}
		if err == nil && s.opts.IncludeUsage {
			err = emit(openai.ChatCompletionChunk{Choices: []openai.ChunkChoice{}, Usage: chatUsage(s.usage)})
		}
		out = append(out, ChatDoneEvent())
		s.state = stateDone
	case anthropic.EventError:
		detail := anthropic.ErrorDetail{Type: anthropic.ErrAPI, Message: "upstream error"}
		if e.Error != nil {
			detail = *e.Error
		}
		out = append(out, ChatErrorEvent(detail.Type, detail.Message))
		s.state = stateFailed
	default:
		s.dropOnce("event "+e.Type, "unknown Anthropic stream event")
	}
	if err != nil {
		return nil, err
	}
	return out, nil
}

func (s *messagesToChat) blockStart(e anthropic.StreamEvent, delta func(openai.Delta) error) error {
	b := e.ContentBlock
	if b == nil {
		return fmt.Errorf("anthropic content_block_start %d without content_block", e.Index)
	}
	switch b.Type {
	case anthropic.BlockText:
		if b.Text != "" {
			text := b.Text
			return delta(openai.Delta{Content: &text})
		}
	case anthropic.BlockToolUse:
		n := len(s.tools)
		s.tools[e.Index] = n
		if err := delta(openai.Delta{ToolCalls: []openai.ToolCallDelta{{
			Index: n, ID: b.ID, Type: "function",
			Function: &openai.FunctionCallDelta{Name: b.Name, Arguments: ""},
		}}}); err != nil {
			return err
		}
		// The API starts tool blocks with "input":{} and streams the input
		// as deltas; anything else in the start event is real input.
		if in := bytes.TrimSpace(b.Input); len(in) > 0 && string(in) != "{}" {
			args, err := compactJSON(in)
			if err != nil {
				return fmt.Errorf("anthropic tool_use input: %w", err)
			}
			return delta(openai.Delta{ToolCalls: []openai.ToolCallDelta{{Index: n, Function: &openai.FunctionCallDelta{Arguments: args}}}})
		}
	default:
		s.dropOnce(b.Type+" block", "no OpenAI chat-completions counterpart")
	}
	return nil
}

func (s *messagesToChat) blockDelta(e anthropic.StreamEvent, delta func(openai.Delta) error) error {
	d := e.Delta
	if d == nil {
		return fmt.Errorf("anthropic content_block_delta %d without delta", e.Index)
	}
	switch d.Type {
	case anthropic.DeltaText:
		if d.Text != "" {
			text := d.Text
			return delta(openai.Delta{Content: &text})
		}
	case anthropic.DeltaInputJSON:
		n, ok := s.tools[e.Index]
		if !ok {
			s.dropOnce("input_json_delta", "not in a tool_use block")
			return nil
		}
		if d.PartialJSON != "" {
			return delta(openai.Delta{ToolCalls: []openai.ToolCallDelta{{Index: n, Function: &openai.FunctionCallDelta{Arguments: d.PartialJSON}}}})
		}
	default:
		s.dropOnce(d.Type, "no OpenAI chat-completions counterpart")
	}
	return nil
}

func (s *messagesToChat) finish(stop string, emit func(openai.ChatCompletionChunk) error) error {
	if s.finishSent {
		return nil
	}
	s.finishSent = true
	reason := finishReason(stop)
	return emit(openai.ChatCompletionChunk{Choices: []openai.ChunkChoice{{Delta: openai.Delta{}, FinishReason: &reason}}})
}

// mergeUsage applies message_delta's cumulative counts; input counts the
// older API omits there keep message_start's values.
func (s *messagesToChat) mergeUsage(u anthropic.Usage) {
	s.usage.OutputTokens = u.OutputTokens
	s.usage.InputTokens = max(s.usage.InputTokens, u.InputTokens)
	s.usage.CacheReadInputTokens = max(s.usage.CacheReadInputTokens, u.CacheReadInputTokens)
	s.usage.CacheCreationInputTokens = max(s.usage.CacheCreationInputTokens, u.CacheCreationInputTokens)
}

func (s *messagesToChat) dropOnce(what, why string) {
	if s.dropped == nil {
		s.dropped = map[string]bool{}
	}
	if !s.dropped[what] {
		s.dropped[what] = true
		s.t.dropped(what, why)
	}
}

func (s *messagesToChat) End() ([]sse.Event, error) {
	return nil, s.state.end()
}
