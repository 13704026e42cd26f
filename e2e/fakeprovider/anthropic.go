package fakeprovider

import (
	"bytes"
	"encoding/json"
)

// Field order of every struct below is the order the API emits (the
// message object leads with "model").

type anthMessage struct {
	Model        string          `json:"model"`
	ID           string          `json:"id"`
	Type         string          `json:"type"`
	Role         string          `json:"role"`
	Content      []any           `json:"content"`
	StopReason   json.RawMessage `json:"stop_reason"`
	StopSequence json.RawMessage `json:"stop_sequence"`
	Usage        anthUsage       `json:"usage"`
}

type anthUsage struct {
	InputTokens              int           `json:"input_tokens"`
	CacheCreationInputTokens int           `json:"cache_creation_input_tokens"`
	CacheReadInputTokens     int           `json:"cache_read_input_tokens"`
	CacheCreation            cacheCreation `json:"cache_creation"`
	OutputTokens             int           `json:"output_tokens"`
	ServiceTier              string        `json:"service_tier"`
}

type cacheCreation struct {
	Ephemeral5m int `json:"ephemeral_5m_input_tokens"`
	Ephemeral1h int `json:"ephemeral_1h_input_tokens"`
}

type anthDeltaUsage struct {
	InputTokens              int `json:"input_tokens"`
	CacheCreationInputTokens int `json:"cache_creation_input_tokens"`
	CacheReadInputTokens     int `json:"cache_read_input_tokens"`
	OutputTokens             int `json:"output_tokens"`
}

type anthText struct {
	Type string `json:"type"`
	Text string `json:"text"`
}

type anthToolUse struct {
	Type  string          `json:"type"`
	ID    string          `json:"id"`
	Name  string          `json:"name"`
	Input json.RawMessage `json:"input"`
}

type anthMessageStart struct {
	Type    string      `json:"type"`
	Message anthMessage `json:"message"`
}

type anthBlockStart struct {
	Type         string `json:"type"`
	Index        int    `json:"index"`
	ContentBlock any    `json:"content_block"`
}

type anthBlockDelta struct {
	Type  string `json:"type"`
	Index int    `json:"index"`
	Delta any    `json:"delta"`
}

type anthTextDelta struct {
	Type string `json:"type"`
	Text string `json:"text"`
}

type anthJSONDelta struct {
	Type        string `json:"type"`
	PartialJSON string `json:"partial_json"`
}

type anthBlockStop struct {
	Type  string `json:"type"`
	Index int    `json:"index"`
}

type anthMessageDelta struct {
	Type  string         `json:"type"`
	Delta anthStop       `json:"delta"`
	Usage anthDeltaUsage `json:"usage"`
}

type anthStop struct {
	StopReason   string          `json:"stop_reason"`
	StopSequence json.RawMessage `json:"stop_sequence"`
}

// anthropicPing is byte for byte what the API sends, space included.
const anthropicPing = `{"type": "ping"}`

const anthropicOrgID = "0b6f5c2e-7a41-4d3e-9c8a-5f1e2d3c4b5a"

func (pl *plan) anthUsage(outputTokens int) anthUsage {
	u := pl.usage
	return anthUsage{
		InputTokens: u.InputTokens, CacheCreationInputTokens: u.CacheCreationTokens,
		CacheReadInputTokens: u.CacheReadTokens,
		CacheCreation:        cacheCreation{Ephemeral5m: u.CacheCreationTokens},
		OutputTokens:         outputTokens, ServiceTier: "standard",
	}
}

func (pl *plan) stopReason() string {
	if pl.stopIsTool() {
		return "tool_use"
	}
	return "end_turn"
}

func (pl *plan) toolUseIDs() []string {
	ids := make([]string, len(pl.ToolCalls))
	for i, tc := range pl.ToolCalls {
		ids[i] = tc.ID
		if ids[i] == "" {
			ids[i] = pl.gen.toolUseID()
		}
	}
	return ids
}

func compactJSON(s string) json.RawMessage {
	var b bytes.Buffer
	if json.Compact(&b, []byte(s)) != nil {
		return json.RawMessage("{}")
	}
	return b.Bytes()
}

func anthropicHeaders(reqID string) map[string]string {
	return map[string]string{
		"request-id":                reqID,
		"anthropic-organization-id": anthropicOrgID,
	}
}

