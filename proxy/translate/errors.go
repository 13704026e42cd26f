package translate

import (
	"encoding/json"
	"net/http"
	"strings"
	"unicode/utf8"

	"github.com/perpetuity/perpetuity/proxy/sse"
	"github.com/perpetuity/perpetuity/proxy/wire/anthropic"
	"github.com/perpetuity/perpetuity/proxy/wire/jsonx"
	"github.com/perpetuity/perpetuity/proxy/wire/openai"
)

// maxErrorText bounds the message taken from a non-JSON error body (an HTML
// page from a load balancer, say).
const maxErrorText = 1000

// ErrorToChat turns an Anthropic error response into an OpenAI one. The
// status is kept (529 included: OpenAI clients retry any 5xx); the message
// is kept; the type becomes OpenAI's closest (type, code) pair. A body that
// is not Anthropic's error JSON yields its text as the message.
func ErrorToChat(status int, body []byte) (int, []byte) {
	typ, msg := anthropicErrorOf(status, body)
	oType, code := chatErrorType(typ)
	out, _ := jsonx.Marshal(openai.NewErrorBody(oType, code, msg))
	return status, out
}

// ErrorToMessages turns an OpenAI error response into an Anthropic one. The
// status is kept; the type follows the status (OpenAI's types are too
// coarse: a bad key is an invalid_request_error there).
func ErrorToMessages(status int, body []byte) (int, []byte) {
	msg := ""
	var eb struct {
		Error json.RawMessage `json:"error"`
	}
	if json.Unmarshal(body, &eb) == nil {
		if d, ok := openai.ParseErrorDetail(eb.Error); ok {
			msg = d.Message
		}
	}
	if msg == "" {
		msg = bodyText(status, body)
	}
	out, _ := jsonx.Marshal(anthropic.NewErrorBody(StatusErrorType(status), msg))
	return status, out
}

func anthropicErrorOf(status int, body []byte) (typ, msg string) {
	var eb anthropic.ErrorBody
	if json.Unmarshal(body, &eb) == nil && eb.Error.Message != "" {
		typ, msg = eb.Error.Type, eb.Error.Message
	} else {
		msg = bodyText(status, body)
	}
	if typ == "" {
		typ = StatusErrorType(status)
	}
	return typ, msg
}

func bodyText(status int, body []byte) string {
	s := strings.TrimSpace(strings.ToValidUTF8(string(body), ""))
	if len(s) > maxErrorText {
		s = s[:maxErrorText]
		for !utf8.ValidString(s) {
			s = s[:len(s)-1]
		}
	}
	if s == "" {
		s = http.StatusText(status)
	}
	if s == "" {
		s = "upstream error"
	}
	return s
}

// chatErrorType maps an Anthropic error type to OpenAI's (type, code).
func chatErrorType(typ string) (string, string) {
	switch typ {
	case anthropic.ErrInvalidRequest:
		return openai.ErrInvalidRequest, ""
	case anthropic.ErrAuthentication:
		return openai.ErrInvalidRequest, "invalid_api_key"
	case anthropic.ErrPermission:
		return openai.ErrInvalidRequest, "permission_denied"
	case anthropic.ErrNotFound:
		return openai.ErrInvalidRequest, "not_found"
	case anthropic.ErrRequestTooLarge:
		return openai.ErrInvalidRequest, "request_too_large"
	case anthropic.ErrBilling:
		return openai.ErrInsufficientQuota, "insufficient_quota"
	case anthropic.ErrRateLimit:
		return openai.ErrRequests, "rate_limit_exceeded"
	case anthropic.ErrOverloaded:
		return openai.ErrServer, "overloaded"
	case anthropic.ErrTimeout:
		return openai.ErrServer, "timeout"
	}
	return openai.ErrServer, ""
}

// StatusErrorType is the error type that goes with an HTTP status, in
// Anthropic's vocabulary: the proxy's one table from status to kind of
// error (app names the kind of an HTTP error by it too).
func StatusErrorType(status int) string {
	switch status {
	case http.StatusUnauthorized:
		return anthropic.ErrAuthentication
	case http.StatusPaymentRequired:
		return anthropic.ErrBilling
	case http.StatusForbidden:
		return anthropic.ErrPermission
	case http.StatusNotFound:
		return anthropic.ErrNotFound
	case http.StatusRequestEntityTooLarge:
		return anthropic.ErrRequestTooLarge
	case http.StatusTooManyRequests:
		return anthropic.ErrRateLimit
	case http.StatusServiceUnavailable, 529:
		return anthropic.ErrOverloaded
	case http.StatusGatewayTimeout:
		return anthropic.ErrTimeout
	}
	if status >= 500 {
		return anthropic.ErrAPI
	}
	return anthropic.ErrInvalidRequest
}

// ChatErrorEvent is an in-band OpenAI stream error: `data: {"error":{...}}`.
// typ is an Anthropic or OpenAI error type; Anthropic ones are mapped.
func ChatErrorEvent(typ, message string) sse.Event {
	oType, code := chatErrorType(typ)
	if !isAnthropicErrorType(typ) && typ != "" {
		oType, code = typ, ""
	}
	data, _ := jsonx.Marshal(openai.NewErrorBody(oType, code, message))
	return dataEvent("", data)
}

// MessagesErrorEvent is an in-band Anthropic stream error:
// `event: error` with {"type":"error","error":{...}}. typ should be an
// Anthropic error type ("" means api_error).
func MessagesErrorEvent(typ, message string) sse.Event {
	if typ == "" {
		typ = anthropic.ErrAPI
	}
	data, _ := jsonx.Marshal(anthropic.NewErrorBody(typ, message))
	return dataEvent(anthropic.EventError, data)
}

func isAnthropicErrorType(typ string) bool {
	switch typ {
	case anthropic.ErrInvalidRequest, anthropic.ErrAuthentication, anthropic.ErrBilling,
		anthropic.ErrPermission, anthropic.ErrNotFound, anthropic.ErrRequestTooLarge,
		anthropic.ErrRateLimit, anthropic.ErrAPI, anthropic.ErrTimeout, anthropic.ErrOverloaded:
		return true
	}
	return false
}

// openaiTypeToMessages maps an OpenAI in-band error (type and code) to the
// closest Anthropic error type; there is no status to go by mid-stream.
func openaiTypeToMessages(d openai.ErrorDetail) string {
	if isAnthropicErrorType(d.Type) {
		return d.Type
	}
	code := d.CodeString()
	switch {
	case code == "rate_limit_exceeded" || d.Type == openai.ErrRequests || d.Type == "tokens" || code == "429":
		return anthropic.ErrRateLimit
	case d.Type == openai.ErrInsufficientQuota:
		return anthropic.ErrBilling
	case code == "invalid_api_key" || code == "401":
		return anthropic.ErrAuthentication
	case d.Type == openai.ErrInvalidRequest || code == "400":
		return anthropic.ErrInvalidRequest
	case code == "503" || code == "529" || code == "overloaded":
		return anthropic.ErrOverloaded
	case code == "504" || code == "timeout":
		return anthropic.ErrTimeout
	}
	return anthropic.ErrAPI
}
