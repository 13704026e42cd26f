package fakeprovider

import (
	"encoding/json"
)

// Field order of every struct below is the order the API emits.

type responseObject struct {
	ID                 string          `json:"id"`
	Object             string          `json:"object"`
	CreatedAt          int64           `json:"created_at"`
	Status             string          `json:"status"`
	Background         bool            `json:"background"`
	Error              json.RawMessage `json:"error"`
	IncompleteDetails  json.RawMessage `json:"incomplete_details"`
	Instructions       json.RawMessage `json:"instructions"`
	MaxOutputTokens    json.RawMessage `json:"max_output_tokens"`
	MaxToolCalls       json.RawMessage `json:"max_tool_calls"`
	Model              string          `json:"model"`
	Output             []any           `json:"output"`
	ParallelToolCalls  bool            `json:"parallel_tool_calls"`
	PreviousResponseID json.RawMessage `json:"previous_response_id"`
	PromptCacheKey     json.RawMessage `json:"prompt_cache_key"`
	Reasoning          json.RawMessage `json:"reasoning"`
	SafetyIdentifier   json.RawMessage `json:"safety_identifier"`
	ServiceTier        string          `json:"service_tier"`
	Store              bool            `json:"store"`
	Temperature        json.RawMessage `json:"temperature"`
	Text               json.RawMessage `json:"text"`
	ToolChoice         json.RawMessage `json:"tool_choice"`
	Tools              json.RawMessage `json:"tools"`
	TopLogprobs        json.RawMessage `json:"top_logprobs"`
	TopP               json.RawMessage `json:"top_p"`
	Truncation         json.RawMessage `json:"truncation"`
	Usage              *responsesUsage `json:"usage"`
	User               json.RawMessage `json:"user"`
	Metadata           json.RawMessage `json:"metadata"`
}

type responsesUsage struct {
	InputTokens         int            `json:"input_tokens"`
	InputTokensDetails  cachedDetails  `json:"input_tokens_details"`
	OutputTokens        int            `json:"output_tokens"`
	OutputTokensDetails reasoningCount `json:"output_tokens_details"`
	TotalTokens         int            `json:"total_tokens"`
}

type cachedDetails struct {
	CachedTokens int `json:"cached_tokens"`
}

type reasoningCount struct {
	ReasoningTokens int `json:"reasoning_tokens"`
}

type respMessage struct {
	ID      string       `json:"id"`
	Type    string       `json:"type"`
	Status  string       `json:"status"`
	Content []outputText `json:"content"`
	Role    string       `json:"role"`
}

type outputText struct {
	Type        string     `json:"type"`
	Annotations []struct{} `json:"annotations"`
	Logprobs    []struct{} `json:"logprobs"`
	Text        string     `json:"text"`
}

type respFunctionCall struct {
	ID        string `json:"id"`
	Type      string `json:"type"`
	Status    string `json:"status"`
	Arguments string `json:"arguments"`
	CallID    string `json:"call_id"`
	Name      string `json:"name"`
}

type respResponseEvent struct {
	Type           string         `json:"type"`
	SequenceNumber int            `json:"sequence_number"`
	Response       responseObject `json:"response"`
}

type respItemEvent struct {
	Type           string `json:"type"`
	SequenceNumber int    `json:"sequence_number"`
	OutputIndex    int    `json:"output_index"`
	Item           any    `json:"item"`
}

type respPartEvent struct {
	Type           string     `json:"type"`
	SequenceNumber int        `json:"sequence_number"`
	ItemID         string     `json:"item_id"`
	OutputIndex    int        `json:"output_index"`
	ContentIndex   int        `json:"content_index"`
	Part           outputText `json:"part"`
}

type respTextDelta struct {
	Type           string     `json:"type"`
	SequenceNumber int        `json:"sequence_number"`
	ItemID         string     `json:"item_id"`
	OutputIndex    int        `json:"output_index"`
	ContentIndex   int        `json:"content_index"`
	Delta          string     `json:"delta"`
	Logprobs       []struct{} `json:"logprobs"`
	Obfuscation    string     `json:"obfuscation,omitempty"`
}

type respTextDone struct {
	Type           string     `json:"type"`
	SequenceNumber int        `json:"sequence_number"`
	ItemID         string     `json:"item_id"`
	OutputIndex    int        `json:"output_index"`
	ContentIndex   int        `json:"content_index"`
	Text           string     `json:"text"`
	Logprobs       []struct{} `json:"logprobs"`
}

type respArgsDelta struct {
	Type           string `json:"type"`
	SequenceNumber int    `json:"sequence_number"`
	ItemID         string `json:"item_id"`
	OutputIndex    int    `json:"output_index"`
	Delta          string `json:"delta"`
	Obfuscation    string `json:"obfuscation,omitempty"`
}

