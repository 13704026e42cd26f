package openai

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/perpetuity/perpetuity/proxy/wire/jsonx"
)

// ChatRequest is the body of POST /v1/chat/completions.
type ChatRequest struct {
	Model               string         `json:"model"`
	Messages            []Message      `json:"messages"`
	MaxTokens           *int64         `json:"max_tokens,omitempty"`
	MaxCompletionTokens *int64         `json:"max_completion_tokens,omitempty"`
	Temperature         *float64       `json:"temperature,omitempty"`
	TopP                *float64       `json:"top_p,omitempty"`
	Stop                StringList     `json:"stop,omitempty"`
	Stream              bool           `json:"stream,omitempty"`
	StreamOptions       *StreamOptions `json:"stream_options,omitempty"`
	Tools               []Tool         `json:"tools,omitempty"`
	ToolChoice          *ToolChoice    `json:"tool_choice,omitempty"`
	ParallelToolCalls   *bool          `json:"parallel_tool_calls,omitempty"`
	User                string         `json:"user,omitempty"`
	// Extra holds every other key (n, seed, response_format, vendor
	// extensions...) verbatim.
	Extra map[string]json.RawMessage `json:"-"`
}

type chatRequest ChatRequest

// UnmarshalJSON implements json.Unmarshaler.
func (r *ChatRequest) UnmarshalJSON(data []byte) error {
	return jsonx.UnmarshalExtra(data, (*chatRequest)(r), &r.Extra)
}

// MarshalJSON implements json.Marshaler.
func (r ChatRequest) MarshalJSON() ([]byte, error) {
	return jsonx.EncodeObject(chatRequest(r), r.Extra)
}

// SystemText is the text of every system and developer message, in order,
// separated by a blank line.
func (r ChatRequest) SystemText() string {
	var parts []string
	for _, m := range r.Messages {
		if m.Role == RoleSystem || m.Role == RoleDeveloper {
			if t := m.Text(); t != "" {
				parts = append(parts, t)
			}
		}
	}
	return strings.Join(parts, "\n\n")
}

// UserHint is the API-standard "user" field: a hint about who is asking,
// not an identity (harnesses put per-session values there).
func (r ChatRequest) UserHint() string { return r.User }

// IncludeUsage reports whether a streaming caller asked for the final usage
// chunk (stream_options.include_usage).
func (r ChatRequest) IncludeUsage() bool {
	return r.StreamOptions != nil && r.StreamOptions.IncludeUsage
}

// Message roles.
const (
	RoleSystem    = "system"
	RoleDeveloper = "developer"
	RoleUser      = "user"
	RoleAssistant = "assistant"
	RoleTool      = "tool"
	RoleFunction  = "function"
)

// Message is one entry of ChatRequest.Messages.
type Message struct {
	Role       string     `json:"role"`
	Content    Content    `json:"content"`
	Name       string     `json:"name,omitempty"`
	ToolCalls  []ToolCall `json:"tool_calls,omitempty"`
	ToolCallID string     `json:"tool_call_id,omitempty"`
	Refusal    *string    `json:"refusal,omitempty"`
	// Extra holds every other key (audio, function_call, ...) verbatim.
	Extra map[string]json.RawMessage `json:"-"`
}

type message Message

// UnmarshalJSON implements json.Unmarshaler.
func (m *Message) UnmarshalJSON(data []byte) error {
	return jsonx.UnmarshalExtra(data, (*message)(m), &m.Extra)
}

// MarshalJSON implements json.Marshaler.
func (m Message) MarshalJSON() ([]byte, error) {
	return jsonx.EncodeObject(message(m), m.Extra)
}

// Text is the message's text: the string content, or its text parts joined
// by newlines. Images, audio and tool calls are not text.
func (m Message) Text() string { return m.Content.Text() }

// Content is a message's content: a string, an array of parts, or null.
// Exactly one of String and Parts is set, or neither for null.
type Content struct {
	String *string
	Parts  []ContentPart
}

// TextContent returns a string content.
func TextContent(s string) Content { return Content{String: &s} }

// IsNull reports whether the content is null or absent.
func (c Content) IsNull() bool { return c.String == nil && c.Parts == nil }

