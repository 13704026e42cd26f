package fakeprovider

import (
	"encoding/json"
	"net/http"
	"strconv"
)

// Field order of every struct below is the order the API emits.

type chatCompletion struct {
	ID                string       `json:"id"`
	Object            string       `json:"object"`
	Created           int64        `json:"created"`
	Model             string       `json:"model"`
	Choices           []chatChoice `json:"choices"`
	Usage             chatUsage    `json:"usage"`
	ServiceTier       string       `json:"service_tier"`
	SystemFingerprint string       `json:"system_fingerprint"`
}

type chatChoice struct {
	Index        int             `json:"index"`
	Message      chatMessage     `json:"message"`
	Logprobs     json.RawMessage `json:"logprobs"`
	FinishReason string          `json:"finish_reason"`
}

type chatMessage struct {
	Role        string          `json:"role"`
	Content     json.RawMessage `json:"content"`
	ToolCalls   []chatToolCall  `json:"tool_calls,omitempty"`
	Refusal     json.RawMessage `json:"refusal"`
	Annotations []struct{}      `json:"annotations"`
}

type chatToolCall struct {
	ID       string       `json:"id"`
	Type     string       `json:"type"`
	Function chatFunction `json:"function"`
}

type chatFunction struct {
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
}

type chatUsage struct {
	PromptTokens            int                `json:"prompt_tokens"`
	CompletionTokens        int                `json:"completion_tokens"`
	TotalTokens             int                `json:"total_tokens"`
	PromptTokensDetails     promptDetails      `json:"prompt_tokens_details"`
	CompletionTokensDetails completionsDetails `json:"completion_tokens_details"`
}

type promptDetails struct {
	CachedTokens int `json:"cached_tokens"`
	AudioTokens  int `json:"audio_tokens"`
}

type completionsDetails struct {
	ReasoningTokens          int `json:"reasoning_tokens"`
	AudioTokens              int `json:"audio_tokens"`
	AcceptedPredictionTokens int `json:"accepted_prediction_tokens"`
	RejectedPredictionTokens int `json:"rejected_prediction_tokens"`
}

type chatChunk struct {
	ID                string          `json:"id"`
	Object            string          `json:"object"`
	Created           int64           `json:"created"`
	Model             string          `json:"model"`
	ServiceTier       string          `json:"service_tier"`
	SystemFingerprint string          `json:"system_fingerprint"`
	Choices           []chunkChoice   `json:"choices"`
	Usage             json.RawMessage `json:"usage,omitempty"`
	Obfuscation       string          `json:"obfuscation,omitempty"`
}

type chunkChoice struct {
	Index        int             `json:"index"`
	Delta        chunkDelta      `json:"delta"`
	Logprobs     json.RawMessage `json:"logprobs"`
	FinishReason json.RawMessage `json:"finish_reason"`
}

type chunkDelta struct {
	Role      string          `json:"role,omitempty"`
	Content   json.RawMessage `json:"content,omitempty"`
	ToolCalls []chunkToolCall `json:"tool_calls,omitempty"`
	Refusal   json.RawMessage `json:"refusal,omitempty"`
}

type chunkToolCall struct {
	Index    int           `json:"index"`
	ID       string        `json:"id,omitempty"`
	Type     string        `json:"type,omitempty"`
	Function chunkFunction `json:"function"`
}

type chunkFunction struct {
	Name      string `json:"name,omitempty"`
	Arguments string `json:"arguments"`
}

var jsonNull = json.RawMessage("null")

func (pl *plan) chatUsage() chatUsage {
	u := pl.usage
	return chatUsage{
		PromptTokens: u.InputTokens, CompletionTokens: u.OutputTokens,
		TotalTokens:             u.InputTokens + u.OutputTokens,
		PromptTokensDetails:     promptDetails{CachedTokens: u.CacheReadTokens},
		CompletionTokensDetails: completionsDetails{ReasoningTokens: u.ReasoningTokens},
	}
}

func (x *exchange) openaiHeaders(reqID string) map[string]string {
	return map[string]string{
		"x-request-id":         reqID,
		"openai-version":       "2020-10-01",
		"openai-processing-ms": "42",
	}
}

// writeJSON answers a non-streaming request, or cuts the body halfway when
// FailAfter is scripted.
func (x *exchange) writeJSON(pl *plan, body []byte, headers map[string]string) {
	h := x.w.Header()
	h.Set("Content-Type", "application/json")
	for k, v := range headers {
		h.Set(k, v)
	}
	if pl.FailAfter > 0 {
		h.Set("Content-Length", strconv.Itoa(len(body)))
		x.w.WriteHeader(http.StatusOK)
		_, _ = x.w.Write(body[:len(body)/2])
		_ = http.NewResponseController(x.w).Flush()
		panic(http.ErrAbortHandler)
	}
	x.w.WriteHeader(http.StatusOK)
	_, _ = x.w.Write(body)
}

