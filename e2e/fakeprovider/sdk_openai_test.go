package fakeprovider

import (
	"context"
	"errors"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/packages/ssestream"
	"github.com/openai/openai-go/v3/responses"
	"github.com/openai/openai-go/v3/shared"
)

func newOpenAI(t *testing.T, replies ...Reply) (openai.Client, *Provider) {
	t.Helper()
	p := New()
	p.Script(replies...)
	srv := httptest.NewServer(p)
	t.Cleanup(srv.Close)
	c := openai.NewClient(
		option.WithBaseURL(srv.URL+"/v1"),
		option.WithAPIKey("sk-test"),
		option.WithMaxRetries(0),
		option.WithHTTPClient(srv.Client()),
	)
	return c, p
}

func chatParams(stream bool) openai.ChatCompletionNewParams {
	p := openai.ChatCompletionNewParams{
		Model: "gpt-4o-mini",
		Messages: []openai.ChatCompletionMessageParamUnion{
			openai.SystemMessage("Be brief."),
			openai.UserMessage("What is the weather in Paris?"),
		},
		Tools: []openai.ChatCompletionToolUnionParam{
			openai.ChatCompletionFunctionTool(shared.FunctionDefinitionParam{Name: "get_weather"}),
		},
	}
	if stream {
		p.StreamOptions = openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)}
	}
	return p
}

func TestOpenAISDKChatNonStreaming(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		reply  Reply
		text   string
		calls  []ToolCall
		finish string
	}{
		{name: "default text", text: "ok: What is the weather in Paris?", finish: "stop"},
		{name: "scripted text", reply: Reply{Text: "Sunny <b>&</b> 24°C"}, text: "Sunny <b>&</b> 24°C", finish: "stop"},
		{name: "tool calls", reply: Reply{Text: "Checking.", ToolCalls: weatherTools}, text: "Checking.", calls: weatherTools, finish: "tool_calls"},
		{name: "usage override", reply: Reply{Text: "x", Usage: &Usage{InputTokens: 100, OutputTokens: 7, CacheReadTokens: 40}}, text: "x", finish: "stop"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c, p := newOpenAI(t, tt.reply)
			res, err := c.Chat.Completions.New(context.Background(), chatParams(false))
			if err != nil {
				t.Fatal(err)
			}
			if !strings.HasPrefix(res.ID, "chatcmpl-") || res.Object != "chat.completion" || res.SystemFingerprint == "" {
				t.Fatalf("envelope: id %q object %q fp %q", res.ID, res.Object, res.SystemFingerprint)
			}
			ch := res.Choices[0]
			if ch.Message.Content != tt.text || ch.FinishReason != tt.finish {
				t.Fatalf("content %q finish %q; want %q %q", ch.Message.Content, ch.FinishReason, tt.text, tt.finish)
			}
			checkOpenAIToolCalls(t, ch.Message.ToolCalls, tt.calls)
			if tt.reply.Usage != nil {
				if res.Usage.PromptTokens != 100 || res.Usage.CompletionTokens != 7 || res.Usage.TotalTokens != 107 || res.Usage.PromptTokensDetails.CachedTokens != 40 {
					t.Fatalf("usage %+v", res.Usage)
				}
			} else if res.Usage.PromptTokens < 1 || res.Usage.CompletionTokens < 1 {
				t.Fatalf("usage not filled: %+v", res.Usage)
			}
			if got := p.Requests(); len(got) != 1 || got[0].Dialect != DialectOpenAIChat || got[0].Model != "gpt-4o-mini" || got[0].Header.Get("Authorization") != "Bearer sk-test" {
				t.Fatalf("recorded %+v", got)
			}
		})
	}
}

func checkOpenAIToolCalls(t *testing.T, got []openai.ChatCompletionMessageToolCallUnion, want []ToolCall) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%d tool calls, want %d", len(got), len(want))
	}
	for i, w := range want {
		g := got[i]
		if g.Function.Name != w.Name || g.Function.Arguments != w.Arguments || g.Type != "function" {
			t.Fatalf("call %d = %+v, want %+v", i, g, w)
		}
		if w.ID != "" && g.ID != w.ID || w.ID == "" && !strings.HasPrefix(g.ID, "call_") {
			t.Fatalf("call %d id %q", i, g.ID)
		}
	}
}

