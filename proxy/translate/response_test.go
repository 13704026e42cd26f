package translate

import (
	"encoding/json"
	"testing"

	anthropicsdk "github.com/anthropics/anthropic-sdk-go/v2"
	openaisdk "github.com/openai/openai-go/v3"
)

func TestMessagesResponseToChat(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name        string
		model       string
		wantFinish  string
		wantContent string
		wantTools   int
		wantPrompt  int64
		wantCached  int64
	}{
		{name: "text", model: "claude-sonnet-4-5", wantFinish: "stop", wantContent: "Hello! <b>Hi</b> & welcome.", wantPrompt: 12},
		{name: "tool_use", wantFinish: "tool_calls", wantContent: "Let me check.", wantTools: 1, wantPrompt: 420, wantCached: 300},
		{name: "max_tokens", wantFinish: "length", wantContent: "Once upon a", wantPrompt: 5},
		{name: "stop_sequence", wantFinish: "stop", wantContent: "", wantPrompt: 5},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			tr, log := newTestTranslator()
			out, err := tr.MessagesResponseToChat(readInput(t, "messages_response/"+tt.name+".json"), tt.model)
			if err != nil {
				t.Fatal(err)
			}
			checkGolden(t, "messages_response/"+tt.name, goldenWithLog(append(out, '\n'), log))

			var c openaisdk.ChatCompletion
			if err := json.Unmarshal(out, &c); err != nil {
				t.Fatalf("OpenAI SDK cannot decode: %v", err)
			}
			if len(c.Choices) != 1 {
				t.Fatalf("%d choices", len(c.Choices))
			}
			ch := c.Choices[0]
			if ch.FinishReason != tt.wantFinish || ch.Message.Content != tt.wantContent || len(ch.Message.ToolCalls) != tt.wantTools {
				t.Errorf("finish %q content %q tools %d; want %q %q %d", ch.FinishReason, ch.Message.Content, len(ch.Message.ToolCalls), tt.wantFinish, tt.wantContent, tt.wantTools)
			}
			if c.Usage.PromptTokens != tt.wantPrompt || c.Usage.PromptTokensDetails.CachedTokens != tt.wantCached {
				t.Errorf("usage prompt %d cached %d; want %d %d", c.Usage.PromptTokens, c.Usage.PromptTokensDetails.CachedTokens, tt.wantPrompt, tt.wantCached)
			}
			for _, tc := range ch.Message.ToolCalls {
				if !json.Valid([]byte(tc.Function.Arguments)) {
					t.Errorf("arguments %q are not JSON", tc.Function.Arguments)
				}
			}
			if tt.model != "" && c.Model != tt.model {
				t.Errorf("model %q, want the client's %q", c.Model, tt.model)
			}
		})
	}
}

func TestChatResponseToMessages(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name       string
		wantStop   string
		wantBlocks []string
		wantInput  int64
		wantCached int64
	}{
		{name: "text", wantStop: "end_turn", wantBlocks: []string{"text"}, wantInput: 176, wantCached: 1024},
		{name: "tool_calls", wantStop: "tool_use", wantBlocks: []string{"tool_use", "tool_use"}, wantInput: 82},
		{name: "length", wantStop: "max_tokens", wantBlocks: []string{"text"}, wantInput: 5},
		{name: "refusal", wantStop: "refusal", wantBlocks: []string{"text"}, wantInput: 5},
		{name: "ollama_tool_stop", wantStop: "tool_use", wantBlocks: []string{"tool_use"}, wantInput: 50},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			tr, log := newTestTranslator()
			out, err := tr.ChatResponseToMessages(readInput(t, "chat_response/"+tt.name+".json"), "")
			if err != nil {
				t.Fatal(err)
			}
			checkGolden(t, "chat_response/"+tt.name, goldenWithLog(append(out, '\n'), log))

			var m anthropicsdk.Message
			if err := json.Unmarshal(out, &m); err != nil {
				t.Fatalf("Anthropic SDK cannot decode: %v", err)
			}
			if string(m.StopReason) != tt.wantStop {
				t.Errorf("stop_reason %q, want %q", m.StopReason, tt.wantStop)
			}
			var types []string
			for _, b := range m.Content {
				types = append(types, b.Type)
				if b.Type == "tool_use" && !json.Valid(b.Input) {
					t.Errorf("tool_use input %s is not JSON", b.Input)
				}
			}
			if len(types) != len(tt.wantBlocks) {
				t.Errorf("blocks %v, want %v", types, tt.wantBlocks)
			} else {
				for i := range types {
					if types[i] != tt.wantBlocks[i] {
						t.Errorf("blocks %v, want %v", types, tt.wantBlocks)
					}
				}
			}
			if m.Usage.InputTokens != tt.wantInput || m.Usage.CacheReadInputTokens != tt.wantCached {
				t.Errorf("usage input %d cached %d; want %d %d", m.Usage.InputTokens, m.Usage.CacheReadInputTokens, tt.wantInput, tt.wantCached)
			}
		})
	}
}

func TestResponseErrors(t *testing.T) {
	t.Parallel()
	tr, _ := newTestTranslator()
	for _, body := range []string{`{"content":5}`, `not json`, `[1]`} {
		if _, err := tr.MessagesResponseToChat([]byte(body), ""); err == nil {
			t.Errorf("MessagesResponseToChat(%s): want an error", body)
		}
	}
	for _, body := range []string{`{"choices":5}`, `not json`} {
		if _, err := tr.ChatResponseToMessages([]byte(body), ""); err == nil {
			t.Errorf("ChatResponseToMessages(%s): want an error", body)
		}
	}
}
