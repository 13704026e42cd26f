package fakeprovider

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
)

// marshal encodes like the real services: no HTML escaping, optional
// indentation, no trailing newline.
func marshal(v any, indent string) []byte {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if indent != "" {
		enc.SetIndent("", indent)
	}
	if err := enc.Encode(v); err != nil {
		// Only our own types are encoded; failing here is a bug in this package.
		panic(fmt.Sprintf("fakeprovider: encode %T: %v", v, err))
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n"))
}

// nullable marshals "" as null, as the APIs do for absent strings.
func nullable(s string) json.RawMessage {
	if s == "" {
		return json.RawMessage("null")
	}
	return json.RawMessage(marshal(s, ""))
}

type openaiErrorBody struct {
	Error openaiErrorObject `json:"error"`
}

type openaiErrorObject struct {
	Message string          `json:"message"`
	Type    string          `json:"type"`
	Param   json.RawMessage `json:"param"`
	Code    json.RawMessage `json:"code"`
}

func openaiBadJSON() *apiError {
	return &apiError{status: 400, message: "We could not parse the JSON body of your request. (HINT: This likely means you aren't using your HTTP library correctly. The OpenAI API expects a JSON payload, but what was sent was not valid JSON. If you have trouble figuring out how to fix this, please contact us through our help center at help.openai.com.)"}
}

func openaiMissingKey() *apiError {
	return &apiError{status: 401, message: "You didn't provide an API key. You need to provide your API key in an Authorization header using Bearer auth (i.e. Authorization: Bearer YOUR_KEY), or as the password field (with blank username) if you're accessing the API from your browser and are prompted for a username. You can obtain an API key from https://platform.openai.com/account/api-keys."}
}

// openaiStatusError is the body OpenAI sends for a status, for scripted
// failures.
func openaiStatusError(status int, model, message string) *apiError {
	e := &apiError{status: status}
	typ := "invalid_request_error"
	switch {
	case status == 401:
		e.message, e.code = "Incorrect API key provided: sk-fake. You can find your API key at https://platform.openai.com/account/api-keys.", "invalid_api_key"
	case status == 403:
		e.message, e.code = "You are not allowed to sample from this model", "model_not_allowed"
	case status == 404:
		e.message, e.code = fmt.Sprintf("The model `%s` does not exist or you do not have access to it.", model), "model_not_found"
	case status == 429:
		typ = "requests"
		e.message, e.code = fmt.Sprintf("Rate limit reached for %s in organization org-fakeprovider on requests per min (RPM): Limit 3, Used 3, Requested 1. Please try again in 1s. Visit https://platform.openai.com/account/rate-limits to learn more.", model), "rate_limit_exceeded"
	case status == 500:
		typ = "server_error"
		e.message = "The server had an error while processing your request. Sorry about that!"
	case status >= 500:
		typ = "server_error"
		e.message = "The server is overloaded or not ready yet."
	default:
		e.message = fmt.Sprintf("Invalid request (status %d).", status)
	}
	if message != "" {
		e.message = message
	}
	e.typ = typ
	return e
}

func openaiErrorObj(e *apiError) openaiErrorObject {
	typ := e.typ
	switch {
	case typ != "":
	case e.status >= 500:
		typ = "server_error"
	default:
		typ = "invalid_request_error"
	}
	return openaiErrorObject{Message: e.message, Type: typ, Param: nullable(e.param), Code: nullable(e.code)}
}

func openaiErrorJSON(e *apiError) []byte {
	return marshal(openaiErrorBody{Error: openaiErrorObj(e)}, "    ")
}

type anthropicErrorBody struct {
	Type      string               `json:"type"`
	Error     anthropicErrorObject `json:"error"`
	RequestID string               `json:"request_id,omitempty"`
}

type anthropicErrorObject struct {
	Type    string `json:"type"`
	Message string `json:"message"`
}

func anthropicErrorType(status int) (typ, message string) {
	switch {
	case status == 400:
		return "invalid_request_error", "Invalid request"
	case status == 401:
		return "authentication_error", "invalid x-api-key"
	case status == 403:
		return "permission_error", "Your API key does not have permission to use the specified resource."
	case status == 404:
		return "not_found_error", "Not found"
	case status == 413:
		return "request_too_large", "Request exceeds the maximum allowed number of bytes."
	case status == 429:
		return "rate_limit_error", "Number of requests has exceeded your per-minute rate limit (https://docs.claude.com/en/api/rate-limits); see the response headers for current usage. Please reduce the number of requests or try again later."
	case status == 504:
		return "timeout_error", "Request timed out"
	case status == 529:
		return "overloaded_error", "Overloaded"
	case status >= 500:
		return "api_error", "Internal server error"
	default:
		return "invalid_request_error", fmt.Sprintf("Invalid request (status %d)", status)
	}
}

func anthropicErrorJSON(status int, message, requestID string) []byte {
	typ, def := anthropicErrorType(status)
	if message == "" {
		message = def
	}
	return marshal(anthropicErrorBody{Type: "error", Error: anthropicErrorObject{Type: typ, Message: message}, RequestID: requestID}, "")
}

// writeError answers with the error body of the dialect.
func writeError(w http.ResponseWriter, dialect string, e *apiError, reqID string) {
	h := w.Header()
	var body []byte
	if dialect == DialectAnthropic {
		h.Set("request-id", reqID)
		body = anthropicErrorJSON(e.status, e.message, reqID)
	} else {
		h.Set("x-request-id", reqID)
		body = openaiErrorJSON(e)
	}
	h.Set("Content-Type", "application/json")
	if e.status == http.StatusTooManyRequests {
		h.Set("Retry-After", "1")
	}
	w.WriteHeader(e.status)
	_, _ = w.Write(body)
}
