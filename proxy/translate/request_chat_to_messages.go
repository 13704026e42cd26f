package translate

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/perpetuity/perpetuity/proxy/wire/anthropic"
	"github.com/perpetuity/perpetuity/proxy/wire/jsonx"
	"github.com/perpetuity/perpetuity/proxy/wire/openai"
)

// ChatRequestToMessages turns an OpenAI chat-completions request body into
// an Anthropic messages request body. The model name is kept as sent.
func (t *Translator) ChatRequestToMessages(body []byte) ([]byte, error) {
	req, err := openai.ParseChatRequest(body)
	if err != nil {
		return nil, err
	}
	return jsonx.Marshal(t.ChatToMessages(req))
}

// ChatToMessages is ChatRequestToMessages on decoded requests, for callers
// that edit the request (the memory frame) before or after translating.
func (t *Translator) ChatToMessages(req openai.ChatRequest) anthropic.MessagesRequest {
	out := anthropic.MessagesRequest{Model: req.Model, Stream: req.Stream}

	var system []anthropic.ContentBlock
	var msgs []anthropic.Message
	for i, m := range req.Messages {
		switch m.Role {
		case openai.RoleSystem, openai.RoleDeveloper:
			system = append(system, t.textBlocks(m.Content, "system")...)
		case openai.RoleUser:
			msgs = append(msgs, blockMessage(anthropic.RoleUser, t.userBlocks(m.Content)))
		case openai.RoleAssistant:
			msgs = append(msgs, blockMessage(anthropic.RoleAssistant, t.assistantBlocks(m)))
		case openai.RoleTool:
			msgs = append(msgs, blockMessage(anthropic.RoleUser, []anthropic.ContentBlock{t.toolResultBlock(m)}))
		default:
			t.dropped(fmt.Sprintf("messages[%d]", i), "role "+m.Role+" has no Anthropic counterpart")
			continue
		}
		if m.Name != "" {
			t.dropped(fmt.Sprintf("messages[%d].name", i), "no Anthropic counterpart")
		}
		for k := range m.Extra {
			t.dropped(fmt.Sprintf("messages[%d].%s", i, k), "no Anthropic counterpart")
		}
	}
	out.Messages = anthropic.NormalizeMessages(msgs)
	if len(system) > 0 {
		out.System = systemContent(system)
	}

	maxTokens := DefaultMaxTokens(req.Model)
	switch {
	case req.MaxCompletionTokens != nil:
		maxTokens = *req.MaxCompletionTokens
	case req.MaxTokens != nil:
		maxTokens = *req.MaxTokens
	}
	out.MaxTokens = &maxTokens

	if req.Temperature != nil {
		temp := min(max(*req.Temperature, 0), 1)
		if temp != *req.Temperature {
			t.log.Debug("translate: clamped temperature to Anthropic's 0..1", "from", *req.Temperature, "to", temp)
		}
		out.Temperature = &temp
	}
	if req.TopP != nil {
		if out.Temperature != nil {
			t.dropped("top_p", "newer Claude models reject temperature and top_p together")
		} else {
			out.TopP = req.TopP
		}
	}
	if len(req.Stop) > 0 {
		out.StopSequences = req.Stop
	}
	if req.User != "" {
		out.Metadata = anthropic.UserIDMetadata(req.User)
	}

	out.Tools = t.chatToolsToMessages(req.Tools)
	out.ToolChoice = t.chatToolChoiceToMessages(req.ToolChoice, req.ParallelToolCalls, len(out.Tools) > 0)

	keys := make([]string, 0, len(req.Extra))
	for k := range req.Extra {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		t.dropped(k, "no Anthropic counterpart")
	}
	return out
}

func blockMessage(role string, blocks []anthropic.ContentBlock) anthropic.Message {
	return anthropic.Message{Role: role, Content: anthropic.Content{Blocks: blocks}}
}

// systemContent keeps the system prompt a plain string when it is one
// uncached text, as a harness would write it.
func systemContent(blocks []anthropic.ContentBlock) *anthropic.Content {
	if len(blocks) == 1 && len(blocks[0].CacheControl) == 0 {
		c := anthropic.TextContent(blocks[0].Text)
		return &c
	}
	return &anthropic.Content{Blocks: blocks}
}

