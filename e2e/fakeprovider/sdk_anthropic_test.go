package fakeprovider

import (
	"context"
	"errors"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/option"
)

func newAnthropic(t *testing.T, replies ...Reply) (anthropic.Client, *Provider) {
	t.Helper()
	p := New()
	p.Script(replies...)
	srv := httptest.NewServer(p)
	t.Cleanup(srv.Close)
	c := anthropic.NewClient(
		option.WithBaseURL(srv.URL),
		option.WithAPIKey("sk-ant-test"),
		option.WithMaxRetries(0),
		option.WithHTTPClient(srv.Client()),
	)
	return c, p
}

func messageParams() anthropic.MessageNewParams {
	return anthropic.MessageNewParams{
		Model:     "claude-sonnet-4-5-20250929",
		MaxTokens: 1024,
		System:    []anthropic.TextBlockParam{{Text: "Be brief."}},
		Messages:  []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("What is the weather in Paris?"))},
		Tools: []anthropic.ToolUnionParam{{OfTool: &anthropic.ToolParam{
			Name:        "get_weather",
			InputSchema: anthropic.ToolInputSchemaParam{Properties: map[string]any{"location": map[string]any{"type": "string"}}},
		}}},
	}
}

// checkAnthropicContent compares content blocks with the expected text and
// tool calls; tool inputs are compared as compact JSON.
func checkAnthropicContent(t *testing.T, content []anthropic.ContentBlockUnion, text string, calls []ToolCall) {
	t.Helper()
	var gotText string
	var gotCalls []anthropic.ContentBlockUnion
	for _, b := range content {
		switch b.Type {
		case "text":
			gotText += b.Text
		case "tool_use":
			gotCalls = append(gotCalls, b)
		default:
			t.Fatalf("unexpected block %s", b.RawJSON())
		}
	}
	if gotText != text {
		t.Fatalf("text %q, want %q", gotText, text)
	}
	if len(gotCalls) != len(calls) {
		t.Fatalf("%d tool calls, want %d", len(gotCalls), len(calls))
	}
	for i, w := range calls {
		g := gotCalls[i]
		if g.Name != w.Name || string(compactJSON(string(g.Input))) != string(compactJSON(w.Arguments)) {
			t.Fatalf("call %d = %s %s, want %+v", i, g.Name, g.Input, w)
		}
		if w.ID != "" && g.ID != w.ID || w.ID == "" && !strings.HasPrefix(g.ID, "toolu_") {
			t.Fatalf("call %d id %q", i, g.ID)
		}
	}
}

func TestAnthropicSDKMessages(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		reply Reply
		text  string
		calls []ToolCall
		stop  anthropic.StopReason
	}{
		{name: "default text", text: "ok: What is the weather in Paris?", stop: anthropic.StopReasonEndTurn},
		{name: "chunked text", reply: Reply{Text: "Sunny <b>&</b> 24°C — nice.", Chunks: 9}, text: "Sunny <b>&</b> 24°C — nice.", stop: anthropic.StopReasonEndTurn},
		{name: "text and tools", reply: Reply{Text: "Checking.", ToolCalls: weatherTools}, text: "Checking.", calls: weatherTools, stop: anthropic.StopReasonToolUse},
		{name: "tool only", reply: Reply{ToolCalls: weatherTools[:1]}, calls: weatherTools[:1], stop: anthropic.StopReasonToolUse},
		{name: "empty tool input", reply: Reply{ToolCalls: []ToolCall{{Name: "now"}}}, calls: []ToolCall{{Name: "now", Arguments: "{}"}}, stop: anthropic.StopReasonToolUse},
	}
	for _, tt := range tests {
		t.Run(tt.name+"/non-streaming", func(t *testing.T) {
			t.Parallel()
			c, p := newAnthropic(t, tt.reply)
			msg, err := c.Messages.New(context.Background(), messageParams())
			if err != nil {
				t.Fatal(err)
			}
			if !strings.HasPrefix(msg.ID, "msg_") || msg.StopReason != tt.stop || msg.Usage.InputTokens < 1 || msg.Usage.OutputTokens < 1 {
				t.Fatalf("message %s", msg.RawJSON())
			}
			checkAnthropicContent(t, msg.Content, tt.text, tt.calls)
			rec := p.Requests()
			if len(rec) != 1 || rec[0].Dialect != DialectAnthropic || rec[0].Header.Get("anthropic-version") == "" {
				t.Fatalf("recorded %d requests: %+v", len(rec), rec)
			}
			// This SDK version sends the key as a bearer token; older ones
			// used x-api-key. The fake accepts both, as the API does.
			if h := rec[0].Header; h.Get("x-api-key") != "sk-ant-test" && h.Get("Authorization") != "Bearer sk-ant-test" {
				t.Fatalf("credential not received: %v", h)
			}
		})
		t.Run(tt.name+"/streaming", func(t *testing.T) {
			t.Parallel()
			c, _ := newAnthropic(t, tt.reply)
			stream := c.Messages.NewStreaming(context.Background(), messageParams())
			var msg anthropic.Message
			var types []string
			for stream.Next() {
				ev := stream.Current()
				types = append(types, ev.Type)
				if err := msg.Accumulate(ev); err != nil {
					t.Fatalf("accumulate %s: %v", ev.RawJSON(), err)
				}
			}
			if err := stream.Err(); err != nil {
				t.Fatal(err)
			}
			if types[0] != "message_start" || types[len(types)-1] != "message_stop" || types[len(types)-2] != "message_delta" {
				t.Fatalf("event order %v", types)
			}
			if msg.StopReason != tt.stop || msg.Usage.OutputTokens < 1 {
				t.Fatalf("accumulated %s", msg.RawJSON())
			}
			checkAnthropicContent(t, msg.Content, tt.text, tt.calls)
		})
	}
}

func TestAnthropicSDKErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		status int
		typ    string
	}{
		{400, "invalid_request_error"},
		{401, "authentication_error"},
		{403, "permission_error"},
		{404, "not_found_error"},
		{429, "rate_limit_error"},
		{500, "api_error"},
		{529, "overloaded_error"},
	}
	for _, tt := range tests {
		t.Run(tt.typ, func(t *testing.T) {
			t.Parallel()
			c, _ := newAnthropic(t, Reply{Status: tt.status}, Reply{Status: tt.status})
			_, err := c.Messages.New(context.Background(), messageParams())
			var apiErr *anthropic.Error
			if !errors.As(err, &apiErr) {
				t.Fatalf("err %T %v, want *anthropic.Error", err, err)
			}
			if apiErr.StatusCode != tt.status || string(apiErr.Type()) != tt.typ || apiErr.Message == "" || !strings.HasPrefix(apiErr.RequestID, "req_") {
				t.Fatalf("got %d %q %q %q", apiErr.StatusCode, apiErr.Type(), apiErr.Message, apiErr.RequestID)
			}
			stream := c.Messages.NewStreaming(context.Background(), messageParams())
			for stream.Next() {
			}
			if !errors.As(stream.Err(), &apiErr) || apiErr.StatusCode != tt.status {
				t.Fatalf("stream err %v", stream.Err())
			}
		})
	}
}

func TestAnthropicSDKStreamFailures(t *testing.T) {
	t.Parallel()
	t.Run("connection cut", func(t *testing.T) {
		t.Parallel()
		c, _ := newAnthropic(t, Reply{Text: "one two three four five", FailAfter: 3})
		stream := c.Messages.NewStreaming(context.Background(), messageParams())
		var text strings.Builder
		for stream.Next() {
			if ev := stream.Current(); ev.Type == "content_block_delta" {
				text.WriteString(ev.Delta.Text)
			}
		}
		if stream.Err() == nil {
			t.Fatal("a cut stream ended cleanly for the SDK")
		}
		if text.String() != "one two three" {
			t.Fatalf("received %q before the cut", text.String())
		}
	})
	t.Run("connection cut inside a tool call", func(t *testing.T) {
		t.Parallel()
		c, _ := newAnthropic(t, Reply{ToolCalls: weatherTools, FailAfter: 5})
		stream := c.Messages.NewStreaming(context.Background(), messageParams())
		for stream.Next() {
		}
		if stream.Err() == nil {
			t.Fatal("a cut stream ended cleanly for the SDK")
		}
	})
	t.Run("in-band error", func(t *testing.T) {
		t.Parallel()
		c, _ := newAnthropic(t, Reply{InBandErrorAfter: 1})
		stream := c.Messages.NewStreaming(context.Background(), messageParams())
		for stream.Next() {
		}
		var apiErr *anthropic.Error
		if !errors.As(stream.Err(), &apiErr) || apiErr.Type() != "overloaded_error" {
			t.Fatalf("err %T %v, want an overloaded_error API error", stream.Err(), stream.Err())
		}
	})
	t.Run("missing stop events", func(t *testing.T) {
		t.Parallel()
		c, _ := newAnthropic(t, Reply{OmitStopReason: true})
		stream := c.Messages.NewStreaming(context.Background(), messageParams())
		var last string
		for stream.Next() {
			last = stream.Current().Type
		}
		if stream.Err() != nil || last != "content_block_stop" {
			t.Fatalf("last event %q err %v; want a clean-looking end after content_block_stop", last, stream.Err())
		}
	})
}

func TestAnthropicSDKCountTokensAndModels(t *testing.T) {
	t.Parallel()
	c, p := newAnthropic(t, Reply{Text: "must stay queued"})
	count, err := c.Messages.CountTokens(context.Background(), anthropic.MessageCountTokensParams{
		Model:    "claude-sonnet-4-5-20250929",
		Messages: messageParams().Messages,
	})
	if err != nil || count.InputTokens < 1 {
		t.Fatalf("count_tokens: %v %+v", err, count)
	}
	page, err := c.Models.List(context.Background(), anthropic.ModelListParams{})
	if err != nil || len(page.Data) == 0 || !strings.HasPrefix(page.Data[0].ID, "claude-") {
		t.Fatalf("models: %v %+v", err, page)
	}
	msg, err := c.Messages.New(context.Background(), messageParams())
	if err != nil || msg.Content[0].Text != "must stay queued" {
		t.Fatalf("count_tokens or models consumed the scripted reply: %v %v", err, msg)
	}
	rec := p.Requests()
	if len(rec) != 3 || rec[0].Path != "/v1/messages/count_tokens" || rec[0].Dialect != DialectAnthropic || rec[1].Dialect != DialectOther {
		t.Fatalf("recorded %+v", rec)
	}
}
