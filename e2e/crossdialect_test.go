package e2e

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/anthropics/anthropic-sdk-go/v2"
	aoption "github.com/anthropics/anthropic-sdk-go/v2/option"
	"github.com/openai/openai-go/v3"
	ooption "github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/shared"

	"github.com/perpetuity/perpetuity/e2e/fakeprovider"
)

const (
	weatherQuestion = "What is the weather in Paris right now?"
	weatherResult   = "sunny, 24C"
	weatherAnswer   = "It is sunny in Paris, 24 degrees."
)

// anthropicWire is the part of an Anthropic request body the tests read.
type anthropicWire struct {
	Model     string          `json:"model"`
	System    json.RawMessage `json:"system"`
	MaxTokens int             `json:"max_tokens"`
	Messages  []struct {
		Role    string          `json:"role"`
		Content json.RawMessage `json:"content"`
	} `json:"messages"`
	Tools []struct {
		Name string `json:"name"`
	} `json:"tools"`
}

// openaiWire is the part of an OpenAI chat request body the tests read.
type openaiWire struct {
	Model    string `json:"model"`
	Messages []struct {
		Role       string          `json:"role"`
		Content    json.RawMessage `json:"content"`
		ToolCallID string          `json:"tool_call_id"`
		ToolCalls  []struct {
			ID       string `json:"id"`
			Function struct {
				Name      string `json:"name"`
				Arguments string `json:"arguments"`
			} `json:"function"`
		} `json:"tool_calls"`
	} `json:"messages"`
	Tools []struct {
		Function struct {
			Name string `json:"name"`
		} `json:"function"`
	} `json:"tools"`
}

// assertWeatherStored: the question and the final answer, once each; the
// tool call round trip stores nothing else.
func assertWeatherStored(t *testing.T, s *server) {
	t.Helper()
	msgs := s.waitStored(2)
	if len(msgs) != 2 || msgs[0].Role != "user" || msgs[0].Text != weatherQuestion ||
		msgs[1].Role != "assistant" || msgs[1].Text != weatherAnswer || msgs[0].Interrupted || msgs[1].Interrupted {
		t.Fatalf("stored %+v", msgs)
	}
}