// textBlocks is the non-empty text of c as blocks (Anthropic rejects empty
// text blocks); non-text parts are dropped.
func (t *Translator) textBlocks(c openai.Content, where string) []anthropic.ContentBlock {
	if c.String != nil {
		if *c.String == "" {
			return nil
		}
		return []anthropic.ContentBlock{{Type: anthropic.BlockText, Text: *c.String}}
	}
	var out []anthropic.ContentBlock
	for _, p := range c.Parts {
		switch p.Type {
		case openai.PartText, openai.PartRefusal:
			text := p.Text
			if p.Type == openai.PartRefusal {
				text = p.Refusal
			}
			if text != "" {
				out = append(out, anthropic.ContentBlock{Type: anthropic.BlockText, Text: text, CacheControl: p.CacheControl})
			}
		default:
			t.dropped(where+" "+p.Type+" part", "only text is allowed here")
		}
	}
	return out
}

func (t *Translator) userBlocks(c openai.Content) []anthropic.ContentBlock {
	if c.String != nil {
		return t.textBlocks(c, "user")
	}
	var out []anthropic.ContentBlock
	for _, p := range c.Parts {
		switch p.Type {
		case openai.PartText:
			if p.Text != "" {
				out = append(out, anthropic.ContentBlock{Type: anthropic.BlockText, Text: p.Text, CacheControl: p.CacheControl})
			}
		case openai.PartImageURL:
			if b, ok := t.imageBlock(p); ok {
				out = append(out, b)
			}
		case openai.PartFile:
			if b, ok := t.fileBlock(p); ok {
				out = append(out, b)
			}
		default:
			t.dropped("user "+p.Type+" part", "no Anthropic counterpart")
		}
	}
	return out
}

func (t *Translator) imageBlock(p openai.ContentPart) (anthropic.ContentBlock, bool) {
	if p.ImageURL == nil || p.ImageURL.URL == "" {
		t.dropped("image_url part", "no URL")
		return anthropic.ContentBlock{}, false
	}
	if p.ImageURL.Detail != "" {
		t.dropped("image_url.detail", "no Anthropic counterpart")
	}
	src, ok := sourceFromURL(p.ImageURL.URL)
	if !ok {
		t.dropped("image_url part", "neither an http(s) URL nor a base64 data: URL")
		return anthropic.ContentBlock{}, false
	}
	return anthropic.ContentBlock{Type: anthropic.BlockImage, Source: src, CacheControl: p.CacheControl}, true
}

// fileBlock maps an inline PDF to a document block; uploaded file ids live
// at OpenAI and mean nothing to Anthropic.
func (t *Translator) fileBlock(p openai.ContentPart) (anthropic.ContentBlock, bool) {
	if p.File == nil || p.File.FileData == "" {
		t.dropped("file part", "only inline file_data has an Anthropic counterpart")
		return anthropic.ContentBlock{}, false
	}
	src, ok := sourceFromURL(p.File.FileData)
	if !ok || src.Type != anthropic.SourceBase64 {
		t.dropped("file part", "file_data is not a base64 data: URL")
		return anthropic.ContentBlock{}, false
	}
	return anthropic.ContentBlock{Type: anthropic.BlockDocument, Source: src, CacheControl: p.CacheControl}, true
}

// sourceFromURL reads "data:<media type>;base64,<data>" or an http(s) URL.
func sourceFromURL(u string) (*anthropic.Source, bool) {
	if rest, ok := strings.CutPrefix(u, "data:"); ok {
		meta, data, ok := strings.Cut(rest, ",")
		mediaType, isBase64 := strings.CutSuffix(meta, ";base64")
		if !ok || !isBase64 || mediaType == "" {
			return nil, false
		}
		return &anthropic.Source{Type: anthropic.SourceBase64, MediaType: mediaType, Data: data}, true
	}
	if strings.HasPrefix(u, "https://") || strings.HasPrefix(u, "http://") {
		return &anthropic.Source{Type: anthropic.SourceURL, URL: u}, true
	}
	return nil, false
}