func (x *exchange) anthropicJSON(pl *plan) {
	id := pl.gen.messageID()
	toolIDs := pl.toolUseIDs()
	content := []any{}
	if pl.Text != "" {
		content = append(content, anthText{Type: "text", Text: pl.Text})
	}
	for i, tc := range pl.ToolCalls {
		content = append(content, anthToolUse{Type: "tool_use", ID: toolIDs[i], Name: tc.Name, Input: compactJSON(tc.Arguments)})
	}
	msg := anthMessage{
		Model: pl.model, ID: id, Type: "message", Role: "assistant", Content: content,
		StopReason: marshal(pl.stopReason(), ""), StopSequence: jsonNull,
		Usage: pl.anthUsage(pl.usage.OutputTokens),
	}
	reqID := x.gen.anthropicReq()
	x.writeJSON(pl, marshal(msg, ""), anthropicHeaders(reqID))
}

func (x *exchange) anthropicStream(pl *plan) {
	id := pl.gen.messageID()
	toolIDs := pl.toolUseIDs()
	reqID := x.gen.anthropicReq()
	s := x.startStream(pl, id, map[string]string{
		"request-id":                reqID,
		"anthropic-organization-id": anthropicOrgID,
		"Cache-Control":             "no-cache",
	})
	inBand := func() {
		typ, msg := anthropicErrorType(529)
		if pl.ErrorMessage != "" {
			msg = pl.ErrorMessage
		}
		s.send("error", marshal(anthropicErrorBody{Type: "error", Error: anthropicErrorObject{Type: typ, Message: msg}}, ""))
	}
	start := anthMessage{
		Model: pl.model, ID: id, Type: "message", Role: "assistant", Content: []any{},
		StopReason: jsonNull, StopSequence: jsonNull, Usage: pl.anthUsage(1),
	}
	if !s.send("message_start", marshal(anthMessageStart{Type: "message_start", Message: start}, "")) {
		return
	}
	index := 0
	pinged := false
	// openBlock starts a content block; the API sends its one ping right
	// after the first block starts.
	openBlock := func(block any) bool {
		if !s.send("content_block_start", marshal(anthBlockStart{Type: "content_block_start", Index: index, ContentBlock: block}, "")) {
			return false
		}
		if !pinged {
			pinged = true
			return s.send("ping", []byte(anthropicPing))
		}
		return true
	}
	closeBlock := func() bool {
		ok := s.send("content_block_stop", marshal(anthBlockStop{Type: "content_block_stop", Index: index}, ""))
		index++
		return ok
	}
	lastBlock := len(pl.ToolCalls)
	if len(pl.chunks) > 0 {
		if !openBlock(anthText{Type: "text", Text: ""}) {
			return
		}
		for _, piece := range pl.chunks {
			d := anthBlockDelta{Type: "content_block_delta", Index: index, Delta: anthTextDelta{Type: "text_delta", Text: piece}}
			if !s.delta("content_block_delta", marshal(d, ""), inBand) {
				return
			}
		}
		if lastBlock == 0 && !s.contentDone(inBand) {
			return
		}
		if !closeBlock() {
			return
		}
	}
	for i, tc := range pl.ToolCalls {
		if !openBlock(anthToolUse{Type: "tool_use", ID: toolIDs[i], Name: tc.Name, Input: json.RawMessage("{}")}) {
			return
		}
		jsonDelta := func(part string) []byte {
			return marshal(anthBlockDelta{Type: "content_block_delta", Index: index, Delta: anthJSONDelta{Type: "input_json_delta", PartialJSON: part}}, "")
		}
		// The API opens every tool input with an empty partial_json.
		if !s.send("content_block_delta", jsonDelta("")) {
			return
		}
		if tc.Arguments != "{}" {
			for _, part := range pl.argParts[i] {
				if !s.delta("content_block_delta", jsonDelta(part), inBand) {
					return
				}
			}
		}
		if i == lastBlock-1 && !s.contentDone(inBand) {
			return
		}
		if !closeBlock() {
			return
		}
	}
	if pl.OmitStopReason {
		return
	}
	u := pl.usage
	md := anthMessageDelta{
		Type:  "message_delta",
		Delta: anthStop{StopReason: pl.stopReason(), StopSequence: jsonNull},
		Usage: anthDeltaUsage{InputTokens: u.InputTokens, CacheCreationInputTokens: u.CacheCreationTokens, CacheReadInputTokens: u.CacheReadTokens, OutputTokens: u.OutputTokens},
	}
	if !s.send("message_delta", marshal(md, "")) {
		return
	}
	s.send("message_stop", []byte(`{"type":"message_stop"}`))
}
