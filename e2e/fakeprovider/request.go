package fakeprovider

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
)

// request is what the fake needs from a generation request body.
type request struct {
	fields             map[string]json.RawMessage
	model              string
	stream             bool
	includeUsage       bool
	includeObfuscation bool
	serviceTier        string
	lastUserText       string
}

// apiError is a validation failure to answer in the request's dialect.
type apiError struct {
	status  int
	message string
	param   string // OpenAI only
	code    string // OpenAI only
	typ     string // OpenAI error type; derived from status when empty
}

func (e *apiError) Error() string { return e.message }

func decodeObject(body []byte) (map[string]json.RawMessage, bool) {
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(body, &fields); err != nil || fields == nil {
		return nil, false
	}
	return fields, true
}

func str(raw json.RawMessage) string {
	var s string
	_ = json.Unmarshal(raw, &s)
	return s
}

func boolean(raw json.RawMessage) bool {
	var b bool
	_ = json.Unmarshal(raw, &b)
	return b
}

func present(raw json.RawMessage) bool {
	return len(raw) > 0 && !bytes.Equal(raw, []byte("null"))
}

func parseStreamOptions(r *request) {
	r.includeObfuscation = true
	var so struct {
		IncludeUsage       *bool `json:"include_usage"`
		IncludeObfuscation *bool `json:"include_obfuscation"`
	}
	if json.Unmarshal(r.fields["stream_options"], &so) == nil {
		if so.IncludeUsage != nil {
			r.includeUsage = *so.IncludeUsage
		}
		if so.IncludeObfuscation != nil {
			r.includeObfuscation = *so.IncludeObfuscation
		}
	}
}

// openaiServiceTier is what the API reports back: "auto" and an absent tier
// run on "default".
func openaiServiceTier(raw json.RawMessage) string {
	switch t := str(raw); t {
	case "flex", "priority", "scale":
		return t
	default:
		return "default"
	}
}

type message struct {
	Role    string          `json:"role"`
	Type    string          `json:"type"`
	Content json.RawMessage `json:"content"`
}

// contentText extracts the text of a message content that is either a
// string or an array of parts; parts of kind textTypes contribute.
func contentText(raw json.RawMessage, textTypes ...string) string {
	if s := ""; json.Unmarshal(raw, &s) == nil {
		return s
	}
	var parts []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	if json.Unmarshal(raw, &parts) != nil {
		return ""
	}
	var texts []string
	for _, p := range parts {
		for _, t := range textTypes {
			if p.Type == t {
				texts = append(texts, p.Text)
			}
		}
	}
	return strings.Join(texts, "\n")
}

func lastUserText(msgs []message, textTypes ...string) string {
	for i := len(msgs) - 1; i >= 0; i-- {
		if msgs[i].Role == "user" {
			return contentText(msgs[i].Content, textTypes...)
		}
	}
	return ""
}

func parseOpenAIChat(body []byte) (*request, *apiError) {
	fields, ok := decodeObject(body)
	if !ok {
		return nil, openaiBadJSON()
	}
	r := &request{fields: fields}
	r.model = str(fields["model"])
	if r.model == "" {
		return nil, &apiError{status: 400, message: "you must provide a model parameter"}
	}
	if !present(fields["messages"]) {
		return nil, &apiError{status: 400, message: "Missing required parameter: 'messages'.", param: "messages", code: "missing_required_parameter"}
	}
	var msgs []message
	if err := json.Unmarshal(fields["messages"], &msgs); err != nil {
		return nil, &apiError{status: 400, message: fmt.Sprintf("Invalid type for 'messages': expected an array of objects, but got %s instead.", jsonKind(fields["messages"])), param: "messages", code: "invalid_type"}
	}
	if len(msgs) == 0 {
		return nil, &apiError{status: 400, message: "Invalid 'messages': empty array. Expected an array with minimum length 1, but got an empty array instead.", param: "messages", code: "empty_array"}
	}
	r.stream = boolean(fields["stream"])
	parseStreamOptions(r)
	r.serviceTier = openaiServiceTier(fields["service_tier"])
	r.lastUserText = lastUserText(msgs, "text")
	return r, nil
}

func parseOpenAIResponses(body []byte) (*request, *apiError) {
	fields, ok := decodeObject(body)
	if !ok {
		return nil, openaiBadJSON()
	}
	r := &request{fields: fields}
	r.model = str(fields["model"])
	if r.model == "" {
		return nil, &apiError{status: 400, message: "Missing required parameter: 'model'.", param: "model", code: "missing_required_parameter"}
	}
	r.stream = boolean(fields["stream"])
	parseStreamOptions(r)
	r.serviceTier = openaiServiceTier(fields["service_tier"])
	input := fields["input"]
	if s := ""; json.Unmarshal(input, &s) == nil {
		r.lastUserText = s
	} else {
		var items []message
		_ = json.Unmarshal(input, &items)
		r.lastUserText = lastUserText(items, "input_text", "text")
	}
	return r, nil
}

func parseAnthropic(body []byte, countOnly bool) (*request, *apiError) {
	fields, ok := decodeObject(body)
	if !ok {
		return nil, &apiError{status: 400, message: "There was an error parsing the body of your request. Please check the formatting of your JSON and try again."}
	}
	r := &request{fields: fields}
	for _, name := range []string{"model", "messages", "max_tokens"} {
		if name == "max_tokens" && countOnly {
			continue
		}
		if !present(fields[name]) {
			return nil, &apiError{status: 400, message: name + ": Field required"}
		}
	}
	r.model = str(fields["model"])
	var msgs []message
	if err := json.Unmarshal(fields["messages"], &msgs); err != nil {
		return nil, &apiError{status: 400, message: "messages: Input should be a valid list"}
	}
	for i, m := range msgs {
		switch m.Role {
		case "user", "assistant":
		case "system":
			return nil, &apiError{status: 400, message: "messages: Unexpected role \"system\". The Messages API accepts a top-level `system` parameter, not \"system\" as an input message role."}
		default:
			return nil, &apiError{status: 400, message: fmt.Sprintf("messages.%d.role: Input should be 'user' or 'assistant'", i)}
		}
	}
	if !countOnly {
		var maxTokens int
		if json.Unmarshal(fields["max_tokens"], &maxTokens) != nil || maxTokens < 1 {
			return nil, &apiError{status: 400, message: "max_tokens: Input should be a valid integer greater than or equal to 1"}
		}
	}
	r.stream = boolean(fields["stream"])
	r.lastUserText = lastUserText(msgs, "text")
	return r, nil
}

func jsonKind(raw json.RawMessage) string {
	switch t := bytes.TrimSpace(raw); {
	case len(t) == 0:
		return "nothing"
	case t[0] == '"':
		return "a string"
	case t[0] == '{':
		return "an object"
	case t[0] == 't' || t[0] == 'f':
		return "a boolean"
	case t[0] == 'n':
		return "null"
	default:
		return "a number"
	}
}
