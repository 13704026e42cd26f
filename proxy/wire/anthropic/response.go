package anthropic

import "encoding/json"

// Stop reasons.
const (
	StopEndTurn      = "end_turn"
	StopMaxTokens    = "max_tokens"
	StopStopSequence = "stop_sequence"
	StopToolUse      = "tool_use"
	StopPauseTurn    = "pause_turn"
	StopRefusal      = "refusal"
	// StopContextWindowExceeded is sent by newer models when the context
	// window, not max_tokens, ended the reply.
	StopContextWindowExceeded = "model_context_window_exceeded"
)

// Response is a non-streaming response, and the message of message_start.
// Field order is the API's.
type Response struct {
	ID           string         `json:"id"`
	Type         string         `json:"type"`
	Role         string         `json:"role"`
	Content      []ContentBlock `json:"content"`
	Model        string         `json:"model"`
	StopReason   *string        `json:"stop_reason"`
	StopSequence *string        `json:"stop_sequence"`
	Usage        Usage          `json:"usage"`
}

// Usage is token usage. InputTokens excludes cached tokens (read or
// written), unlike OpenAI's prompt_tokens.
type Usage struct {
	InputTokens              int64 `json:"input_tokens"`
	CacheCreationInputTokens int64 `json:"cache_creation_input_tokens"`
	CacheReadInputTokens     int64 `json:"cache_read_input_tokens"`
	OutputTokens             int64 `json:"output_tokens"`
}

// ParseResponse decodes a non-streaming response body.
func ParseResponse(body []byte) (Response, error) {
	var r Response
	err := json.Unmarshal(body, &r)
	return r, err
}
