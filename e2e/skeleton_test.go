package e2e

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/anthropics/anthropic-sdk-go/v2"
	aoption "github.com/anthropics/anthropic-sdk-go/v2/option"
	"github.com/openai/openai-go/v3"
	ooption "github.com/openai/openai-go/v3/option"

	"github.com/perpetuity/perpetuity/e2e/fakeprovider"
)

// chatTurn sends history+question through one SDK, streaming or not, and
// returns the reply text the SDK saw.
type chatTurn func(t *testing.T, s *server, history []string, question string) string

func openAITurn(stream bool) chatTurn {
	return func(t *testing.T, s *server, history []string, question string) string {
		t.Helper()
		c := openai.NewClient(ooption.WithBaseURL(s.OpenAIBase()), ooption.WithAPIKey("sk-test-openai"), ooption.WithMaxRetries(0))
		msgs := []openai.ChatCompletionMessageParamUnion{openai.SystemMessage("You are a careful assistant.")}
		for i, h := range history {
			if i%2 == 0 {
				msgs = append(msgs, openai.UserMessage(h))
			} else {
				msgs = append(msgs, openai.AssistantMessage(h))
			}
		}
		msgs = append(msgs, openai.UserMessage(question))
		p := openai.ChatCompletionNewParams{Model: "gpt-4o-mini", Messages: msgs}
		ctx := context.Background()
		if !stream {
			r, err := c.Chat.Completions.New(ctx, p)
			if err != nil {
				t.Fatalf("openai: %v", err)
			}
			return r.Choices[0].Message.Content
		}
		st := c.Chat.Completions.NewStreaming(ctx, p)
		acc := openai.ChatCompletionAccumulator{}
		for st.Next() {
			acc.AddChunk(st.Current())
		}
		if err := st.Err(); err != nil {
			t.Fatalf("openai stream: %v", err)
		}
		return acc.Choices[0].Message.Content
	}
}

func anthropicTurn(stream bool) chatTurn {
	return func(t *testing.T, s *server, history []string, question string) string {
		t.Helper()
		c := anthropic.NewClient(aoption.WithBaseURL(s.AnthropicBase()), aoption.WithAPIKey("sk-ant-test"), aoption.WithMaxRetries(0))
		var msgs []anthropic.MessageParam
		for i, h := range history {
			if i%2 == 0 {
				msgs = append(msgs, anthropic.NewUserMessage(anthropic.NewTextBlock(h)))
			} else {
				msgs = append(msgs, anthropic.NewAssistantMessage(anthropic.NewTextBlock(h)))
			}
		}
		msgs = append(msgs, anthropic.NewUserMessage(anthropic.NewTextBlock(question)))
		p := anthropic.MessageNewParams{Model: "claude-sonnet-4-5", MaxTokens: 512, Messages: msgs,
			System: []anthropic.TextBlockParam{{Text: "You are a careful assistant."}}}
		ctx := context.Background()
		if !stream {
			m, err := c.Messages.New(ctx, p)
			if err != nil {
				t.Fatalf("anthropic: %v", err)
			}
			return textOf(m)
		}
		st := c.Messages.NewStreaming(ctx, p)
		m := anthropic.Message{}
		for st.Next() {
			if err := m.Accumulate(st.Current()); err != nil {
				t.Fatalf("accumulate: %v", err)
			}
		}
		if err := st.Err(); err != nil {
			t.Fatalf("anthropic stream: %v", err)
		}
		return textOf(&m)
	}
}

func textOf(m *anthropic.Message) string {
	var b strings.Builder
	for _, c := range m.Content {
		if c.Type == "text" {
			b.WriteString(c.Text)
		}
	}
	return b.String()
}

var dialects = []struct {
	name string
	turn chatTurn
}{
	{"openai", openAITurn(false)},
	{"openai-stream", openAITurn(true)},
	{"anthropic", anthropicTurn(false)},
	{"anthropic-stream", anthropicTurn(true)},
}

