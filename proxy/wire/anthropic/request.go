package anthropic

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/perpetuity/perpetuity/proxy/wire/jsonx"
)

// MessagesRequest is the body of POST /v1/messages.
type MessagesRequest struct {
	Model         string          `json:"model"`
	Messages      []Message       `json:"messages"`
	System        *Content        `json:"system,omitempty"`
	MaxTokens     *int64          `json:"max_tokens,omitempty"`
	Metadata      *Metadata       `json:"metadata,omitempty"`
	StopSequences []string        `json:"stop_sequences,omitempty"`
	Stream        bool            `json:"stream,omitempty"`
	Temperature   *float64        `json:"temperature,omitempty"`
	TopP          *float64        `json:"top_p,omitempty"`
	TopK          *int64          `json:"top_k,omitempty"`
	Tools         []Tool          `json:"tools,omitempty"`
	ToolChoice    *ToolChoice     `json:"tool_choice,omitempty"`
	Thinking      json.RawMessage `json:"thinking,omitempty"`
	// Extra holds every other key (service_tier, container, mcp_servers,
	// ...) verbatim.
	Extra map[string]json.RawMessage `json:"-"`
}

type messagesRequest MessagesRequest

// UnmarshalJSON implements json.Unmarshaler.
func (r *MessagesRequest) UnmarshalJSON(data []byte) error {
	return jsonx.UnmarshalExtra(data, (*messagesRequest)(r), &r.Extra)
}

// MarshalJSON implements json.Marshaler.
func (r MessagesRequest) MarshalJSON() ([]byte, error) {
	return jsonx.EncodeObject(messagesRequest(r), r.Extra)
}

// SystemText is the system prompt's text, blocks separated by a blank line.
func (r MessagesRequest) SystemText() string {
	if r.System == nil {
		return ""
	}
	return r.System.join("\n\n")
}

// UserHint is metadata.user_id as text: a hint about who is asking, not an
// identity (one popular harness puts a JSON object with a per-session id
// there).
func (r MessagesRequest) UserHint() string {
	if r.Metadata == nil {
		return ""
	}
	return r.Metadata.UserIDText()
}

// ParseMessagesRequest decodes a messages request body.
func ParseMessagesRequest(body []byte) (MessagesRequest, error) {
	var r MessagesRequest
	if err := json.Unmarshal(body, &r); err != nil {
		return MessagesRequest{}, fmt.Errorf("messages request: %w", err)
	}
	return r, nil
}

// Metadata is MessagesRequest.Metadata. UserID is raw because harnesses send
// strings holding JSON, and a strict type would reject a request the
// provider accepts.
type Metadata struct {
	UserID json.RawMessage `json:"user_id,omitempty"`
	// Extra holds every other key verbatim.
	Extra map[string]json.RawMessage `json:"-"`
}

type metadata Metadata

// UnmarshalJSON implements json.Unmarshaler.
func (m *Metadata) UnmarshalJSON(data []byte) error {
	return jsonx.UnmarshalExtra(data, (*metadata)(m), &m.Extra)
}

// MarshalJSON implements json.Marshaler.
func (m Metadata) MarshalJSON() ([]byte, error) {
	return jsonx.EncodeObject(metadata(m), m.Extra)
}

// UserIDText is user_id's string value, or its JSON text when it is not a
// string; "" when absent or null.
func (m Metadata) UserIDText() string {
	var s string
	if json.Unmarshal(m.UserID, &s) == nil {
		return s
	}
	if len(m.UserID) == 0 || string(m.UserID) == "null" {
		return ""
	}
	return string(m.UserID)
}

// UserIDMetadata returns metadata carrying user_id as a string.
func UserIDMetadata(userID string) *Metadata {
	raw, _ := jsonx.Marshal(userID)
	return &Metadata{UserID: raw}
}

// Roles.
const (
	RoleUser      = "user"
	RoleAssistant = "assistant"
)

// Message is one entry of MessagesRequest.Messages.
type Message struct {
	Role    string  `json:"role"`
	Content Content `json:"content"`
	// Extra holds every other key verbatim.
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

// Text is the message's text: the string content, or its text blocks joined
// by newlines. Tool calls, tool results, images and thinking are not text.
func (m Message) Text() string { return m.Content.Text() }

// Content is a string or an array of blocks (message content, the system
// prompt, a tool result's content). Exactly one of String and Blocks is set,
// or neither for null/absent.
type Content struct {
	String *string
	Blocks []ContentBlock
}

// TextContent returns a string content.
func TextContent(s string) Content { return Content{String: &s} }

// IsNull reports whether the content is null or absent.
func (c Content) IsNull() bool { return c.String == nil && c.Blocks == nil }

// Text is the string content, or the text blocks joined by newlines.
func (c Content) Text() string { return c.join("\n") }

func (c Content) join(sep string) string {
	if c.String != nil {
		return *c.String
	}
	var parts []string
	for _, b := range c.Blocks {
		if b.Type == BlockText {
			parts = append(parts, b.Text)
		}
	}
	return strings.Join(parts, sep)
}

// UnmarshalJSON implements json.Unmarshaler.
func (c *Content) UnmarshalJSON(data []byte) error {
	return jsonx.UnmarshalContent(data, &c.String, &c.Blocks)
}

// MarshalJSON implements json.Marshaler.
func (c Content) MarshalJSON() ([]byte, error) {
	return jsonx.MarshalContent(c.String, c.Blocks)
}

// Tool is one entry of MessagesRequest.Tools: a client tool (Type "" or
// "custom", with an input schema) or a server tool (Type names a versioned
// tool such as "web_search_20250305"; its parameters stay in Extra).
type Tool struct {
	Type         string          `json:"type,omitempty"`
	Name         string          `json:"name"`
	Description  string          `json:"description,omitempty"`
	InputSchema  json.RawMessage `json:"input_schema,omitempty"`
	CacheControl json.RawMessage `json:"cache_control,omitempty"`
	// Extra holds every other key verbatim.
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

// IsClient reports whether the tool is a client tool (executed by the
// caller) rather than one the provider runs.
func (t Tool) IsClient() bool { return t.Type == "" || t.Type == "custom" }

// Tool choice types.
const (
	ToolChoiceAuto = "auto"
	ToolChoiceAny  = "any"
	ToolChoiceTool = "tool"
	ToolChoiceNone = "none"
)

// ToolChoice is MessagesRequest.ToolChoice.
type ToolChoice struct {
	Type                   string `json:"type"`
	Name                   string `json:"name,omitempty"`
	DisableParallelToolUse *bool  `json:"disable_parallel_tool_use,omitempty"`
}