// TestOpenAISDKToAnthropic: a harness written for the OpenAI SDK uses a
// Claude model by changing only its model name (and key): the request goes
// to the Anthropic-dialect provider, the reply comes back in the OpenAI
// dialect, streaming and not, through a round trip of the harness's own
// tool with its call id intact.
func TestOpenAISDKToAnthropic(t *testing.T) {
	t.Parallel()
	for _, stream := range []bool{false, true} {
		name := map[bool]string{false: "json", true: "stream"}[stream]
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			s := startServer(t)
			s.Fake.Script(
				fakeprovider.Reply{ToolCalls: []fakeprovider.ToolCall{{ID: "toolu_01E2EWeather", Name: "get_weather", Arguments: `{"city":"Paris"}`}}},
				fakeprovider.Reply{Text: weatherAnswer},
			)
			c := openai.NewClient(ooption.WithBaseURL(s.OpenAIBase()), ooption.WithAPIKey("sk-ant-api03-e2e"), ooption.WithMaxRetries(0))
			tool := openai.ChatCompletionFunctionTool(shared.FunctionDefinitionParam{
				Name: "get_weather", Description: openai.String("Current weather of a city"),
				Parameters: shared.FunctionParameters{"type": "object", "properties": map[string]any{"city": map[string]any{"type": "string"}}, "required": []string{"city"}},
			})
			msgs := []openai.ChatCompletionMessageParamUnion{openai.SystemMessage("You are a careful assistant."), openai.UserMessage(weatherQuestion)}
			ask := func() openai.ChatCompletionMessage {
				t.Helper()
				p := openai.ChatCompletionNewParams{Model: "claude-sonnet-4-5", Messages: msgs, Tools: []openai.ChatCompletionToolUnionParam{tool}}
				if !stream {
					r, err := c.Chat.Completions.New(context.Background(), p)
					if err != nil {
						t.Fatalf("openai sdk: %v", err)
					}
					if r.Model != "claude-sonnet-4-5" {
						t.Fatalf("model %q", r.Model)
					}
					return r.Choices[0].Message
				}
				p.StreamOptions = openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)}
				st := c.Chat.Completions.NewStreaming(context.Background(), p)
				acc := openai.ChatCompletionAccumulator{}
				for st.Next() {
					acc.AddChunk(st.Current())
				}
				if err := st.Err(); err != nil {
					t.Fatalf("openai sdk stream: %v", err)
				}
				if acc.Usage.CompletionTokens == 0 {
					t.Fatalf("no usage in the translated stream")
				}
				return acc.Choices[0].Message
			}

			first := ask()
			if len(first.ToolCalls) != 1 {
				t.Fatalf("want one tool call, got %+v", first)
			}
			call := first.ToolCalls[0]
			if call.ID != "toolu_01E2EWeather" || call.Function.Name != "get_weather" || call.Function.Arguments != `{"city":"Paris"}` {
				t.Fatalf("tool call %+v", call)
			}
			msgs = append(msgs, first.ToParam(), openai.ToolMessage(weatherResult, call.ID))
			if got := ask().Content; got != weatherAnswer {
				t.Fatalf("final answer %q", got)
			}

			reqs := s.Fake.Requests()
			if len(reqs) != 2 {
				t.Fatalf("provider got %d requests", len(reqs))
			}
			for _, r := range reqs {
				if r.Dialect != fakeprovider.DialectAnthropic || r.Header.Get("X-Api-Key") != "sk-ant-api03-e2e" || r.Header.Get("Authorization") != "" ||
					r.Header.Get("Anthropic-Version") == "" || r.Stream != stream {
					t.Fatalf("provider request %s %s headers %v stream %v", r.Method, r.Path, r.Header, r.Stream)
				}
			}
			var second anthropicWire
			if err := json.Unmarshal(reqs[1].Body, &second); err != nil {
				t.Fatal(err)
			}
			n := len(second.Messages)
			if second.Model != "claude-sonnet-4-5" || second.MaxTokens == 0 || !strings.Contains(string(second.System), "careful assistant") ||
				len(second.Tools) != 5 || second.Tools[0].Name != "get_weather" || second.Tools[1].Name != "memory_search" || n < 3 {
				t.Fatalf("second request %s", reqs[1].Body)
			}
			for i := range second.Messages {
				if want := map[int]string{0: "user", 1: "assistant"}[i%2]; second.Messages[i].Role != want {
					t.Fatalf("messages do not alternate from the user: %s", reqs[1].Body)
				}
			}
			use, result := string(second.Messages[n-2].Content), string(second.Messages[n-1].Content)
			if !strings.Contains(use, `"type":"tool_use","id":"toolu_01E2EWeather","name":"get_weather","input":{"city":"Paris"}`) ||
				!strings.Contains(result, `"tool_use_id":"toolu_01E2EWeather"`) || !strings.Contains(result, weatherResult) ||
				!strings.Contains(string(second.Messages[n-3].Content), weatherQuestion) {
				t.Fatalf("tool exchange not native after the live question: %s", reqs[1].Body)
			}
			assertWeatherStored(t, s)
		})
	}
}