// TestRoundTrip: the reply reaches the SDK intact, both turns are stored
// exactly once, and the provider receives the stored conversation, not the
// harness's copy of it.
func TestRoundTrip(t *testing.T) {
	t.Parallel()
	for _, d := range dialects {
		t.Run(d.name, func(t *testing.T) {
			t.Parallel()
			s := startServer(t)
			s.Fake.Script(fakeprovider.Reply{Text: "The capital of France is Paris, as you know."})
			got := d.turn(t, s, nil, "What is the capital of France?")
			if got != "The capital of France is Paris, as you know." {
				t.Fatalf("reply reached the SDK as %q", got)
			}
			msgs := s.waitStored(2)
			if len(msgs) != 2 || msgs[0].Role != "user" || msgs[0].Text != "What is the capital of France?" ||
				msgs[1].Role != "assistant" || msgs[1].Text != "The capital of France is Paris, as you know." || msgs[1].Interrupted {
				t.Fatalf("stored after turn 1: %+v", msgs)
			}

			// Turn 2: the harness resends its history, with its copy of the
			// assistant's reply altered. The provider must get the stored one.
			s.Fake.Script(fakeprovider.Reply{Text: "Lyon is second."})
			got = d.turn(t, s, []string{"What is the capital of France?", "HARNESS COPY THAT WAS NEVER SAID"}, "And the second city?")
			if got != "Lyon is second." {
				t.Fatalf("turn 2 reply %q", got)
			}
			msgs = s.waitStored(4)
			if len(msgs) != 4 {
				t.Fatalf("want 4 stored messages (each once), got %d: %+v", len(msgs), msgs)
			}
			reqs := s.Fake.Requests()
			last := string(reqs[len(reqs)-1].Body)
			if strings.Contains(last, "HARNESS COPY") {
				t.Fatalf("provider received the harness's history: %s", last)
			}
			for _, want := range []string{"The capital of France is Paris, as you know.", "And the second city?", "You are a careful assistant."} {
				if !strings.Contains(last, want) {
					t.Fatalf("provider request lacks %q: %s", want, last)
				}
			}
			if n := s.scalar(`SELECT count(*) FROM conversations WHERE tenant_id = $1`, s.TenantID); n != 1 {
				t.Fatalf("history resent in one conversation made %d conversations", n)
			}
		})
	}
}

// TestMalformed: bad bodies get a 400 in the caller's dialect and store nothing.
func TestMalformed(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	cases := []struct {
		name, path, body string
		header           map[string]string
		check            func(t *testing.T, body []byte)
	}{
		{"openai-not-json", "/v1/chat/completions", `{"model": "gpt-4o", "messages": [`, map[string]string{"Authorization": "Bearer sk-x"}, openAIError},
		{"openai-no-messages", "/v1/chat/completions", `{"model": "gpt-4o"}`, map[string]string{"Authorization": "Bearer sk-x"}, openAIError},
		{"openai-bad-role", "/v1/chat/completions", `{"model": "gpt-4o","messages":[{"role":"wizard","content":"hi"}]}`, map[string]string{"Authorization": "Bearer sk-x"}, openAIError},
		{"anthropic-not-json", "/v1/messages", `not json`, map[string]string{"x-api-key": "sk-ant-x", "anthropic-version": "2023-06-01"}, anthropicError},
		{"anthropic-content-number", "/v1/messages", `{"model":"claude-sonnet-4-5","max_tokens":5,"messages":[{"role":"user","content":42}]}`, map[string]string{"x-api-key": "sk-ant-x"}, anthropicError},
	}
	for _, c := range cases {
		req, _ := http.NewRequest(http.MethodPost, s.URL+"/k/"+s.Key+c.path, strings.NewReader(c.body))
		req.Header.Set("Content-Type", "application/json")
		for k, v := range c.header {
			req.Header.Set(k, v)
		}
		resp, err := httpClient().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusBadRequest {
			t.Fatalf("%s: status %d, body %s", c.name, resp.StatusCode, b)
		}
		c.check(t, b)
	}
	if n := s.scalar(`SELECT count(*) FROM messages`); n != 0 {
		t.Fatalf("malformed requests stored %d messages", n)
	}
	if n := len(s.Fake.Requests()); n != 0 {
		t.Fatalf("malformed requests reached the provider %d times", n)
	}
}

func openAIError(t *testing.T, body []byte) {
	t.Helper()
	var e struct {
		Error struct {
			Message string `json:"message"`
			Type    string `json:"type"`
		} `json:"error"`
	}
	if json.Unmarshal(body, &e) != nil || e.Error.Message == "" || e.Error.Type != "invalid_request_error" {
		t.Fatalf("not an OpenAI error body: %s", body)
	}
}

func anthropicError(t *testing.T, body []byte) {
	t.Helper()
	var e struct {
		Type  string `json:"type"`
		Error struct {
			Type    string `json:"type"`
			Message string `json:"message"`
		} `json:"error"`
	}
	if json.Unmarshal(body, &e) != nil || e.Type != "error" || e.Error.Type != "invalid_request_error" || e.Error.Message == "" {
		t.Fatalf("not an Anthropic error body: %s", body)
	}
}
