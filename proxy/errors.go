package proxy

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"

	"github.com/perpetuity/perpetuity/proxy/dialect"
	"github.com/perpetuity/perpetuity/proxy/provider"
	"github.com/perpetuity/perpetuity/proxy/wire/jsonx"
	"github.com/perpetuity/perpetuity/proxy/wire/openai"
)

// APIError is an error meant for the client, written in its dialect by the
// one error handler (see WriteError).
type APIError struct {
	Status  int
	Kind    ErrorKind
	Message string
	// RetryAfter, when set, becomes the Retry-After header (seconds).
	RetryAfter string
	// OpenAIType, when set, replaces the kind's OpenAI error type (OpenAI
	// tells its rate limits apart: "requests", "tokens").
	OpenAIType string
	// Body, when set, is an upstream error body already in the client's
	// dialect, relayed as it came.
	Body []byte
}

func (e *APIError) Error() string { return fmt.Sprintf("%d %s: %s", e.Status, e.Kind, e.Message) }

// ErrorKind is the dialect-neutral error category.
type ErrorKind int

const (
	InvalidRequest ErrorKind = iota
	Authentication
	Permission
	NotFound
	RequestTooLarge
	RateLimited
	UpstreamError
	Overloaded
	Internal
)

func (k ErrorKind) String() string { return anthropicType(k) }

func anthropicType(k ErrorKind) string {
	switch k {
	case InvalidRequest:
		return "invalid_request_error"
	case Authentication:
		return "authentication_error"
	case Permission:
		return "permission_error"
	case NotFound:
		return "not_found_error"
	case RequestTooLarge:
		return "request_too_large"
	case RateLimited:
		return "rate_limit_error"
	case Overloaded:
		return "overloaded_error"
	default:
		return "api_error"
	}
}

func openAIType(k ErrorKind) (typ, code string) {
	switch k {
	case InvalidRequest, RequestTooLarge, NotFound:
		return "invalid_request_error", ""
	case Authentication:
		return "invalid_request_error", "invalid_api_key"
	case Permission:
		return "invalid_request_error", "permission_denied"
	case RateLimited:
		return "rate_limit_exceeded", "rate_limit_exceeded"
	default:
		return "server_error", ""
	}
}

func errBadRequest(format string, args ...any) *APIError {
	return &APIError{Status: http.StatusBadRequest, Kind: InvalidRequest, Message: fmt.Sprintf(format, args...)}
}

// refused is a request the providers cannot take (provider.Error) as the
// client's error: a 400, or a 401 for a Perpetuity key sent as the provider
// credential. The message names the header, never the key.
func refused(err error) error {
	var e *provider.Error
	if !errors.As(err, &e) {
		return err
	}
	if e.KeyIn != "" {
		return &APIError{Status: http.StatusUnauthorized, Kind: Authentication, Message: "the provider credential (" + e.KeyIn +
			") is a Perpetuity key; send the provider's own key there, and the Perpetuity key in the URL (/k/<key>/v1) or in " +
			HeaderKey + " (it is never passed on to a provider)"}
	}
	return errBadRequest("%s", e.Message)
}

// ErrorBody renders err as the dialect's error JSON, with its status.
func ErrorBody(d dialect.Dialect, err error) (int, []byte) {
	var ae *APIError
	if !errors.As(err, &ae) {
		ae = &APIError{Status: http.StatusInternalServerError, Kind: Internal, Message: "internal error"}
	}
	if ae.Body != nil {
		return ae.Status, ae.Body
	}
	var body any
	switch d {
	case dialect.AnthropicMessages:
		body = map[string]any{"type": "error", "error": map[string]any{"type": anthropicType(ae.Kind), "message": ae.Message}}
	default:
		typ, code := openAIType(ae.Kind)
		if ae.OpenAIType != "" {
			typ = ae.OpenAIType
		}
		e := map[string]any{"message": ae.Message, "type": typ, "param": nil, "code": nil}
		if code != "" {
			e["code"] = code
		}
		body = map[string]any{"error": e}
	}
	b, _ := json.Marshal(body)
	return ae.Status, b
}

// StreamErrorEvent renders err as the dialect's in-band SSE error, for when
// the response has already started streaming.
func StreamErrorEvent(d dialect.Dialect, err error) []byte {
	_, body := ErrorBody(d, err)
	// A relayed provider body may be pretty-printed; one data line it is.
	var c bytes.Buffer
	if json.Compact(&c, body) == nil {
		body = c.Bytes()
	}
	switch d {
	case dialect.AnthropicMessages:
		return []byte("event: error\ndata: " + string(body) + "\n\n")
	case dialect.OpenAIResponses:
		var eb openai.ErrorBody
		if json.Unmarshal(body, &eb) == nil {
			if b, err := jsonx.Marshal(openai.NewResponsesErrorEvent(eb)); err == nil {
				body = b
			}
		}
		return []byte("event: error\ndata: " + string(body) + "\n\n")
	}
	return []byte("data: " + string(body) + "\n\n")
}
