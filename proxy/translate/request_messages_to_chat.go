package translate

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/perpetuity/perpetuity/proxy/wire/anthropic"
	"github.com/perpetuity/perpetuity/proxy/wire/jsonx"
	"github.com/perpetuity/perpetuity/proxy/wire/openai"
)

// MessagesRequestToChat turns an Anthropic messages request body into an
// OpenAI chat-completions request body. The model name is kept as sent.
func (t *Translator) MessagesRequestToChat(body []byte) ([]byte, error) {
	req, err := anthropic.ParseMessagesRequest(body)
	if err != nil {
		return nil, err
	}
	return jsonx.Marshal(t.MessagesToChat(req))
}

// MessagesToChat is MessagesRequestToChat on decoded requests, for callers
// that edit the request (the memory frame) before or after translating.
func (t *Translator) MessagesToChat(req anthropic.MessagesRequest) openai.ChatRequest {
	out := openai.ChatRequest{Model: req.Model, Messages: []openai.Message{}, Stream: req.Stream}
	if req.Stream {
		out.StreamOptions = &openai.StreamOptions{IncludeUsage: true}
	}
	if req.System != nil {
		if text := t.systemText(*req.System); text != "" {
			out.Messages = append(out.Messages, openai.Message{Role: openai.RoleSystem, Content: openai.TextContent(text)})
		}
	}
	for i, m := range req.Messages {
		switch m.Role {
		case anthropic.RoleUser:
			out.Messages = append(out.Messages, t.userMessages(m.Content)...)
		case anthropic.RoleAssistant:
			if msg, ok := t.assistantMessage(m.Content); ok {
				out.Messages = append(out.Messages, msg)
			}
		default:
			t.dropped(fmt.Sprintf("messages[%d]", i), "role "+m.Role+" has no OpenAI counterpart")
		}
		for k := range m.Extra {
			t.dropped(fmt.Sprintf("messages[%d].%s", i, k), "no OpenAI counterpart")
		}
	}

	reasoning := isOpenAIReasoningModel(req.Model)
	if req.MaxTokens != nil {
		n := *req.MaxTokens
		if reasoning {
			out.MaxCompletionTokens = &n
		} else {
			out.MaxTokens = &n
		}
	}
	if reasoning && (req.Temperature != nil || req.TopP != nil) {
		t.dropped("temperature/top_p", "OpenAI reasoning models reject sampling parameters")
	} else {
		out.Temperature, out.TopP = req.Temperature, req.TopP
	}
	if req.TopK != nil {
		t.dropped("top_k", "no OpenAI counterpart")
	}
	if len(req.Thinking) > 0 {
		t.dropped("thinking", "no OpenAI chat-completions counterpart")
	}
	if len(req.StopSequences) > 0 {
		out.Stop = openai.StringList(req.StopSequences)
	}
	if req.Metadata != nil {
		out.User = req.Metadata.UserIDText()
	}

	out.Tools = t.messagesToolsToChat(req.Tools)
	if len(out.Tools) > 0 {
		out.ToolChoice, out.ParallelToolCalls = t.messagesToolChoiceToChat(req.ToolChoice)
	} else if req.ToolChoice != nil {
		t.dropped("tool_choice", "no tools")
	}

	keys := make([]string, 0, len(req.Extra))
	for k := range req.Extra {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		t.dropped(k, "no OpenAI counterpart")
	}
	return out
}

func (t *Translator) systemText(c anthropic.Content) string {
	for _, b := range c.Blocks {
		if b.Type != anthropic.BlockText {
			t.dropped("system "+b.Type+" block", "only text is allowed in a system message")
		}
		if len(b.CacheControl) > 0 {
			t.dropped("system cache_control", "OpenAI caches automatically")
		}
	}
	if c.String != nil {
		return *c.String
	}
	var parts []string
	for _, b := range c.Blocks {
		if b.Type == anthropic.BlockText && b.Text != "" {
			parts = append(parts, b.Text)
		}
	}
	return strings.Join(parts, "\n\n")
}

// userMessages splits one Anthropic user message: its tool results become
// tool messages (which must directly follow the assistant's tool calls),
// the rest one user message after them.
func (t *Translator) userMessages(c anthropic.Content) []openai.Message {
	if c.String != nil {
		return []openai.Message{{Role: openai.RoleUser, Content: openai.TextContent(*c.String)}}
	}
	var out []openai.Message
	var parts []openai.ContentPart
	for _, b := range c.Blocks {
		if b.Type == anthropic.BlockToolResult {
			msg, extra := t.toolMessage(b)
			out = append(out, msg)
			parts = append(parts, extra...)
			continue
		}
		if p, ok := t.blockToPart(b); ok {
			parts = append(parts, p)
		}
	}
	if len(parts) > 0 {
		out = append(out, openai.Message{Role: openai.RoleUser, Content: partsContent(parts)})
	}
	return out
}

// partsContent writes a lone text part as a plain string: older
// OpenAI-compatible servers accept only strings.
func partsContent(parts []openai.ContentPart) openai.Content {
	if len(parts) == 1 && parts[0].Type == openai.PartText {
		return openai.TextContent(parts[0].Text)
	}
	return openai.Content{Parts: parts}
}