func (x *exchange) chatJSON(pl *plan, req *request) {
	msg := chatMessage{Role: "assistant", Content: jsonNull, Refusal: jsonNull, Annotations: []struct{}{}}
	if pl.Text != "" {
		msg.Content = marshal(pl.Text, "")
	}
	for _, tc := range pl.ToolCalls {
		id := tc.ID
		if id == "" {
			id = pl.gen.callID()
		}
		msg.ToolCalls = append(msg.ToolCalls, chatToolCall{ID: id, Type: "function", Function: chatFunction{Name: tc.Name, Arguments: tc.Arguments}})
	}
	finish := "stop"
	if pl.stopIsTool() {
		finish = "tool_calls"
	}
	cc := chatCompletion{
		ID: pl.gen.chatID(), Object: "chat.completion", Created: pl.created, Model: pl.model,
		Choices:     []chatChoice{{Index: 0, Message: msg, Logprobs: jsonNull, FinishReason: finish}},
		Usage:       pl.chatUsage(),
		ServiceTier: req.serviceTier, SystemFingerprint: systemFingerprint,
	}
	reqID := x.gen.openaiReq()
	x.writeJSON(pl, marshal(cc, "  "), x.openaiHeaders(reqID))
}

func (x *exchange) chatStream(pl *plan, req *request) {
	id := pl.gen.chatID()
	callIDs := make([]string, len(pl.ToolCalls))
	for i, tc := range pl.ToolCalls {
		callIDs[i] = tc.ID
		if callIDs[i] == "" {
			callIDs[i] = pl.gen.callID()
		}
	}
	reqID := x.gen.openaiReq()
	s := x.startStream(pl, id, x.openaiHeaders(reqID))

	chunk := func(choices []chunkChoice, usage json.RawMessage) []byte {
		c := chatChunk{
			ID: id, Object: "chat.completion.chunk", Created: pl.created, Model: pl.model,
			ServiceTier: req.serviceTier, SystemFingerprint: systemFingerprint,
			Choices: choices,
		}
		if req.includeUsage {
			c.Usage = jsonNull
			if usage != nil {
				c.Usage = usage
			}
		}
		if req.includeObfuscation {
			c.Obfuscation = pl.gen.obfuscation()
		}
		return marshal(c, "")
	}
	choice := func(d chunkDelta) []chunkChoice {
		return []chunkChoice{{Index: 0, Delta: d, Logprobs: jsonNull, FinishReason: jsonNull}}
	}
	inBand := func() {
		e := openaiStatusError(500, pl.model, pl.ErrorMessage)
		s.send("", marshal(struct {
			Error openaiErrorObject `json:"error"`
		}{openaiErrorObj(e)}, ""))
	}
	toolHeader := func(i int) chunkToolCall {
		return chunkToolCall{Index: i, ID: callIDs[i], Type: "function", Function: chunkFunction{Name: pl.ToolCalls[i].Name}}
	}

	// The first chunk carries the role; a reply that starts with a tool
	// call carries the call's header in it too, as the API does.
	first := chunkDelta{Role: "assistant", Content: json.RawMessage(`""`), Refusal: jsonNull}
	nextTool := 0
	if len(pl.chunks) == 0 && len(pl.ToolCalls) > 0 {
		first.Content = jsonNull
		first.ToolCalls = []chunkToolCall{toolHeader(0)}
		nextTool = 1
	}
	if !s.send("", chunk(choice(first), nil)) {
		return
	}
	for _, piece := range pl.chunks {
		if !s.delta("", chunk(choice(chunkDelta{Content: marshal(piece, "")}), nil), inBand) {
			return
		}
	}
	for i := range pl.ToolCalls {
		if i >= nextTool {
			if !s.send("", chunk(choice(chunkDelta{ToolCalls: []chunkToolCall{toolHeader(i)}}), nil)) {
				return
			}
		}
		for _, part := range pl.argParts[i] {
			d := chunkDelta{ToolCalls: []chunkToolCall{{Index: i, Function: chunkFunction{Arguments: part}}}}
			if !s.delta("", chunk(choice(d), nil), inBand) {
				return
			}
		}
	}
	if !s.contentDone(inBand) || pl.OmitStopReason {
		return
	}
	finish := json.RawMessage(`"stop"`)
	if pl.stopIsTool() {
		finish = json.RawMessage(`"tool_calls"`)
	}
	if !s.send("", chunk([]chunkChoice{{Index: 0, Delta: chunkDelta{}, Logprobs: jsonNull, FinishReason: finish}}, nil)) {
		return
	}
	if req.includeUsage {
		if !s.send("", chunk([]chunkChoice{}, marshal(pl.chatUsage(), ""))) {
			return
		}
	}
	s.send("", []byte("[DONE]"))
}