// TestAnthropicSDKToOpenAI: a harness written for the Anthropic SDK uses a
// GPT model by changing only its model name (and key).
func TestAnthropicSDKToOpenAI(t *testing.T) {
	t.Parallel()
	for _, stream := range []bool{false, true} {
		name := map[bool]string{false: "json", true: "stream"}[stream]
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			s := startServer(t)
			s.Fake.Script(
				fakeprovider.Reply{ToolCalls: []fakeprovider.ToolCall{{ID: "call_E2EWeather", Name: "get_weather", Arguments: `{"city":"Paris"}`}}},
				fakeprovider.Reply{Text: weatherAnswer},
			)
			c := anthropic.NewClient(aoption.WithBaseURL(s.AnthropicBase()), aoption.WithAPIKey("sk-proj-e2e"), aoption.WithMaxRetries(0))
			tool := anthropic.ToolUnionParamOfTool(anthropic.ToolInputSchemaParam{
				Properties: map[string]any{"city": map[string]any{"type": "string"}}, Required: []string{"city"},
			}, "get_weather")
			msgs := []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock(weatherQuestion))}
			ask := func() anthropic.Message {
				t.Helper()
				p := anthropic.MessageNewParams{Model: "gpt-4o-mini", MaxTokens: 512, Messages: msgs, Tools: []anthropic.ToolUnionParam{tool},
					System: []anthropic.TextBlockParam{{Text: "You are a careful assistant."}}}
				if !stream {
					m, err := c.Messages.New(context.Background(), p)
					if err != nil {
						t.Fatalf("anthropic sdk: %v", err)
					}
					return *m
				}
				st := c.Messages.NewStreaming(context.Background(), p)
				m := anthropic.Message{}
				for st.Next() {
					if err := m.Accumulate(st.Current()); err != nil {
						t.Fatalf("accumulate: %v", err)
					}
				}
				if err := st.Err(); err != nil {
					t.Fatalf("anthropic sdk stream: %v", err)
				}
				return m
			}

			first := ask()
			if first.StopReason != anthropic.StopReasonToolUse || len(first.Content) != 1 || first.Content[0].Type != "tool_use" {
				t.Fatalf("first reply %+v", first)
			}
			use := first.Content[0]
			if use.ID != "call_E2EWeather" || use.Name != "get_weather" || string(use.Input) != `{"city":"Paris"}` || first.Model != "gpt-4o-mini" {
				t.Fatalf("tool use %+v input %s", use, use.Input)
			}
			msgs = append(msgs, first.ToParam(), anthropic.NewUserMessage(anthropic.NewToolResultBlock(use.ID, weatherResult, false)))
			final := ask()
			if textOf(&final) != weatherAnswer || final.StopReason != anthropic.StopReasonEndTurn || final.Usage.OutputTokens == 0 {
				t.Fatalf("final reply %+v", final)
			}

			reqs := s.Fake.Requests()
			if len(reqs) != 2 {
				t.Fatalf("provider got %d requests", len(reqs))
			}
			for _, r := range reqs {
				if r.Dialect != fakeprovider.DialectOpenAIChat || r.Header.Get("Authorization") != "Bearer sk-proj-e2e" || r.Header.Get("X-Api-Key") != "" ||
					r.Header.Get("Anthropic-Version") != "" || r.Stream != stream {
					t.Fatalf("provider request %s %s headers %v stream %v", r.Method, r.Path, r.Header, r.Stream)
				}
			}
			var second openaiWire
			if err := json.Unmarshal(reqs[1].Body, &second); err != nil {
				t.Fatal(err)
			}
			n := len(second.Messages)
			if second.Model != "gpt-4o-mini" || n < 4 || second.Messages[0].Role != "system" || len(second.Tools) != 5 || second.Tools[0].Function.Name != "get_weather" || second.Tools[1].Function.Name != "memory_search" {
				t.Fatalf("second request %s", reqs[1].Body)
			}
			asst, res := second.Messages[n-2], second.Messages[n-1]
			if asst.Role != "assistant" || len(asst.ToolCalls) != 1 || asst.ToolCalls[0].ID != "call_E2EWeather" ||
				asst.ToolCalls[0].Function.Arguments != `{"city":"Paris"}` || res.Role != "tool" || res.ToolCallID != "call_E2EWeather" ||
				!strings.Contains(string(res.Content), weatherResult) || !strings.Contains(string(second.Messages[n-3].Content), weatherQuestion) {
				t.Fatalf("tool exchange not native after the live question: %s", reqs[1].Body)
			}
			assertWeatherStored(t, s)
		})
	}
}

