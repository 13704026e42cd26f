package fakeprovider

import (
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"hash/fnv"
	"math"
	"net/http"
)

type openaiModel struct {
	ID      string `json:"id"`
	Object  string `json:"object"`
	Created int64  `json:"created"`
	OwnedBy string `json:"owned_by"`
}

type anthropicModel struct {
	Type        string `json:"type"`
	ID          string `json:"id"`
	DisplayName string `json:"display_name"`
	CreatedAt   string `json:"created_at"`
}

var (
	openaiModels = []openaiModel{
		{"gpt-4o", "model", 1715367049, "system"},
		{"gpt-4o-mini", "model", 1721172741, "system"},
		{"gpt-4.1", "model", 1744316542, "system"},
		{"o3-mini", "model", 1737146383, "system"},
		{"text-embedding-3-small", "model", 1705948997, "system"},
	}
	anthropicModels = []anthropicModel{
		{"model", "claude-sonnet-4-5-20250929", "Claude Sonnet 4.5", "2025-09-29T00:00:00Z"},
		{"model", "claude-opus-4-1-20250805", "Claude Opus 4.1", "2025-08-05T00:00:00Z"},
		{"model", "claude-3-5-haiku-20241022", "Claude Haiku 3.5", "2024-10-22T00:00:00Z"},
	}
)

func (x *exchange) writeOK(body []byte, dialect string) {
	h := x.w.Header()
	h.Set("Content-Type", "application/json")
	if dialect == DialectAnthropic {
		h.Set("request-id", x.gen.anthropicReq())
	} else {
		h.Set("x-request-id", x.gen.openaiReq())
	}
	x.w.WriteHeader(http.StatusOK)
	_, _ = x.w.Write(body)
}

// models serves GET /v1/models[/{id}] in the dialect the caller's headers
// show.
func (x *exchange) models(id string) {
	if x.isAnthropicCaller() {
		if e := x.authorize(DialectAnthropic); e != nil {
			x.fail(DialectAnthropic, e)
			return
		}
		for _, m := range anthropicModels {
			if m.ID == id {
				x.writeOK(marshal(m, ""), DialectAnthropic)
				return
			}
		}
		if id != "" {
			x.fail(DialectAnthropic, &apiError{status: 404, message: "model: " + id})
			return
		}
		x.writeOK(marshal(struct {
			Data    []anthropicModel `json:"data"`
			HasMore bool             `json:"has_more"`
			FirstID string           `json:"first_id"`
			LastID  string           `json:"last_id"`
		}{anthropicModels, false, anthropicModels[0].ID, anthropicModels[len(anthropicModels)-1].ID}, ""), DialectAnthropic)
		return
	}
	if e := x.authorize(DialectOpenAIChat); e != nil {
		x.fail(DialectOpenAIChat, e)
		return
	}
	for _, m := range openaiModels {
		if m.ID == id {
			x.writeOK(marshal(m, "  "), DialectOpenAIChat)
			return
		}
	}
	if id != "" {
		x.fail(DialectOpenAIChat, &apiError{status: 404, message: "The model '" + id + "' does not exist", param: "model", code: "model_not_found"})
		return
	}
	x.writeOK(marshal(struct {
		Object string        `json:"object"`
		Data   []openaiModel `json:"data"`
	}{"list", openaiModels}, "  "), DialectOpenAIChat)
}

// countTokens serves POST /v1/messages/count_tokens with the same rough
// estimate the generation endpoints report.
func (x *exchange) countTokens() {
	if e := x.authorize(DialectAnthropic); e != nil {
		x.fail(DialectAnthropic, e)
		return
	}
	if _, e := parseAnthropic(x.body, true); e != nil {
		x.fail(DialectAnthropic, e)
		return
	}
	x.writeOK(marshal(struct {
		InputTokens int `json:"input_tokens"`
	}{estimateTokens(len(x.body))}, ""), DialectAnthropic)
}

type embedding struct {
	Object    string          `json:"object"`
	Index     int             `json:"index"`
	Embedding json.RawMessage `json:"embedding"`
}