type respArgsDone struct {
	Type           string `json:"type"`
	SequenceNumber int    `json:"sequence_number"`
	ItemID         string `json:"item_id"`
	OutputIndex    int    `json:"output_index"`
	Arguments      string `json:"arguments"`
}

type respErrorEvent struct {
	Type           string          `json:"type"`
	SequenceNumber int             `json:"sequence_number"`
	Code           string          `json:"code"`
	Message        string          `json:"message"`
	Param          json.RawMessage `json:"param"`
}

// echo returns a request field as the response repeats it, or def.
func echo(req *request, name, def string) json.RawMessage {
	if v := req.fields[name]; present(v) {
		return v
	}
	return json.RawMessage(def)
}

// responsesPlan holds the ids of one Responses reply.
type responsesPlan struct {
	*plan
	id      string
	msgID   string
	fcIDs   []string
	callIDs []string
}

func newResponsesPlan(pl *plan) *responsesPlan {
	rp := &responsesPlan{plan: pl, id: pl.gen.responseID()}
	if pl.Text != "" {
		rp.msgID = pl.gen.respMsgID()
	}
	for _, tc := range pl.ToolCalls {
		rp.fcIDs = append(rp.fcIDs, pl.gen.funcCallID())
		id := tc.ID
		if id == "" {
			id = pl.gen.callID()
		}
		rp.callIDs = append(rp.callIDs, id)
	}
	return rp
}

func (rp *responsesPlan) object(req *request, status string, output []any, usage *responsesUsage) responseObject {
	reasoning := json.RawMessage(`{"effort":null,"summary":null}`)
	if r := req.fields["reasoning"]; present(r) {
		var in struct {
			Effort  json.RawMessage `json:"effort"`
			Summary json.RawMessage `json:"summary"`
		}
		_ = json.Unmarshal(r, &in)
		reasoning = marshal(struct {
			Effort  json.RawMessage `json:"effort"`
			Summary json.RawMessage `json:"summary"`
		}{orNull(in.Effort), orNull(in.Summary)}, "")
	}
	parallel := true
	if v := req.fields["parallel_tool_calls"]; present(v) {
		parallel = boolean(v)
	}
	store := true
	if v := req.fields["store"]; present(v) {
		store = boolean(v)
	}
	return responseObject{
		ID: rp.id, Object: "response", CreatedAt: rp.created, Status: status,
		Error: jsonNull, IncompleteDetails: jsonNull,
		Instructions:       echo(req, "instructions", "null"),
		MaxOutputTokens:    echo(req, "max_output_tokens", "null"),
		MaxToolCalls:       echo(req, "max_tool_calls", "null"),
		Model:              rp.model,
		Output:             output,
		ParallelToolCalls:  parallel,
		PreviousResponseID: echo(req, "previous_response_id", "null"),
		PromptCacheKey:     echo(req, "prompt_cache_key", "null"),
		Reasoning:          reasoning,
		SafetyIdentifier:   echo(req, "safety_identifier", "null"),
		ServiceTier:        req.serviceTier,
		Store:              store,
		Temperature:        echo(req, "temperature", "1.0"),
		Text:               echo(req, "text", `{"format":{"type":"text"},"verbosity":"medium"}`),
		ToolChoice:         echo(req, "tool_choice", `"auto"`),
		Tools:              echo(req, "tools", "[]"),
		TopLogprobs:        echo(req, "top_logprobs", "0"),
		TopP:               echo(req, "top_p", "1.0"),
		Truncation:         echo(req, "truncation", `"disabled"`),
		Usage:              usage,
		User:               echo(req, "user", "null"),
		Metadata:           echo(req, "metadata", "{}"),
	}
}

func orNull(v json.RawMessage) json.RawMessage {
	if present(v) {
		return v
	}
	return jsonNull
}

func (rp *responsesPlan) usage() *responsesUsage {
	u := rp.plan.usage
	return &responsesUsage{
		InputTokens: u.InputTokens, InputTokensDetails: cachedDetails{CachedTokens: u.CacheReadTokens},
		OutputTokens: u.OutputTokens, OutputTokensDetails: reasoningCount{ReasoningTokens: u.ReasoningTokens},
		TotalTokens: u.InputTokens + u.OutputTokens,
	}
}

func newOutputText(text string) outputText {
	return outputText{Type: "output_text", Annotations: []struct{}{}, Logprobs: []struct{}{}, Text: text}
}

// outputItems is the finished output: the message first, then the calls.
func (rp *responsesPlan) outputItems() []any {
	out := []any{}
	if rp.msgID != "" {
		out = append(out, respMessage{ID: rp.msgID, Type: "message", Status: "completed", Content: []outputText{newOutputText(rp.Text)}, Role: "assistant"})
	}
	for i, tc := range rp.ToolCalls {
		out = append(out, respFunctionCall{ID: rp.fcIDs[i], Type: "function_call", Status: "completed", Arguments: tc.Arguments, CallID: rp.callIDs[i], Name: tc.Name})
	}
	return out
}