// Text is the string content, or the text parts joined by newlines.
func (c Content) Text() string {
	if c.String != nil {
		return *c.String
	}
	var parts []string
	for _, p := range c.Parts {
		if p.Type == PartText {
			parts = append(parts, p.Text)
		}
	}
	return strings.Join(parts, "\n")
}

// UnmarshalJSON implements json.Unmarshaler.
func (c *Content) UnmarshalJSON(data []byte) error {
	return jsonx.UnmarshalContent(data, &c.String, &c.Parts)
}

// MarshalJSON implements json.Marshaler.
func (c Content) MarshalJSON() ([]byte, error) {
	return jsonx.MarshalContent(c.String, c.Parts)
}

// Content part types.
const (
	PartText       = "text"
	PartImageURL   = "image_url"
	PartInputAudio = "input_audio"
	PartFile       = "file"
	PartRefusal    = "refusal"
)

// ContentPart is one element of an array content.
type ContentPart struct {
	Type       string          `json:"type"`
	Text       string          `json:"text,omitempty"`
	ImageURL   *ImageURL       `json:"image_url,omitempty"`
	InputAudio json.RawMessage `json:"input_audio,omitempty"`
	File       *File           `json:"file,omitempty"`
	Refusal    string          `json:"refusal,omitempty"`
	// CacheControl is not OpenAI's but some OpenAI-compatible gateways
	// (OpenRouter, LiteLLM) accept Anthropic's cache_control on text parts.
	CacheControl json.RawMessage `json:"cache_control,omitempty"`
	// Extra holds every other key verbatim.
	Extra map[string]json.RawMessage `json:"-"`
}

type contentPart ContentPart

// UnmarshalJSON implements json.Unmarshaler. Decoding is lenient: a key
// whose value does not fit its field (say "image_url" as a bare string, which
// some servers accept) stays in Extra verbatim and is written back in place.
func (p *ContentPart) UnmarshalJSON(data []byte) error {
	return jsonx.UnmarshalExtraLenient(data, (*contentPart)(p), &p.Extra)
}

// MarshalJSON implements json.Marshaler. A text part always carries its
// text key, even when empty.
func (p ContentPart) MarshalJSON() ([]byte, error) {
	o := jsonx.Object{}
	o.UseExtra(p.Extra)
	o.Set("type", p.Type)
	if p.Type == PartText || p.Text != "" {
		o.Set("text", p.Text)
	}
	if p.ImageURL != nil {
		o.Set("image_url", p.ImageURL)
	}
	if len(p.InputAudio) > 0 {
		o.SetRaw("input_audio", p.InputAudio)
	}
	if p.File != nil {
		o.Set("file", p.File)
	}
	if p.Type == PartRefusal || p.Refusal != "" {
		o.Set("refusal", p.Refusal)
	}
	if len(p.CacheControl) > 0 {
		o.SetRaw("cache_control", p.CacheControl)
	}
	o.SetExtra(p.Extra)
	return o.Bytes()
}

// ImageURL is the image_url of an image part: an http(s) URL or a data: URL.
type ImageURL struct {
	URL    string `json:"url"`
	Detail string `json:"detail,omitempty"`
}

// File is the file of a file part (inline data or an uploaded file's id).
type File struct {
	FileData string `json:"file_data,omitempty"`
	FileID   string `json:"file_id,omitempty"`
	Filename string `json:"filename,omitempty"`
}

// ToolCall is one tool call of an assistant message.
type ToolCall struct {
	ID       string        `json:"id"`
	Type     string        `json:"type"`
	Function *FunctionCall `json:"function,omitempty"`
	// Extra holds every other key (custom tool calls) verbatim.
	Extra map[string]json.RawMessage `json:"-"`
}

type toolCall ToolCall

// UnmarshalJSON implements json.Unmarshaler.
func (c *ToolCall) UnmarshalJSON(data []byte) error {
	return jsonx.UnmarshalExtra(data, (*toolCall)(c), &c.Extra)
}

// MarshalJSON implements json.Marshaler.
func (c ToolCall) MarshalJSON() ([]byte, error) {
	return jsonx.EncodeObject(toolCall(c), c.Extra)
}

// FunctionCall is the function a tool call invokes; Arguments is a JSON
// object encoded as a string.
type FunctionCall struct {
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
}

