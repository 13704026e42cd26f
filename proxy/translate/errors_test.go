package translate

import (
	"strings"
	"testing"
)

func TestErrorToChat(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		status int
		body   string
		want   string
	}{
		{"invalid request", 400, `{"type":"error","error":{"type":"invalid_request_error","message":"max_tokens: Field required"},"request_id":"req_1"}`,
			`{"error":{"message":"max_tokens: Field required","type":"invalid_request_error","param":null,"code":null}}`},
		{"authentication", 401, `{"type":"error","error":{"type":"authentication_error","message":"invalid x-api-key"}}`,
			`{"error":{"message":"invalid x-api-key","type":"invalid_request_error","param":null,"code":"invalid_api_key"}}`},
		{"permission", 403, `{"type":"error","error":{"type":"permission_error","message":"no"}}`,
			`{"error":{"message":"no","type":"invalid_request_error","param":null,"code":"permission_denied"}}`},
		{"not found", 404, `{"type":"error","error":{"type":"not_found_error","message":"model: claude-x"}}`,
			`{"error":{"message":"model: claude-x","type":"invalid_request_error","param":null,"code":"not_found"}}`},
		{"rate limit", 429, `{"type":"error","error":{"type":"rate_limit_error","message":"slow down"}}`,
			`{"error":{"message":"slow down","type":"requests","param":null,"code":"rate_limit_exceeded"}}`},
		{"api error", 500, `{"type":"error","error":{"type":"api_error","message":"Internal server error"}}`,
			`{"error":{"message":"Internal server error","type":"server_error","param":null,"code":null}}`},
		{"overloaded", 529, `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`,
			`{"error":{"message":"Overloaded","type":"server_error","param":null,"code":"overloaded"}}`},
		{"html body", 502, `<html>Bad Gateway</html>`,
			`{"error":{"message":"<html>Bad Gateway</html>","type":"server_error","param":null,"code":null}}`},
		{"empty body", 503, ``,
			`{"error":{"message":"Service Unavailable","type":"server_error","param":null,"code":"overloaded"}}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			status, body := ErrorToChat(tt.status, []byte(tt.body))
			if status != tt.status {
				t.Errorf("status %d, want %d", status, tt.status)
			}
			if string(body) != tt.want {
				t.Errorf("body\n got %s\nwant %s", body, tt.want)
			}
		})
	}
}

func TestErrorToMessages(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		status int
		body   string
		want   string
	}{
		{"invalid request", 400, `{"error":{"message":"Invalid 'messages': empty array.","type":"invalid_request_error","param":"messages","code":"empty_array"}}`,
			`{"type":"error","error":{"type":"invalid_request_error","message":"Invalid 'messages': empty array."}}`},
		{"bad key", 401, `{"error":{"message":"Incorrect API key provided: sk-abc.","type":"invalid_request_error","param":null,"code":"invalid_api_key"}}`,
			`{"type":"error","error":{"type":"authentication_error","message":"Incorrect API key provided: sk-abc."}}`},
		{"quota", 402, `{"error":{"message":"pay up","type":"insufficient_quota"}}`,
			`{"type":"error","error":{"type":"billing_error","message":"pay up"}}`},
		{"forbidden", 403, `{"error":{"message":"region","type":"invalid_request_error"}}`,
			`{"type":"error","error":{"type":"permission_error","message":"region"}}`},
		{"model not found", 404, `{"error":{"message":"The model 'gpt-9' does not exist","type":"invalid_request_error","param":null,"code":"model_not_found"}}`,
			`{"type":"error","error":{"type":"not_found_error","message":"The model 'gpt-9' does not exist"}}`},
		{"rate limit", 429, `{"error":{"message":"Rate limit reached","type":"requests","param":null,"code":"rate_limit_exceeded"}}`,
			`{"type":"error","error":{"type":"rate_limit_error","message":"Rate limit reached"}}`},
		{"server", 500, `{"error":{"message":"oops","type":"server_error"}}`,
			`{"type":"error","error":{"type":"api_error","message":"oops"}}`},
		{"unavailable", 503, `{"error":"engine overloaded"}`,
			`{"type":"error","error":{"type":"overloaded_error","message":"engine overloaded"}}`},
		{"openrouter numeric code", 502, `{"error":{"code":502,"message":"upstream died"}}`,
			`{"type":"error","error":{"type":"api_error","message":"upstream died"}}`},
		{"timeout", 504, `gateway timeout`,
			`{"type":"error","error":{"type":"timeout_error","message":"gateway timeout"}}`},
		{"unprocessable", 422, `{"detail":"vLLM says no"}`,
			`{"type":"error","error":{"type":"invalid_request_error","message":"{\"detail\":\"vLLM says no\"}"}}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			status, body := ErrorToMessages(tt.status, []byte(tt.body))
			if status != tt.status {
				t.Errorf("status %d, want %d", status, tt.status)
			}
			if string(body) != tt.want {
				t.Errorf("body\n got %s\nwant %s", body, tt.want)
			}
		})
	}
}

func TestErrorBodyTruncated(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("é", 2000)
	_, body := ErrorToMessages(502, []byte(long))
	if len(body) > maxErrorText+100 {
		t.Errorf("error body is %d bytes, want it bounded", len(body))
	}
	if !strings.Contains(string(body), "éé") {
		t.Errorf("message lost: %s", body)
	}
}

func TestErrorEvents(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		got  string
		want string
	}{
		{"chat from anthropic type", string(ChatErrorEvent("overloaded_error", "Overloaded").Raw),
			"data: {\"error\":{\"message\":\"Overloaded\",\"type\":\"server_error\",\"param\":null,\"code\":\"overloaded\"}}\n\n"},
		{"chat from openai type", string(ChatErrorEvent("server_error", "boom").Raw),
			"data: {\"error\":{\"message\":\"boom\",\"type\":\"server_error\",\"param\":null,\"code\":null}}\n\n"},
		{"messages", string(MessagesErrorEvent("", "boom <x>").Raw),
			"event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"api_error\",\"message\":\"boom <x>\"}}\n\n"},
		{"done", string(ChatDoneEvent().Raw), "data: [DONE]\n\n"},
	}
	for _, tt := range tests {
		if tt.got != tt.want {
			t.Errorf("%s:\n got %q\nwant %q", tt.name, tt.got, tt.want)
		}
	}
}