func (t *Translator) blockToPart(b anthropic.ContentBlock) (openai.ContentPart, bool) {
	if len(b.CacheControl) > 0 {
		t.dropped(b.Type+" cache_control", "OpenAI caches automatically")
	}
	switch b.Type {
	case anthropic.BlockText:
		return openai.ContentPart{Type: openai.PartText, Text: b.Text}, true
	case anthropic.BlockImage:
		if b.Source != nil {
			switch b.Source.Type {
			case anthropic.SourceBase64:
				return openai.ContentPart{Type: openai.PartImageURL, ImageURL: &openai.ImageURL{URL: "data:" + b.Source.MediaType + ";base64," + b.Source.Data}}, true
			case anthropic.SourceURL:
				return openai.ContentPart{Type: openai.PartImageURL, ImageURL: &openai.ImageURL{URL: b.Source.URL}}, true
			}
		}
		t.dropped("image block", "only base64 and url sources have an OpenAI counterpart")
	case anthropic.BlockDocument:
		if b.Source != nil && b.Source.Type == anthropic.SourceBase64 && b.Source.MediaType == "application/pdf" {
			return openai.ContentPart{Type: openai.PartFile, File: &openai.File{
				Filename: "document.pdf",
				FileData: "data:application/pdf;base64," + b.Source.Data,
			}}, true
		}
		if b.Source != nil && b.Source.Type == anthropic.SourceText {
			return openai.ContentPart{Type: openai.PartText, Text: b.Source.Data}, true
		}
		t.dropped("document block", "only base64 PDFs and plain text have an OpenAI counterpart")
	default:
		t.dropped(b.Type+" block", "no OpenAI counterpart in a user message")
	}
	return openai.ContentPart{}, false
}

// toolMessage maps a tool_result to a tool message. OpenAI tool messages
// carry text only, so images in the result are returned to go into the
// user message that follows.
func (t *Translator) toolMessage(b anthropic.ContentBlock) (openai.Message, []openai.ContentPart) {
	msg := openai.Message{Role: openai.RoleTool, ToolCallID: sanitizeToolID(b.ToolUseID), Content: openai.TextContent("")}
	if b.IsError != nil && *b.IsError {
		t.dropped("tool_result.is_error", "no OpenAI counterpart")
	}
	if b.Content == nil {
		return msg, nil
	}
	if b.Content.String != nil {
		msg.Content = openai.TextContent(*b.Content.String)
		return msg, nil
	}
	var texts []string
	var extra []openai.ContentPart
	for _, inner := range b.Content.Blocks {
		p, ok := t.blockToPart(inner)
		switch {
		case !ok:
		case p.Type == openai.PartText:
			texts = append(texts, p.Text)
		default:
			extra = append(extra, p)
		}
	}
	msg.Content = openai.TextContent(strings.Join(texts, "\n"))
	return msg, extra
}

func (t *Translator) assistantMessage(c anthropic.Content) (openai.Message, bool) {
	msg := openai.Message{Role: openai.RoleAssistant}
	if c.String != nil {
		msg.Content = openai.TextContent(*c.String)
		return msg, true
	}
	var text strings.Builder
	for _, b := range c.Blocks {
		switch b.Type {
		case anthropic.BlockText:
			text.WriteString(b.Text)
		case anthropic.BlockToolUse:
			args := "{}"
			if len(b.Input) > 0 {
				if compact, err := compactJSON(b.Input); err == nil {
					args = compact
				}
			}
			msg.ToolCalls = append(msg.ToolCalls, openai.ToolCall{
				ID: sanitizeToolID(b.ID), Type: "function",
				Function: &openai.FunctionCall{Name: b.Name, Arguments: args},
			})
		default:
			t.dropped("assistant "+b.Type+" block", "no OpenAI counterpart")
		}
	}
	if text.Len() > 0 || len(msg.ToolCalls) == 0 {
		msg.Content = openai.TextContent(text.String())
	}
	if text.Len() == 0 && len(msg.ToolCalls) == 0 {
		return msg, false
	}
	return msg, true
}

func compactJSON(raw json.RawMessage) (string, error) {
	var buf bytes.Buffer
	if err := json.Compact(&buf, raw); err != nil {
		return "", err
	}
	return buf.String(), nil
}

func (t *Translator) messagesToolsToChat(tools []anthropic.Tool) []openai.Tool {
	var out []openai.Tool
	for _, tl := range tools {
		if !tl.IsClient() {
			t.dropped("tool "+tl.Name+" of type "+tl.Type, "server tools run at Anthropic only")
			continue
		}
		if len(tl.CacheControl) > 0 {
			t.dropped("tools[].cache_control", "OpenAI caches automatically")
		}
		schema := tl.InputSchema
		if len(schema) == 0 {
			schema = json.RawMessage(`{"type":"object","properties":{}}`)
		}
		out = append(out, openai.Tool{Type: "function", Function: &openai.FunctionDef{
			Name: tl.Name, Description: tl.Description, Parameters: schema,
		}})
	}
	return out
}

func (t *Translator) messagesToolChoiceToChat(tc *anthropic.ToolChoice) (*openai.ToolChoice, *bool) {
	if tc == nil {
		return nil, nil
	}
	var out *openai.ToolChoice
	switch tc.Type {
	case anthropic.ToolChoiceAuto:
		out = &openai.ToolChoice{Mode: openai.ToolChoiceAuto}
	case anthropic.ToolChoiceAny:
		out = &openai.ToolChoice{Mode: openai.ToolChoiceRequired}
	case anthropic.ToolChoiceNone:
		out = &openai.ToolChoice{Mode: openai.ToolChoiceNone}
	case anthropic.ToolChoiceTool:
		out = &openai.ToolChoice{Mode: openai.ToolChoiceFunction, Function: tc.Name}
	default:
		t.dropped("tool_choice "+tc.Type, "no OpenAI counterpart")
	}
	if tc.DisableParallelToolUse != nil && *tc.DisableParallelToolUse && tc.Type != anthropic.ToolChoiceNone {
		no := false
		return out, &no
	}
	return out, nil
}