// TestCrossDialectMemory: a second conversation turn through a crossing
// gets the stored history, not the harness's copy of it.
func TestCrossDialectMemory(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	c := openai.NewClient(ooption.WithBaseURL(s.OpenAIBase()), ooption.WithAPIKey("sk-ant-api03-e2e"), ooption.WithMaxRetries(0))
	s.Fake.Script(fakeprovider.Reply{Text: "Noted: your cat is Miso."}, fakeprovider.Reply{Text: "Miso."})
	ask := func(msgs ...openai.ChatCompletionMessageParamUnion) string {
		r, err := c.Chat.Completions.New(context.Background(), openai.ChatCompletionNewParams{Model: "claude-haiku-4-5", Messages: msgs})
		if err != nil {
			t.Fatal(err)
		}
		return r.Choices[0].Message.Content
	}
	ask(openai.UserMessage("My cat is called Miso."))
	s.waitStored(2)
	if got := ask(openai.UserMessage("My cat is called Miso."), openai.AssistantMessage("HARNESS COPY"), openai.UserMessage("What is my cat called?")); got != "Miso." {
		t.Fatalf("reply %q", got)
	}
	last := string(s.Fake.Requests()[1].Body)
	if strings.Contains(last, "HARNESS COPY") || !strings.Contains(last, "Noted: your cat is Miso.") {
		t.Fatalf("provider did not get the stored history: %s", last)
	}
	if msgs := s.waitStored(4); len(msgs) != 4 {
		t.Fatalf("stored %+v", msgs)
	}
}

// TestCrossDialectErrors: provider errors come back in the caller's
// dialect with the provider's status, and requests the proxy cannot place
// are 400s that store nothing and reach no provider.
func TestCrossDialectErrors(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	oc := openai.NewClient(ooption.WithBaseURL(s.OpenAIBase()), ooption.WithAPIKey("sk-ant-api03-e2e"), ooption.WithMaxRetries(0))
	ac := anthropic.NewClient(aoption.WithBaseURL(s.AnthropicBase()), aoption.WithAPIKey("sk-proj-e2e"), aoption.WithMaxRetries(0))

	s.Fake.Script(fakeprovider.Reply{Status: http.StatusTooManyRequests})
	_, err := oc.Chat.Completions.New(context.Background(), openai.ChatCompletionNewParams{Model: "claude-sonnet-4-5",
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("rate me")}})
	var oe *openai.Error
	if !errors.As(err, &oe) || oe.StatusCode != http.StatusTooManyRequests || oe.Message == "" {
		t.Fatalf("openai sdk got %v", err)
	}

	s.Fake.Script(fakeprovider.Reply{Status: http.StatusBadRequest, ErrorMessage: "bad things"})
	_, err = ac.Messages.New(context.Background(), anthropic.MessageNewParams{Model: "gpt-4o", MaxTokens: 10,
		Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("break me"))}})
	var ae *anthropic.Error
	if !errors.As(err, &ae) || ae.StatusCode != http.StatusBadRequest || !strings.Contains(ae.RawJSON(), `"type":"invalid_request_error"`) ||
		!strings.Contains(ae.RawJSON(), "bad things") {
		t.Fatalf("anthropic sdk got %v", err)
	}
	before := len(s.Fake.Requests())
	stored := len(s.waitStored(2))

	// Nothing tells which provider serves this model with this key.
	dc := openai.NewClient(ooption.WithBaseURL(s.OpenAIBase()), ooption.WithAPIKey("sk-deepseek-e2e"), ooption.WithMaxRetries(0))
	_, err = dc.Chat.Completions.New(context.Background(), openai.ChatCompletionNewParams{Model: "deepseek-chat",
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("where do I go?")}})
	if !errors.As(err, &oe) || oe.StatusCode != http.StatusBadRequest || !strings.Contains(oe.Message, "deepseek-chat") {
		t.Fatalf("unknown model: %v", err)
	}
	// An OpenAI key is not handed to Anthropic.
	_, err = ac.Messages.New(context.Background(), anthropic.MessageNewParams{Model: "claude-sonnet-4-5", MaxTokens: 10,
		Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("whose key?"))}})
	if !errors.As(err, &ae) || ae.StatusCode != http.StatusBadRequest || !strings.Contains(ae.RawJSON(), "OpenAI key") {
		t.Fatalf("mismatched key: %v", err)
	}
	// A URL as the model names no host.
	_, err = oc.Chat.Completions.New(context.Background(), openai.ChatCompletionNewParams{Model: s.URL + "/v1",
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("go there")}})
	if !errors.As(err, &oe) || oe.StatusCode != http.StatusBadRequest {
		t.Fatalf("url model: %v", err)
	}
	if n := len(s.Fake.Requests()); n != before {
		t.Fatalf("refused requests reached the provider (%d)", n-before)
	}
	if n := len(s.stored()); n != stored {
		t.Fatalf("refused requests stored %d messages", n-stored)
	}
}
