package translate

import (
	"encoding/json"
	"slices"
	"testing"

	anthropicsdk "github.com/anthropics/anthropic-sdk-go/v2"
	openaisdk "github.com/openai/openai-go/v3"

	"github.com/perpetuity/perpetuity/proxy/wire/anthropic"
	"github.com/perpetuity/perpetuity/proxy/wire/openai"
)

func TestChatRequestToMessages(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		maxTokens int64
		messages  int
	}{
		{name: "text", maxTokens: 300, messages: 1},
		{name: "multipart_images", maxTokens: 8192, messages: 1},
		{name: "tools_roundtrip", maxTokens: 1024, messages: 4},
		{name: "alternation", maxTokens: 4096, messages: 4},
		{name: "system_cache_control", maxTokens: 16384, messages: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			tr, log := newTestTranslator()
			out, err := tr.ChatRequestToMessages(readInput(t, "chat_request/"+tt.name+".json"))
			if err != nil {
				t.Fatal(err)
			}
			checkGolden(t, "chat_request/"+tt.name, goldenWithLog(indentJSON(t, out), log))

			req := checkMessagesRequest(t, out, true)
			if got := *req.MaxTokens; got != tt.maxTokens {
				t.Errorf("max_tokens = %d, want %d", got, tt.maxTokens)
			}
			if len(req.Messages) != tt.messages {
				t.Errorf("%d messages, want %d", len(req.Messages), tt.messages)
			}
			var params anthropicsdk.MessageNewParams
			if err := json.Unmarshal(out, &params); err != nil {
				t.Fatalf("Anthropic SDK cannot decode the request: %v", err)
			}
			if len(params.Messages) != len(req.Messages) {
				t.Errorf("SDK sees %d messages, want %d", len(params.Messages), len(req.Messages))
			}
		})
	}
}

// checkMessagesRequest asserts what the Anthropic API enforces: strict
// alternation starting with the user, non-empty text, tool results leading
// the user message right after the tool uses they answer, max_tokens set,
// temperature in 0..1.
// strict adds what only holds for consistent input: a positive max_tokens
// and tool results that answer exactly the preceding tool uses.
func checkMessagesRequest(t *testing.T, body []byte, strict bool) anthropic.MessagesRequest {
	t.Helper()
	req, err := anthropic.ParseMessagesRequest(body)
	if err != nil {
		t.Fatal(err)
	}
	if req.MaxTokens == nil || (strict && *req.MaxTokens <= 0) {
		t.Error("max_tokens missing")
	}
	if req.Temperature != nil && (*req.Temperature < 0 || *req.Temperature > 1) {
		t.Errorf("temperature %v out of 0..1", *req.Temperature)
	}
	var pending []string
	for i, m := range req.Messages {
		want := anthropic.RoleUser
		if i%2 == 1 {
			want = anthropic.RoleAssistant
		}
		if m.Role != want {
			t.Errorf("messages[%d].role = %s, want %s", i, m.Role, want)
		}
		if m.Content.String != nil && *m.Content.String == "" {
			t.Errorf("messages[%d] has empty content", i)
		}
		var results []string
		seenOther := false
		for _, b := range m.Content.Blocks {
			switch b.Type {
			case anthropic.BlockText:
				if b.Text == "" {
					t.Errorf("messages[%d] has an empty text block", i)
				}
				seenOther = true
			case anthropic.BlockToolResult:
				if seenOther {
					t.Errorf("messages[%d]: tool_result after other content", i)
				}
				results = append(results, b.ToolUseID)
			case anthropic.BlockToolUse:
				if !json.Valid(b.Input) || b.Input[0] != '{' {
					t.Errorf("messages[%d]: tool_use input %s is not an object", i, b.Input)
				}
			default:
				seenOther = true
			}
		}
		if strict && m.Role == anthropic.RoleUser && len(pending) > 0 {
			slices.Sort(pending)
			slices.Sort(results)
			if !slices.Equal(pending, results) {
				t.Errorf("messages[%d] answers tool uses %v, want %v", i, results, pending)
			}
		}
		pending = nil
		if m.Role == anthropic.RoleAssistant {
			for _, b := range m.Content.Blocks {
				if b.Type == anthropic.BlockToolUse {
					pending = append(pending, b.ID)
				}
			}
		}
	}
	return req
}