// Tool is one entry of ChatRequest.Tools.
type Tool struct {
	Type     string       `json:"type"`
	Function *FunctionDef `json:"function,omitempty"`
	// Extra holds every other key (custom tools) verbatim.
	Extra map[string]json.RawMessage `json:"-"`
}

type tool Tool

// UnmarshalJSON implements json.Unmarshaler.
func (t *Tool) UnmarshalJSON(data []byte) error {
	return jsonx.UnmarshalExtra(data, (*tool)(t), &t.Extra)
}

// MarshalJSON implements json.Marshaler.
func (t Tool) MarshalJSON() ([]byte, error) {
	return jsonx.EncodeObject(tool(t), t.Extra)
}

// FunctionDef declares a function tool; Parameters is a JSON schema.
type FunctionDef struct {
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	Parameters  json.RawMessage `json:"parameters,omitempty"`
	Strict      *bool           `json:"strict,omitempty"`
}

// Tool choice modes. ToolChoiceFunction is the object form naming one
// function.
const (
	ToolChoiceNone     = "none"
	ToolChoiceAuto     = "auto"
	ToolChoiceRequired = "required"
	ToolChoiceFunction = "function"
)

// ToolChoice is "none", "auto", "required", or an object. Mode is the string
// or the object's type; Function is set for {"type":"function"}; Raw keeps
// any object form verbatim so unknown shapes survive re-encoding.
type ToolChoice struct {
	Mode     string
	Function string
	Raw      json.RawMessage
}

// UnmarshalJSON implements json.Unmarshaler.
func (c *ToolChoice) UnmarshalJSON(data []byte) error {
	*c = ToolChoice{}
	switch jsonx.FirstByte(data) {
	case '"':
		return json.Unmarshal(data, &c.Mode)
	case '{':
		var obj struct {
			Type     string `json:"type"`
			Function struct {
				Name string `json:"name"`
			} `json:"function"`
		}
		if err := json.Unmarshal(data, &obj); err != nil {
			return err
		}
		c.Mode, c.Function = obj.Type, obj.Function.Name
		c.Raw = append(json.RawMessage(nil), data...)
		return nil
	case 'n':
		return nil
	}
	return fmt.Errorf("tool_choice: want string or object, got %.20s", data)
}

// MarshalJSON implements json.Marshaler.
func (c ToolChoice) MarshalJSON() ([]byte, error) {
	switch {
	case len(c.Raw) > 0:
		return c.Raw, nil
	case c.Mode == ToolChoiceFunction:
		return jsonx.Marshal(map[string]any{"type": "function", "function": map[string]string{"name": c.Function}})
	}
	return jsonx.Marshal(c.Mode)
}

// StreamOptions is ChatRequest.StreamOptions.
type StreamOptions struct {
	IncludeUsage bool `json:"include_usage,omitempty"`
	// Extra holds every other key verbatim.
	Extra map[string]json.RawMessage `json:"-"`
}

type streamOptions StreamOptions

// UnmarshalJSON implements json.Unmarshaler.
func (s *StreamOptions) UnmarshalJSON(data []byte) error {
	return jsonx.UnmarshalExtra(data, (*streamOptions)(s), &s.Extra)
}

// MarshalJSON implements json.Marshaler.
func (s StreamOptions) MarshalJSON() ([]byte, error) {
	return jsonx.EncodeObject(streamOptions(s), s.Extra)
}

// StringList is a string or an array of strings (the "stop" parameter). It
// encodes as an array.
type StringList []string

// UnmarshalJSON implements json.Unmarshaler.
func (l *StringList) UnmarshalJSON(data []byte) error {
	switch jsonx.FirstByte(data) {
	case '"':
		var s string
		if err := json.Unmarshal(data, &s); err != nil {
			return err
		}
		*l = StringList{s}
		return nil
	case 'n':
		*l = nil
		return nil
	}
	var a []string
	if err := json.Unmarshal(data, &a); err != nil {
		return err
	}
	*l = a
	return nil
}

// ParseChatRequest decodes a chat-completions request body.
func ParseChatRequest(body []byte) (ChatRequest, error) {
	var r ChatRequest
	if err := json.Unmarshal(body, &r); err != nil {
		return ChatRequest{}, fmt.Errorf("chat completions request: %w", err)
	}
	return r, nil
}
