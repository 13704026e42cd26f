package anthropic

import (
	"encoding/json"

	"github.com/perpetuity/perpetuity/proxy/wire/jsonx"
)

// Block types this package models; others (document variants, server tool
// results, ...) decode with their keys in Extra.
const (
	BlockText             = "text"
	BlockImage            = "image"
	BlockDocument         = "document"
	BlockToolUse          = "tool_use"
	BlockToolResult       = "tool_result"
	BlockThinking         = "thinking"
	BlockRedactedThinking = "redacted_thinking"
)

// ContentBlock is one block of a Content: a union over the block types, with
// the fields of each.
type ContentBlock struct {
	Type string `json:"type"`
	// text
	Text      string          `json:"text,omitempty"`
	Citations json.RawMessage `json:"citations,omitempty"`
	// image, document
	Source *Source `json:"source,omitempty"`
	// tool_use
	ID    string          `json:"id,omitempty"`
	Name  string          `json:"name,omitempty"`
	Input json.RawMessage `json:"input,omitempty"`
	// tool_result
	ToolUseID string   `json:"tool_use_id,omitempty"`
	Content   *Content `json:"content,omitempty"`
	IsError   *bool    `json:"is_error,omitempty"`
	// thinking, redacted_thinking
	Thinking  string `json:"thinking,omitempty"`
	Signature string `json:"signature,omitempty"`
	Data      string `json:"data,omitempty"`

	CacheControl json.RawMessage `json:"cache_control,omitempty"`
	// Extra holds every other key verbatim.
	Extra map[string]json.RawMessage `json:"-"`
}

type contentBlock ContentBlock

// UnmarshalJSON implements json.Unmarshaler.
// Decoding is lenient: a key whose value does not fit its field (block
// types this package does not model reuse keys with other types) stays in
// Extra verbatim and is written back in place.
func (b *ContentBlock) UnmarshalJSON(data []byte) error {
	return jsonx.UnmarshalExtraLenient(data, (*contentBlock)(b), &b.Extra)
}

// MarshalJSON implements json.Marshaler. The keys a block type requires are
// always present (a streamed text block starts as {"type":"text","text":""},
// a tool_use block with "input":{}), in the API's order.
func (b ContentBlock) MarshalJSON() ([]byte, error) {
	o := jsonx.Object{}
	o.UseExtra(b.Extra)
	o.Set("type", b.Type)
	if b.Type == BlockText || b.Text != "" {
		o.Set("text", b.Text)
	}
	if len(b.Citations) > 0 {
		o.SetRaw("citations", b.Citations)
	}
	if b.Source != nil {
		o.Set("source", b.Source)
	}
	if b.Type == BlockToolUse || b.ID != "" {
		o.Set("id", b.ID)
	}
	if b.Type == BlockToolUse || b.Name != "" {
		o.Set("name", b.Name)
	}
	switch {
	case len(b.Input) > 0:
		o.SetRaw("input", b.Input)
	case b.Type == BlockToolUse:
		o.SetRaw("input", []byte("{}"))
	}
	if b.Type == BlockToolResult || b.ToolUseID != "" {
		o.Set("tool_use_id", b.ToolUseID)
	}
	if b.Content != nil && !b.Content.IsNull() {
		o.Set("content", b.Content)
	}
	if b.IsError != nil {
		o.Set("is_error", *b.IsError)
	}
	if b.Type == BlockThinking || b.Thinking != "" {
		o.Set("thinking", b.Thinking)
	}
	if b.Type == BlockThinking || b.Signature != "" {
		o.Set("signature", b.Signature)
	}
	if b.Type == BlockRedactedThinking || b.Data != "" {
		o.Set("data", b.Data)
	}
	if len(b.CacheControl) > 0 {
		o.SetRaw("cache_control", b.CacheControl)
	}
	o.SetExtra(b.Extra)
	return o.Bytes()
}

// Source types of image and document blocks.
const (
	SourceBase64 = "base64"
	SourceURL    = "url"
	SourceFile   = "file"
	SourceText   = "text"
)

// Source is where an image or document block's bytes come from.
type Source struct {
	Type      string `json:"type"`
	MediaType string `json:"media_type,omitempty"`
	Data      string `json:"data,omitempty"`
	URL       string `json:"url,omitempty"`
	FileID    string `json:"file_id,omitempty"`
	// Extra holds every other key verbatim.
	Extra map[string]json.RawMessage `json:"-"`
}

type source Source

// UnmarshalJSON implements json.Unmarshaler, leniently like ContentBlock.
func (s *Source) UnmarshalJSON(data []byte) error {
	return jsonx.UnmarshalExtraLenient(data, (*source)(s), &s.Extra)
}

// MarshalJSON implements json.Marshaler.
func (s Source) MarshalJSON() ([]byte, error) {
	o := jsonx.Object{}
	o.UseExtra(s.Extra)
	o.Set("type", s.Type)
	for _, f := range []struct{ key, val string }{
		{"media_type", s.MediaType}, {"data", s.Data}, {"url", s.URL}, {"file_id", s.FileID},
	} {
		if f.val != "" {
			o.Set(f.key, f.val)
		}
	}
	o.SetExtra(s.Extra)
	return o.Bytes()
}
