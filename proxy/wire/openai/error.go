package openai

import (
	"encoding/json"
	"strings"

	"github.com/perpetuity/perpetuity/proxy/wire/jsonx"
)

// ErrorBody is the JSON body of an error response, and the data of an
// in-band stream error event.
type ErrorBody struct {
	Error ErrorDetail `json:"error"`
}

// ErrorDetail describes an error. Param and Code are raw because servers
// disagree on their type (OpenAI: string or null; OpenRouter: a number);
// nil encodes as null.
type ErrorDetail struct {
	Message string          `json:"message"`
	Type    string          `json:"type"`
	Param   json.RawMessage `json:"param"`
	Code    json.RawMessage `json:"code"`
}

// NewErrorBody returns the body for an error of type typ; code may be ""
// (encoded as null).
func NewErrorBody(typ, code, message string) ErrorBody {
	d := ErrorDetail{Message: message, Type: typ}
	if code != "" {
		d.Code, _ = json.Marshal(code)
	}
	return ErrorBody{Error: d}
}

// CodeString is Code as text ("" when null or absent).
func (d ErrorDetail) CodeString() string {
	var s string
	if json.Unmarshal(d.Code, &s) == nil {
		return s
	}
	if len(d.Code) == 0 || string(d.Code) == "null" {
		return ""
	}
	return strings.TrimSpace(string(d.Code))
}

// ParseErrorDetail reads the value of an "error" key: an object, or a bare
// message string as some OpenAI-compatible servers send. ok is false when
// raw is absent, null, or neither.
func ParseErrorDetail(raw json.RawMessage) (d ErrorDetail, ok bool) {
	switch jsonx.FirstByte(raw) {
	case '{':
		if json.Unmarshal(raw, &d) != nil {
			var loose map[string]json.RawMessage
			if json.Unmarshal(raw, &loose) != nil {
				return ErrorDetail{}, false
			}
			_ = json.Unmarshal(loose["message"], &d.Message)
			_ = json.Unmarshal(loose["type"], &d.Type)
		}
		return d, true
	case '"':
		if json.Unmarshal(raw, &d.Message) != nil {
			return ErrorDetail{}, false
		}
		return d, true
	}
	return ErrorDetail{}, false
}

// Error types the API uses.
const (
	ErrInvalidRequest    = "invalid_request_error"
	ErrServer            = "server_error"
	ErrInsufficientQuota = "insufficient_quota"
	ErrRequests          = "requests"
)