func TestOpenAISDKChatStreaming(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		reply  Reply
		text   string
		calls  []ToolCall
		finish string
	}{
		{name: "default text", text: "ok: What is the weather in Paris?", finish: "stop"},
		{name: "chunked text", reply: Reply{Text: "Sunny, 24°C — nice.", Chunks: 7}, text: "Sunny, 24°C — nice.", finish: "stop"},
		{name: "text and tool calls", reply: Reply{Text: "Checking.", ToolCalls: weatherTools}, text: "Checking.", calls: weatherTools, finish: "tool_calls"},
		{name: "tool call only", reply: Reply{ToolCalls: weatherTools[:1]}, calls: weatherTools[:1], finish: "tool_calls"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c, _ := newOpenAI(t, tt.reply)
			stream := c.Chat.Completions.NewStreaming(context.Background(), chatParams(true))
			var acc openai.ChatCompletionAccumulator
			n := 0
			for stream.Next() {
				if !acc.AddChunk(stream.Current()) {
					t.Fatalf("accumulator rejected chunk %d: %s", n, stream.Current().RawJSON())
				}
				n++
			}
			if err := stream.Err(); err != nil {
				t.Fatal(err)
			}
			if n < 3 {
				t.Fatalf("only %d chunks", n)
			}
			ch := acc.Choices[0]
			if ch.Message.Content != tt.text || ch.FinishReason != tt.finish {
				t.Fatalf("content %q finish %q; want %q %q", ch.Message.Content, ch.FinishReason, tt.text, tt.finish)
			}
			checkOpenAIToolCalls(t, ch.Message.ToolCalls, tt.calls)
			if acc.Usage.TotalTokens == 0 || acc.Usage.TotalTokens != acc.Usage.PromptTokens+acc.Usage.CompletionTokens {
				t.Fatalf("include_usage not honoured: %+v", acc.Usage)
			}
		})
	}
}

func TestOpenAISDKErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		status int
		typ    string
		code   string
	}{
		{400, "invalid_request_error", ""},
		{401, "invalid_request_error", "invalid_api_key"},
		{404, "invalid_request_error", "model_not_found"},
		{429, "requests", "rate_limit_exceeded"},
		{500, "server_error", ""},
		{503, "server_error", ""},
	}
	for _, tt := range tests {
		t.Run(tt.typ+"/"+tt.code, func(t *testing.T) {
			t.Parallel()
			c, _ := newOpenAI(t, Reply{Status: tt.status}, Reply{Status: tt.status})
			_, err := c.Chat.Completions.New(context.Background(), chatParams(false))
			var apiErr *openai.Error
			if !errors.As(err, &apiErr) {
				t.Fatalf("err %T %v, want *openai.Error", err, err)
			}
			if apiErr.StatusCode != tt.status || apiErr.Type != tt.typ || apiErr.Code != tt.code || apiErr.Message == "" {
				t.Fatalf("got %d %q %q %q", apiErr.StatusCode, apiErr.Type, apiErr.Code, apiErr.Message)
			}
			stream := c.Chat.Completions.NewStreaming(context.Background(), chatParams(true))
			for stream.Next() {
			}
			if !errors.As(stream.Err(), &apiErr) || apiErr.StatusCode != tt.status {
				t.Fatalf("stream err %v", stream.Err())
			}
		})
	}
}

func TestOpenAISDKStreamFailures(t *testing.T) {
	t.Parallel()
	t.Run("connection cut", func(t *testing.T) {
		t.Parallel()
		c, _ := newOpenAI(t, Reply{Text: "one two three four five", FailAfter: 2})
		stream := c.Chat.Completions.NewStreaming(context.Background(), chatParams(true))
		var text strings.Builder
		for stream.Next() {
			if len(stream.Current().Choices) > 0 {
				text.WriteString(stream.Current().Choices[0].Delta.Content)
			}
		}
		if stream.Err() == nil {
			t.Fatal("a cut stream ended cleanly for the SDK")
		}
		if text.String() != "one two" {
			t.Fatalf("received %q before the cut, want %q", text.String(), "one two")
		}
	})
	t.Run("connection cut non-streaming", func(t *testing.T) {
		t.Parallel()
		c, _ := newOpenAI(t, Reply{FailAfter: 1})
		if _, err := c.Chat.Completions.New(context.Background(), chatParams(false)); err == nil {
			t.Fatal("a cut body parsed")
		}
	})
	t.Run("in-band error", func(t *testing.T) {
		t.Parallel()
		c, _ := newOpenAI(t, Reply{Text: "one two three", InBandErrorAfter: 1, ErrorMessage: "boom"})
		stream := c.Chat.Completions.NewStreaming(context.Background(), chatParams(true))
		for stream.Next() {
		}
		var se *ssestream.StreamError
		if !errors.As(stream.Err(), &se) || !strings.Contains(se.Message, "boom") {
			t.Fatalf("err %v, want a StreamError carrying the message", stream.Err())
		}
	})
}

func responseParams() responses.ResponseNewParams {
	return responses.ResponseNewParams{
		Model:        "gpt-4.1",
		Instructions: openai.String("Be brief."),
		Input:        responses.ResponseNewParamsInputUnion{OfString: openai.String("What is the weather in Paris?")},
	}
}