func (t *Translator) assistantBlocks(m openai.Message) []anthropic.ContentBlock {
	blocks := t.textBlocks(m.Content, "assistant")
	if m.Refusal != nil && *m.Refusal != "" && m.Content.IsNull() {
		blocks = append(blocks, anthropic.ContentBlock{Type: anthropic.BlockText, Text: *m.Refusal})
	}
	for _, tc := range m.ToolCalls {
		if tc.Function == nil {
			t.dropped("tool call of type "+tc.Type, "only function tools have an Anthropic counterpart")
			continue
		}
		blocks = append(blocks, anthropic.ContentBlock{
			Type:  anthropic.BlockToolUse,
			ID:    sanitizeToolID(tc.ID),
			Name:  tc.Function.Name,
			Input: t.argumentsToInput(tc.Function.Arguments),
		})
	}
	return blocks
}

// argumentsToInput turns OpenAI's arguments string into Anthropic's input
// object. Models occasionally emit invalid JSON; Anthropic requires an
// object, so that becomes {}.
func (t *Translator) argumentsToInput(args string) json.RawMessage {
	raw := json.RawMessage(strings.TrimSpace(args))
	if len(raw) == 0 {
		return json.RawMessage("{}")
	}
	if !json.Valid(raw) || raw[0] != '{' {
		t.dropped("tool call arguments", "not a JSON object")
		return json.RawMessage("{}")
	}
	return raw
}

func (t *Translator) toolResultBlock(m openai.Message) anthropic.ContentBlock {
	b := anthropic.ContentBlock{Type: anthropic.BlockToolResult, ToolUseID: sanitizeToolID(m.ToolCallID)}
	switch {
	case m.Content.String != nil:
		if *m.Content.String != "" {
			c := anthropic.TextContent(*m.Content.String)
			b.Content = &c
		}
	case m.Content.Parts != nil:
		if blocks := t.userBlocks(m.Content); len(blocks) > 0 {
			b.Content = &anthropic.Content{Blocks: blocks}
		}
	}
	return b
}

func (t *Translator) chatToolsToMessages(tools []openai.Tool) []anthropic.Tool {
	var out []anthropic.Tool
	for _, tl := range tools {
		if tl.Type != "function" || tl.Function == nil {
			t.dropped("tool of type "+tl.Type, "only function tools have an Anthropic counterpart")
			continue
		}
		schema := tl.Function.Parameters
		if len(schema) == 0 || string(schema) == "null" {
			schema = json.RawMessage(`{"type":"object","properties":{}}`)
		}
		if tl.Function.Strict != nil {
			t.dropped("tools[].function.strict", "no Anthropic counterpart")
		}
		out = append(out, anthropic.Tool{Name: tl.Function.Name, Description: tl.Function.Description, InputSchema: schema})
	}
	return out
}

func (t *Translator) chatToolChoiceToMessages(tc *openai.ToolChoice, parallel *bool, haveTools bool) *anthropic.ToolChoice {
	if !haveTools {
		if tc != nil {
			t.dropped("tool_choice", "no tools")
		}
		return nil
	}
	var out *anthropic.ToolChoice
	if tc != nil {
		switch tc.Mode {
		case openai.ToolChoiceAuto:
			out = &anthropic.ToolChoice{Type: anthropic.ToolChoiceAuto}
		case openai.ToolChoiceRequired:
			out = &anthropic.ToolChoice{Type: anthropic.ToolChoiceAny}
		case openai.ToolChoiceNone:
			out = &anthropic.ToolChoice{Type: anthropic.ToolChoiceNone}
		case openai.ToolChoiceFunction:
			out = &anthropic.ToolChoice{Type: anthropic.ToolChoiceTool, Name: tc.Function}
		default:
			t.dropped("tool_choice "+tc.Mode, "no Anthropic counterpart")
		}
	}
	if parallel != nil && !*parallel {
		if out == nil {
			out = &anthropic.ToolChoice{Type: anthropic.ToolChoiceAuto}
		}
		if out.Type != anthropic.ToolChoiceNone {
			yes := true
			out.DisableParallelToolUse = &yes
		}
	}
	return out
}