func TestMessagesRequestToChat(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		messages int
		stream   bool
	}{
		{name: "text", messages: 4, stream: true},
		{name: "system_cache_reasoning", messages: 2},
		{name: "images", messages: 1},
		{name: "tools_roundtrip", messages: 5},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			tr, log := newTestTranslator()
			out, err := tr.MessagesRequestToChat(readInput(t, "messages_request/"+tt.name+".json"))
			if err != nil {
				t.Fatal(err)
			}
			checkGolden(t, "messages_request/"+tt.name, goldenWithLog(indentJSON(t, out), log))

			req := checkChatRequest(t, out)
			if len(req.Messages) != tt.messages {
				t.Errorf("%d messages, want %d", len(req.Messages), tt.messages)
			}
			if req.IncludeUsage() != tt.stream {
				t.Errorf("include_usage = %v, want %v (stream)", req.IncludeUsage(), tt.stream)
			}
			var params openaisdk.ChatCompletionNewParams
			if err := json.Unmarshal(out, &params); err != nil {
				t.Fatalf("OpenAI SDK cannot decode the request: %v", err)
			}
			if len(params.Messages) != len(req.Messages) {
				t.Errorf("SDK sees %d messages, want %d", len(params.Messages), len(req.Messages))
			}
		})
	}
}

// checkChatRequest asserts that every tool message answers a tool call of
// the assistant message right before the run of tool messages.
func checkChatRequest(t *testing.T, body []byte) openai.ChatRequest {
	t.Helper()
	req, err := openai.ParseChatRequest(body)
	if err != nil {
		t.Fatal(err)
	}
	calls := map[string]bool{}
	for i, m := range req.Messages {
		switch m.Role {
		case openai.RoleAssistant:
			calls = map[string]bool{}
			for _, tc := range m.ToolCalls {
				calls[tc.ID] = true
				if !json.Valid([]byte(tc.Function.Arguments)) {
					t.Errorf("messages[%d]: arguments %q are not JSON", i, tc.Function.Arguments)
				}
			}
			if m.Content.IsNull() && len(m.ToolCalls) == 0 {
				t.Errorf("messages[%d]: assistant message with neither content nor tool calls", i)
			}
		case openai.RoleTool:
			if !calls[m.ToolCallID] {
				t.Errorf("messages[%d]: tool result %q answers no preceding tool call", i, m.ToolCallID)
			}
			delete(calls, m.ToolCallID)
		default:
			calls = map[string]bool{}
		}
		if m.Content.IsNull() && m.Role != openai.RoleAssistant {
			t.Errorf("messages[%d] (%s) has null content", i, m.Role)
		}
	}
	return req
}

func TestRequestRoundTripKeepsToolIDs(t *testing.T) {
	t.Parallel()
	tr, _ := newTestTranslator()
	in := readInput(t, "chat_request/tools_roundtrip.json")
	msgs, err := tr.ChatRequestToMessages(in)
	if err != nil {
		t.Fatal(err)
	}
	back, err := tr.MessagesRequestToChat(msgs)
	if err != nil {
		t.Fatal(err)
	}
	req := checkChatRequest(t, back)
	var ids []string
	for _, m := range req.Messages {
		for _, tc := range m.ToolCalls {
			ids = append(ids, tc.ID)
		}
		if m.Role == openai.RoleTool {
			ids = append(ids, m.ToolCallID)
		}
	}
	want := []string{"call_abc123", "call_weird_id", "call_now", "call_abc123", "call_weird_id", "call_now"}
	if !slices.Equal(ids, want) {
		t.Errorf("tool ids after a round trip = %v, want %v", ids, want)
	}
}

func TestRequestErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		body string
	}{
		{"not json", `{"model":`},
		{"null", `null`},
		{"array", `[]`},
		{"bad messages", `{"model":"m","messages":"hi"}`},
		{"bad content", `{"model":"m","messages":[{"role":"user","content":5}]}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			tr, _ := newTestTranslator()
			if _, err := tr.ChatRequestToMessages([]byte(tt.body)); err == nil {
				t.Error("ChatRequestToMessages: want an error")
			}
			if _, err := tr.MessagesRequestToChat([]byte(tt.body)); err == nil {
				t.Error("MessagesRequestToChat: want an error")
			}
		})
	}
}

func TestDefaultMaxTokens(t *testing.T) {
	t.Parallel()
	tests := []struct {
		model string
		want  int64
	}{
		{"claude-3-haiku-20240307", 4096},
		{"claude-3-opus-latest", 4096},
		{"claude-3-5-sonnet-20241022", 8192},
		{"anthropic/claude-3.5-haiku", 8192},
		{"claude-3-7-sonnet-latest", 16384},
		{"claude-sonnet-4-5", 16384},
		{"claude-opus-4-1-20250805", 16384},
		{"something-new", 16384},
	}
	for _, tt := range tests {
		if got := DefaultMaxTokens(tt.model); got != tt.want {
			t.Errorf("DefaultMaxTokens(%q) = %d, want %d", tt.model, got, tt.want)
		}
	}
}
