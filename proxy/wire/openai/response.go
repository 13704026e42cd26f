package openai

import (
	"encoding/json"

	"github.com/perpetuity/perpetuity/proxy/wire/jsonx"
)

// Object names of responses and chunks.
const (
	ObjectChatCompletion      = "chat.completion"
	ObjectChatCompletionChunk = "chat.completion.chunk"
)

// Finish reasons.
const (
	FinishStop          = "stop"
	FinishLength        = "length"
	FinishToolCalls     = "tool_calls"
	FinishContentFilter = "content_filter"
	FinishFunctionCall  = "function_call"
)

// ChatCompletion is a non-streaming response. Field order is the real API's.
type ChatCompletion struct {
	ID                string   `json:"id"`
	Object            string   `json:"object"`
	Created           int64    `json:"created"`
	Model             string   `json:"model"`
	Choices           []Choice `json:"choices"`
	Usage             *Usage   `json:"usage,omitempty"`
	ServiceTier       string   `json:"service_tier,omitempty"`
	SystemFingerprint string   `json:"system_fingerprint,omitempty"`
}

// Choice is one choice of a ChatCompletion.
type Choice struct {
	Index        int             `json:"index"`
	Message      ResponseMessage `json:"message"`
	Logprobs     json.RawMessage `json:"logprobs"`
	FinishReason string          `json:"finish_reason"`
}

// ResponseMessage is the assistant message of a Choice. Content and Refusal
// encode as null when nil, as the API does.
type ResponseMessage struct {
	Role      string     `json:"role"`
	Content   *string    `json:"content"`
	ToolCalls []ToolCall `json:"tool_calls,omitempty"`
	Refusal   *string    `json:"refusal"`
	// Annotations is always present in real responses ([] when none).
	Annotations []json.RawMessage `json:"annotations"`
	// ReasoningContent is not OpenAI's: OpenAI-compatible servers (vLLM,
	// DeepSeek) put a reasoning model's thinking here; Reasoning is
	// OpenRouter's name for it. Decoded, never produced.
	ReasoningContent string `json:"reasoning_content,omitempty"`
	Reasoning        string `json:"reasoning,omitempty"`
}

// Usage is the token usage of a response or of the final stream chunk.
// PromptTokens includes cached tokens.
type Usage struct {
	PromptTokens            int64                    `json:"prompt_tokens"`
	CompletionTokens        int64                    `json:"completion_tokens"`
	TotalTokens             int64                    `json:"total_tokens"`
	PromptTokensDetails     *PromptTokensDetails     `json:"prompt_tokens_details,omitempty"`
	CompletionTokensDetails *CompletionTokensDetails `json:"completion_tokens_details,omitempty"`
}

// CachedTokens is PromptTokensDetails.CachedTokens, 0 when absent.
func (u Usage) CachedTokens() int64 {
	if u.PromptTokensDetails == nil {
		return 0
	}
	return u.PromptTokensDetails.CachedTokens
}

// PromptTokensDetails breaks prompt tokens down.
type PromptTokensDetails struct {
	CachedTokens int64 `json:"cached_tokens"`
	AudioTokens  int64 `json:"audio_tokens"`
}

// CompletionTokensDetails breaks completion tokens down.
type CompletionTokensDetails struct {
	ReasoningTokens          int64 `json:"reasoning_tokens"`
	AudioTokens              int64 `json:"audio_tokens"`
	AcceptedPredictionTokens int64 `json:"accepted_prediction_tokens"`
	RejectedPredictionTokens int64 `json:"rejected_prediction_tokens"`
}

// ChatCompletionChunk is one streamed chunk. The usage key is absent unless
// the caller asked for usage (then it is null on every chunk but the last):
// UsageNull asks for the null.
type ChatCompletionChunk struct {
	ID                string        `json:"id"`
	Object            string        `json:"object"`
	Created           int64         `json:"created"`
	Model             string        `json:"model"`
	SystemFingerprint string        `json:"system_fingerprint,omitempty"`
	Choices           []ChunkChoice `json:"choices"`
	Usage             *Usage        `json:"usage,omitempty"`
	UsageNull         bool          `json:"-"`
	// Error is set by servers that report a failure in band (OpenRouter,
	// vLLM), as an object or a bare string; decode it with ParseErrorDetail.
	// Never produced on a chunk (an in-band error is an ErrorBody).
	Error json.RawMessage `json:"error,omitempty"`
}

// MarshalJSON implements json.Marshaler with the real API's key order.
func (c ChatCompletionChunk) MarshalJSON() ([]byte, error) {
	o := jsonx.Object{}
	o.Set("id", c.ID)
	o.Set("object", c.Object)
	o.Set("created", c.Created)
	o.Set("model", c.Model)
	if c.SystemFingerprint != "" {
		o.Set("system_fingerprint", c.SystemFingerprint)
	}
	choices := c.Choices
	if choices == nil {
		choices = []ChunkChoice{}
	}
	o.Set("choices", choices)
	switch {
	case c.Usage != nil:
		o.Set("usage", c.Usage)
	case c.UsageNull:
		o.SetRaw("usage", nil)
	}
	if len(c.Error) > 0 {
		o.SetRaw("error", c.Error)
	}
	return o.Bytes()
}

// ChunkChoice is one choice of a chunk. FinishReason is null until the
// choice ends.
type ChunkChoice struct {
	Index        int             `json:"index"`
	Delta        Delta           `json:"delta"`
	Logprobs     json.RawMessage `json:"logprobs"`
	FinishReason *string         `json:"finish_reason"`
}

// Delta is the increment a chunk carries. The API's first chunk spells out
// "content" and "refusal" next to the role (as "" or null); later chunks
// carry only what changed. Encoding reproduces that: when Role is set, the
// content and refusal keys are always present.
type Delta struct {
	Role      string          `json:"role,omitempty"`
	Content   *string         `json:"content,omitempty"`
	ToolCalls []ToolCallDelta `json:"tool_calls,omitempty"`
	Refusal   *string         `json:"refusal,omitempty"`
	// ReasoningContent and Reasoning are OpenAI-compatible extensions
	// (vLLM/DeepSeek and OpenRouter); decoded, never produced.
	ReasoningContent *string `json:"reasoning_content,omitempty"`
	Reasoning        *string `json:"reasoning,omitempty"`
}

// MarshalJSON implements json.Marshaler.
func (d Delta) MarshalJSON() ([]byte, error) {
	o := jsonx.Object{}
	if d.Role != "" {
		o.Set("role", d.Role)
	}
	if d.Content != nil || d.Role != "" {
		o.Set("content", d.Content)
	}
	if len(d.ToolCalls) > 0 {
		o.Set("tool_calls", d.ToolCalls)
	}
	if d.Refusal != nil || d.Role != "" {
		o.Set("refusal", d.Refusal)
	}
	return o.Bytes()
}

// ToolCallDelta is a fragment of a streamed tool call: the first fragment of
// a call carries id, type and name; later ones only argument text.
type ToolCallDelta struct {
	Index    int                `json:"index"`
	ID       string             `json:"id,omitempty"`
	Type     string             `json:"type,omitempty"`
	Function *FunctionCallDelta `json:"function,omitempty"`
}

// FunctionCallDelta is the function part of a ToolCallDelta.
type FunctionCallDelta struct {
	Name      string `json:"name,omitempty"`
	Arguments string `json:"arguments"`
}

// ParseChatCompletion decodes a non-streaming response body.
func ParseChatCompletion(body []byte) (ChatCompletion, error) {
	var c ChatCompletion
	err := json.Unmarshal(body, &c)
	return c, err
}