// embeddings serves POST /v1/embeddings: a deterministic unit vector per
// input, derived from its text, so equal inputs embed equally.
func (x *exchange) embeddings() {
	if e := x.authorize(DialectOpenAIChat); e != nil {
		x.fail(DialectOpenAIChat, e)
		return
	}
	fields, ok := decodeObject(x.body)
	if !ok {
		x.fail(DialectOpenAIChat, openaiBadJSON())
		return
	}
	model := str(fields["model"])
	if model == "" {
		x.fail(DialectOpenAIChat, &apiError{status: 400, message: "you must provide a model parameter"})
		return
	}
	inputs, ok := embeddingInputs(fields["input"])
	if !ok {
		x.fail(DialectOpenAIChat, &apiError{status: 400, message: "'$.input' is invalid. Please check the API reference: https://platform.openai.com/docs/api-reference.", param: "input"})
		return
	}
	dims := 1536
	if model == "text-embedding-3-large" {
		dims = 3072
	}
	if v := fields["dimensions"]; present(v) {
		if json.Unmarshal(v, &dims) != nil || dims < 1 || dims > 3072 {
			x.fail(DialectOpenAIChat, &apiError{status: 400, message: "Invalid 'dimensions'.", param: "dimensions"})
			return
		}
	}
	b64 := str(fields["encoding_format"]) == "base64"
	data := make([]embedding, len(inputs))
	tokens := 0
	for i, in := range inputs {
		vec := vectorFor(in, dims)
		var enc json.RawMessage
		if b64 {
			buf := make([]byte, 4*len(vec))
			for k, f := range vec {
				binary.LittleEndian.PutUint32(buf[4*k:], math.Float32bits(f))
			}
			enc = marshal(base64.StdEncoding.EncodeToString(buf), "")
		} else {
			enc = marshal(vec, "")
		}
		data[i] = embedding{Object: "embedding", Index: i, Embedding: enc}
		tokens += estimateTokens(len(in))
	}
	x.writeOK(marshal(struct {
		Object string      `json:"object"`
		Data   []embedding `json:"data"`
		Model  string      `json:"model"`
		Usage  struct {
			PromptTokens int `json:"prompt_tokens"`
			TotalTokens  int `json:"total_tokens"`
		} `json:"usage"`
	}{Object: "list", Data: data, Model: model, Usage: struct {
		PromptTokens int `json:"prompt_tokens"`
		TotalTokens  int `json:"total_tokens"`
	}{tokens, tokens}}, "  "), DialectOpenAIChat)
}

// embeddingInputs accepts the API's four input shapes: a string, strings,
// a token array, token arrays. Token arrays are embedded by their JSON text.
func embeddingInputs(raw json.RawMessage) ([]string, bool) {
	var one string
	if json.Unmarshal(raw, &one) == nil {
		return []string{one}, true
	}
	var many []string
	if json.Unmarshal(raw, &many) == nil && len(many) > 0 {
		return many, true
	}
	var tokens []int
	if json.Unmarshal(raw, &tokens) == nil && len(tokens) > 0 {
		return []string{string(raw)}, true
	}
	var batches []json.RawMessage
	if json.Unmarshal(raw, &batches) == nil && len(batches) > 0 {
		out := make([]string, len(batches))
		for i, b := range batches {
			if json.Unmarshal(b, &tokens) != nil {
				return nil, false
			}
			out[i] = string(b)
		}
		return out, true
	}
	return nil, false
}

func vectorFor(text string, dims int) []float32 {
	h := fnv.New64a()
	_, _ = h.Write([]byte(text))
	g := idGen{state: h.Sum64()}
	vec := make([]float32, dims)
	var norm float64
	for i := range vec {
		f := float64(g.u64()>>11)/float64(1<<53)*2 - 1
		vec[i] = float32(f)
		norm += f * f
	}
	norm = math.Sqrt(norm)
	for i := range vec {
		vec[i] = float32(float64(vec[i]) / norm)
	}
	return vec
}
