package translate

import (
	"encoding/json"
	"fmt"

	"github.com/perpetuity/perpetuity/proxy/wire/anthropic"
	"github.com/perpetuity/perpetuity/proxy/wire/jsonx"
	"github.com/perpetuity/perpetuity/proxy/wire/openai"
)

// MessagesResponseToChat turns an Anthropic non-streaming response body
// into an OpenAI chat completion. model is the name the client asked for;
// empty keeps the upstream's.
func (t *Translator) MessagesResponseToChat(body []byte, model string) ([]byte, error) {
	var in anthropic.Response
	if err := json.Unmarshal(body, &in); err != nil {
		return nil, fmt.Errorf("messages response: %w", err)
	}
	if model == "" {
		model = in.Model
	}
	msg := openai.ResponseMessage{Role: openai.RoleAssistant, Annotations: []json.RawMessage{}}
	var text []byte
	haveText := false
	for _, b := range in.Content {
		switch b.Type {
		case anthropic.BlockText:
			text = append(text, b.Text...)
			haveText = true
		case anthropic.BlockToolUse:
			args := "{}"
			if len(b.Input) > 0 {
				if compact, err := compactJSON(b.Input); err == nil {
					args = compact
				}
			}
			msg.ToolCalls = append(msg.ToolCalls, openai.ToolCall{
				ID: b.ID, Type: "function",
				Function: &openai.FunctionCall{Name: b.Name, Arguments: args},
			})
		default:
			t.dropped("response "+b.Type+" block", "no OpenAI counterpart")
		}
	}
	if haveText || len(msg.ToolCalls) == 0 {
		s := string(text)
		msg.Content = &s
	}
	stop := ""
	if in.StopReason != nil {
		stop = *in.StopReason
	}
	out := openai.ChatCompletion{
		ID:      t.ids.NewID("chatcmpl-"),
		Object:  openai.ObjectChatCompletion,
		Created: t.ids.Now(),
		Model:   model,
		Choices: []openai.Choice{{Index: 0, Message: msg, FinishReason: finishReason(stop)}},
		Usage:   chatUsage(in.Usage),
	}
	return jsonx.Marshal(out)
}

// ChatResponseToMessages turns an OpenAI non-streaming chat completion body
// into an Anthropic message. model is the name the client asked for; empty
// keeps the upstream's. Only the first choice is used (n is never sent).
func (t *Translator) ChatResponseToMessages(body []byte, model string) ([]byte, error) {
	var in openai.ChatCompletion
	if err := json.Unmarshal(body, &in); err != nil {
		return nil, fmt.Errorf("chat completion: %w", err)
	}
	if model == "" {
		model = in.Model
	}
	out := anthropic.Response{
		ID:      t.ids.NewID("msg_"),
		Type:    "message",
		Role:    anthropic.RoleAssistant,
		Content: []anthropic.ContentBlock{},
		Model:   model,
	}
	finish := openai.FinishStop
	if len(in.Choices) > 0 {
		c := in.Choices[0]
		if len(in.Choices) > 1 {
			t.dropped("choices[1:]", "Anthropic returns one message")
		}
		finish = c.FinishReason
		if c.Message.ReasoningContent != "" || c.Message.Reasoning != "" {
			t.dropped("reasoning", "a thinking block needs Anthropic's signature")
		}
		if c.Message.Content != nil && *c.Message.Content != "" {
			out.Content = append(out.Content, anthropic.ContentBlock{Type: anthropic.BlockText, Text: *c.Message.Content})
		} else if c.Message.Refusal != nil && *c.Message.Refusal != "" {
			out.Content = append(out.Content, anthropic.ContentBlock{Type: anthropic.BlockText, Text: *c.Message.Refusal})
			finish = openai.FinishContentFilter
		}
		for _, tc := range c.Message.ToolCalls {
			if tc.Function == nil {
				t.dropped("tool call of type "+tc.Type, "only function tools have an Anthropic counterpart")
				continue
			}
			out.Content = append(out.Content, anthropic.ContentBlock{
				Type:  anthropic.BlockToolUse,
				ID:    sanitizeToolID(tc.ID),
				Name:  tc.Function.Name,
				Input: t.argumentsToInput(tc.Function.Arguments),
			})
		}
	}
	stop := stopReason(finish)
	if stop == anthropic.StopEndTurn && hasToolUse(out.Content) {
		// Some OpenAI-compatible servers (Ollama) say "stop" after tool calls.
		stop = anthropic.StopToolUse
	}
	out.StopReason = &stop
	if in.Usage != nil {
		out.Usage = messagesUsage(*in.Usage)
	}
	return jsonx.Marshal(out)
}

func hasToolUse(blocks []anthropic.ContentBlock) bool {
	for _, b := range blocks {
		if b.Type == anthropic.BlockToolUse {
			return true
		}
	}
	return false
}