func (x *exchange) responsesJSON(pl *plan, req *request) {
	rp := newResponsesPlan(pl)
	obj := rp.object(req, "completed", rp.outputItems(), rp.usage())
	reqID := x.gen.openaiReq()
	x.writeJSON(pl, marshal(obj, "  "), x.openaiHeaders(reqID))
}

func (x *exchange) responsesStream(pl *plan, req *request) {
	rp := newResponsesPlan(pl)
	reqID := x.gen.openaiReq()
	s := x.startStream(pl, rp.id, x.openaiHeaders(reqID))
	seq := 0
	emit := func(name string, v any) bool {
		ok := s.send(name, marshal(v, ""))
		seq++
		return ok
	}
	obfuscation := func() string {
		if req.includeObfuscation {
			return pl.gen.obfuscation()
		}
		return ""
	}
	inBand := func() {
		e := openaiStatusError(500, pl.model, pl.ErrorMessage)
		emit("error", respErrorEvent{Type: "error", SequenceNumber: seq, Code: "server_error", Message: e.message, Param: jsonNull})
	}

	if !emit("response.created", respResponseEvent{Type: "response.created", SequenceNumber: seq, Response: rp.object(req, "in_progress", []any{}, nil)}) {
		return
	}
	if !emit("response.in_progress", respResponseEvent{Type: "response.in_progress", SequenceNumber: seq, Response: rp.object(req, "in_progress", []any{}, nil)}) {
		return
	}
	outIndex := 0
	lastItem := len(pl.ToolCalls)
	if rp.msgID != "" {
		item := respMessage{ID: rp.msgID, Type: "message", Status: "in_progress", Content: []outputText{}, Role: "assistant"}
		if !emit("response.output_item.added", respItemEvent{Type: "response.output_item.added", SequenceNumber: seq, OutputIndex: outIndex, Item: item}) {
			return
		}
		if !emit("response.content_part.added", respPartEvent{Type: "response.content_part.added", SequenceNumber: seq, ItemID: rp.msgID, OutputIndex: outIndex, Part: newOutputText("")}) {
			return
		}
		for _, piece := range pl.chunks {
			d := respTextDelta{Type: "response.output_text.delta", SequenceNumber: seq, ItemID: rp.msgID, OutputIndex: outIndex, Delta: piece, Logprobs: []struct{}{}, Obfuscation: obfuscation()}
			seq++
			if !s.delta("response.output_text.delta", marshal(d, ""), inBand) {
				return
			}
		}
		if lastItem == 0 && !s.contentDone(inBand) {
			return
		}
		if !emit("response.output_text.done", respTextDone{Type: "response.output_text.done", SequenceNumber: seq, ItemID: rp.msgID, OutputIndex: outIndex, Text: pl.Text, Logprobs: []struct{}{}}) {
			return
		}
		if !emit("response.content_part.done", respPartEvent{Type: "response.content_part.done", SequenceNumber: seq, ItemID: rp.msgID, OutputIndex: outIndex, Part: newOutputText(pl.Text)}) {
			return
		}
		item.Status, item.Content = "completed", []outputText{newOutputText(pl.Text)}
		if !emit("response.output_item.done", respItemEvent{Type: "response.output_item.done", SequenceNumber: seq, OutputIndex: outIndex, Item: item}) {
			return
		}
		outIndex++
	}
	for i, tc := range pl.ToolCalls {
		item := respFunctionCall{ID: rp.fcIDs[i], Type: "function_call", Status: "in_progress", Arguments: "", CallID: rp.callIDs[i], Name: tc.Name}
		if !emit("response.output_item.added", respItemEvent{Type: "response.output_item.added", SequenceNumber: seq, OutputIndex: outIndex, Item: item}) {
			return
		}
		for _, part := range pl.argParts[i] {
			d := respArgsDelta{Type: "response.function_call_arguments.delta", SequenceNumber: seq, ItemID: item.ID, OutputIndex: outIndex, Delta: part, Obfuscation: obfuscation()}
			seq++
			if !s.delta("response.function_call_arguments.delta", marshal(d, ""), inBand) {
				return
			}
		}
		if i == lastItem-1 && !s.contentDone(inBand) {
			return
		}
		if !emit("response.function_call_arguments.done", respArgsDone{Type: "response.function_call_arguments.done", SequenceNumber: seq, ItemID: item.ID, OutputIndex: outIndex, Arguments: tc.Arguments}) {
			return
		}
		item.Status, item.Arguments = "completed", tc.Arguments
		if !emit("response.output_item.done", respItemEvent{Type: "response.output_item.done", SequenceNumber: seq, OutputIndex: outIndex, Item: item}) {
			return
		}
		outIndex++
	}
	if pl.OmitStopReason {
		return
	}
	emit("response.completed", respResponseEvent{Type: "response.completed", SequenceNumber: seq, Response: rp.object(req, "completed", rp.outputItems(), rp.usage())})
}