func TestOpenAISDKResponses(t *testing.T) {
	t.Parallel()
	t.Run("non-streaming text", func(t *testing.T) {
		t.Parallel()
		c, _ := newOpenAI(t)
		res, err := c.Responses.New(context.Background(), responseParams())
		if err != nil {
			t.Fatal(err)
		}
		if res.OutputText() != "ok: What is the weather in Paris?" || res.Status != "completed" || res.Instructions.OfString != "Be brief." {
			t.Fatalf("got %q status %q", res.OutputText(), res.Status)
		}
		if res.Usage.TotalTokens != res.Usage.InputTokens+res.Usage.OutputTokens || res.Usage.TotalTokens == 0 {
			t.Fatalf("usage %+v", res.Usage)
		}
	})
	t.Run("non-streaming tool calls", func(t *testing.T) {
		t.Parallel()
		c, _ := newOpenAI(t, Reply{ToolCalls: weatherTools})
		res, err := c.Responses.New(context.Background(), responseParams())
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Output) != 2 {
			t.Fatalf("%d output items", len(res.Output))
		}
		for i, item := range res.Output {
			fc := item.AsFunctionCall()
			if fc.Type != "function_call" || fc.Name != weatherTools[i].Name || fc.Arguments != weatherTools[i].Arguments || !strings.HasPrefix(fc.ID, "fc_") || fc.CallID == "" {
				t.Fatalf("item %d = %s", i, item.RawJSON())
			}
		}
	})
	t.Run("streaming text and tools", func(t *testing.T) {
		t.Parallel()
		c, _ := newOpenAI(t, Reply{Text: "Let me check.", ToolCalls: weatherTools})
		stream := c.Responses.NewStreaming(context.Background(), responseParams())
		var text, args strings.Builder
		seq := int64(0)
		var completed responses.Response
		for stream.Next() {
			ev := stream.Current()
			if ev.SequenceNumber != seq {
				t.Fatalf("event %s has sequence %d, want %d", ev.Type, ev.SequenceNumber, seq)
			}
			seq++
			switch ev.Type {
			case "response.output_text.delta":
				text.WriteString(ev.AsResponseOutputTextDelta().Delta)
			case "response.function_call_arguments.delta":
				args.WriteString(ev.AsResponseFunctionCallArgumentsDelta().Delta)
			case "response.completed":
				completed = ev.AsResponseCompleted().Response
			}
		}
		if err := stream.Err(); err != nil {
			t.Fatal(err)
		}
		if text.String() != "Let me check." || args.String() != weatherTools[0].Arguments+weatherTools[1].Arguments {
			t.Fatalf("text %q args %q", text.String(), args.String())
		}
		if completed.Status != "completed" || completed.OutputText() != "Let me check." || len(completed.Output) != 3 {
			t.Fatalf("completed response %s", completed.RawJSON())
		}
	})
	t.Run("streaming in-band error", func(t *testing.T) {
		t.Parallel()
		c, _ := newOpenAI(t, Reply{InBandErrorAfter: 1})
		stream := c.Responses.NewStreaming(context.Background(), responseParams())
		var last responses.ResponseStreamEventUnion
		for stream.Next() {
			last = stream.Current()
		}
		if stream.Err() != nil || last.Type != "error" || last.AsError().Code != "server_error" {
			t.Fatalf("last event %s, err %v", last.RawJSON(), stream.Err())
		}
	})
	t.Run("streaming cut", func(t *testing.T) {
		t.Parallel()
		c, _ := newOpenAI(t, Reply{FailAfter: 1})
		stream := c.Responses.NewStreaming(context.Background(), responseParams())
		for stream.Next() {
		}
		if stream.Err() == nil {
			t.Fatal("cut stream ended cleanly")
		}
	})
}

func TestOpenAISDKModelsAndEmbeddings(t *testing.T) {
	t.Parallel()
	c, _ := newOpenAI(t)
	page, err := c.Models.List(context.Background())
	if err != nil || len(page.Data) == 0 || page.Data[0].ID == "" {
		t.Fatalf("models: %v %+v", err, page)
	}
	m, err := c.Models.Get(context.Background(), "gpt-4o")
	if err != nil || m.ID != "gpt-4o" {
		t.Fatalf("model: %v %+v", err, m)
	}
	for _, format := range []openai.EmbeddingNewParamsEncodingFormat{openai.EmbeddingNewParamsEncodingFormatFloat, openai.EmbeddingNewParamsEncodingFormatBase64} {
		res, err := c.Embeddings.New(context.Background(), openai.EmbeddingNewParams{
			Model:          openai.EmbeddingModelTextEmbedding3Small,
			Input:          openai.EmbeddingNewParamsInputUnion{OfArrayOfStrings: []string{"hello", "world", "hello"}},
			Dimensions:     openai.Int(8),
			EncodingFormat: format,
		})
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Data) != 3 || len(res.Data[0].Embedding) != 8 {
			t.Fatalf("%s: %d vectors of %d", format, len(res.Data), len(res.Data[0].Embedding))
		}
		var norm float64
		for i, v := range res.Data[0].Embedding {
			norm += v * v
			if float32(v) != float32(res.Data[2].Embedding[i]) {
				t.Fatalf("%s: equal inputs embed differently", format)
			}
		}
		if norm < 0.99 || norm > 1.01 {
			t.Fatalf("%s: vector norm² %f, want 1", format, norm)
		}
	}
}
