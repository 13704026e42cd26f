package translate

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/http"
	"testing"

	anthropicsdk "github.com/anthropics/anthropic-sdk-go/v2"
	anthropicsse "github.com/anthropics/anthropic-sdk-go/v2/packages/ssestream"
	openaisdk "github.com/openai/openai-go/v3"
	openaisse "github.com/openai/openai-go/v3/packages/ssestream"

	"github.com/perpetuity/perpetuity/proxy/sse"
)

// runStream feeds the raw SSE text of testdata/file through s and returns
// the concatenated raw output, with End's error noted at the end.
func runStream(t *testing.T, s Stream, input []byte) (raw []byte, endErr error) {
	t.Helper()
	var out bytes.Buffer
	for _, ev := range splitSSE(t, string(input)) {
		evs, err := s.Push(ev)
		if err != nil {
			t.Fatalf("Push(%q): %v", ev.Data, err)
		}
		writeEvents(t, &out, evs)
	}
	evs, endErr := s.End()
	writeEvents(t, &out, evs)
	return out.Bytes(), endErr
}

func writeEvents(t *testing.T, w *bytes.Buffer, evs []sse.Event) {
	t.Helper()
	for _, ev := range evs {
		if len(ev.Raw) == 0 {
			t.Fatalf("event %q without Raw", ev.Data)
		}
		if !bytes.Contains(ev.Raw, ev.Data) {
			t.Errorf("Raw %q does not hold Data %q", ev.Raw, ev.Data)
		}
		w.Write(ev.Raw)
	}
}

func streamGolden(raw []byte, endErr error, log *bytes.Buffer) []byte {
	out := append([]byte{}, raw...)
	out = fmt.Appendf(out, "--- End: %v ---\n", endErr)
	return goldenWithLog(out, log)
}

func sseResponse(raw []byte) *http.Response {
	return &http.Response{
		StatusCode: 200,
		Header:     http.Header{"Content-Type": []string{"text/event-stream"}},
		Body:       io.NopCloser(bytes.NewReader(raw)),
	}
}

func TestMessagesToChatStream(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name         string
		input        string
		includeUsage bool
		wantEnd      error
		wantContent  string
		wantTools    []string // name(arguments)
		wantFinish   string
		wantPrompt   int64
		wantSDKError bool
	}{
		{name: "text", input: "text", includeUsage: true, wantContent: "Hello <world> & \"friends\"\n!", wantFinish: "stop", wantPrompt: 25},
		{name: "text_no_usage", input: "text", wantContent: "Hello <world> & \"friends\"\n!", wantFinish: "stop"},
		{name: "tools", input: "tools", includeUsage: true, wantContent: "Checking both cities.",
			wantTools: []string{`get_weather({"city": "Paris"})`, `get_weather({"city":"Rome"})`}, wantFinish: "tool_calls", wantPrompt: 2482},
		{name: "thinking", input: "thinking", includeUsage: true, wantContent: "The answer is", wantFinish: "length", wantPrompt: 10},
		{name: "error_midstream", input: "error_midstream", wantEnd: ErrUpstreamFailed, wantSDKError: true},
		{name: "unterminated", input: "unterminated", wantEnd: ErrUnterminated, wantContent: "Cut off"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			tr, log := newTestTranslator()
			s := tr.NewMessagesToChatStream(StreamOptions{Model: "claude-sonnet-4-5", IncludeUsage: tt.includeUsage})
			raw, endErr := runStream(t, s, readInput(t, "messages_stream/"+tt.input+".sse"))
			checkGolden(t, "messages_stream/"+tt.name, streamGolden(raw, endErr, log))
			if !errors.Is(endErr, tt.wantEnd) || (tt.wantEnd == nil) != (endErr == nil) {
				t.Errorf("End() = %v, want %v", endErr, tt.wantEnd)
			}

			// The official SDK must read the translated stream.
			stream := openaisse.NewStream[openaisdk.ChatCompletionChunk](openaisse.NewDecoder(sseResponse(raw)), nil)
			acc := openaisdk.ChatCompletionAccumulator{}
			chunks := 0
			for stream.Next() {
				chunk := stream.Current()
				if chunk.Object != "chat.completion.chunk" || chunk.ID != "chatcmpl-test001" || chunk.Model != "claude-sonnet-4-5" {
					t.Errorf("chunk header %q %q %q", chunk.Object, chunk.ID, chunk.Model)
				}
				if !acc.AddChunk(chunk) {
					t.Fatalf("accumulator rejected chunk %d: %s", chunks, chunk.RawJSON())
				}
				chunks++
			}
			if (stream.Err() != nil) != tt.wantSDKError {
				t.Fatalf("SDK stream error = %v, want error: %v", stream.Err(), tt.wantSDKError)
			}
			if tt.wantSDKError {
				return
			}
			if len(acc.Choices) != 1 {
				t.Fatalf("%d choices accumulated", len(acc.Choices))
			}
			msg := acc.Choices[0].Message
			if msg.Content != tt.wantContent {
				t.Errorf("content %q, want %q", msg.Content, tt.wantContent)
			}
			var tools []string
			for _, tc := range msg.ToolCalls {
				tools = append(tools, tc.Function.Name+"("+tc.Function.Arguments+")")
			}
			if fmt.Sprint(tools) != fmt.Sprint(tt.wantTools) {
				t.Errorf("tool calls %v, want %v", tools, tt.wantTools)
			}
			if acc.Choices[0].FinishReason != tt.wantFinish {
				t.Errorf("finish %q, want %q", acc.Choices[0].FinishReason, tt.wantFinish)
			}
			if acc.Usage.PromptTokens != tt.wantPrompt {
				t.Errorf("prompt tokens %d, want %d", acc.Usage.PromptTokens, tt.wantPrompt)
			}
		})
	}
}

func TestChatToMessagesStream(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name         string
		wantEnd      error
		wantBlocks   []string // text:... or tool:id:name:input
		wantStop     string
		wantInput    int64
		wantCached   int64
		wantSDKError bool
	}{
		{name: "text", wantBlocks: []string{"text:Hello <world> & \"friends\"\n!"}, wantStop: "end_turn", wantInput: 76, wantCached: 1024},
		{name: "tools", wantBlocks: []string{`tool:call_abc123:get_weather:{"city":"Paris"}`, `tool:call_def_456:get_weather:{"city":"Rome"}`}, wantStop: "tool_use", wantInput: 82},
		{name: "text_then_tool", wantBlocks: []string{"text:Let me look.", "tool:toolu_test002:now:{}"}, wantStop: "tool_use", wantInput: 30},
		{name: "length_no_usage", wantBlocks: []string{"text:Once upon"}, wantStop: "max_tokens"},
		{name: "error_midstream", wantEnd: ErrUpstreamFailed, wantSDKError: true},
		{name: "openrouter_error", wantEnd: ErrUpstreamFailed, wantSDKError: true},
		{name: "unterminated", wantEnd: ErrUnterminated, wantBlocks: []string{"text:Cut"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			tr, log := newTestTranslator()
			s := tr.NewChatToMessagesStream(StreamOptions{})
			raw, endErr := runStream(t, s, readInput(t, "chat_stream/"+tt.name+".sse"))
			checkGolden(t, "chat_stream/"+tt.name, streamGolden(raw, endErr, log))
			if !errors.Is(endErr, tt.wantEnd) || (tt.wantEnd == nil) != (endErr == nil) {
				t.Errorf("End() = %v, want %v", endErr, tt.wantEnd)
			}

			stream := anthropicsse.NewStream[anthropicsdk.MessageStreamEventUnion](anthropicsse.NewDecoder(sseResponse(raw)), nil)
			var msg anthropicsdk.Message
			sawStop := false
			for stream.Next() {
				ev := stream.Current()
				if err := msg.Accumulate(ev); err != nil {
					t.Fatalf("Accumulate(%s): %v", ev.RawJSON(), err)
				}
				sawStop = sawStop || ev.Type == "message_stop"
			}
			if (stream.Err() != nil) != tt.wantSDKError {
				t.Fatalf("SDK stream error = %v, want error: %v", stream.Err(), tt.wantSDKError)
			}
			if tt.wantSDKError {
				return
			}
			if sawStop != (tt.wantEnd == nil) {
				t.Errorf("message_stop seen: %v, want %v", sawStop, tt.wantEnd == nil)
			}
			var blocks []string
			for _, b := range msg.Content {
				switch b.Type {
				case "text":
					blocks = append(blocks, "text:"+b.Text)
				case "tool_use":
					blocks = append(blocks, "tool:"+b.ID+":"+b.Name+":"+string(b.Input))
				default:
					blocks = append(blocks, b.Type)
				}
			}
			if fmt.Sprintf("%q", blocks) != fmt.Sprintf("%q", tt.wantBlocks) {
				t.Errorf("blocks %q, want %q", blocks, tt.wantBlocks)
			}
			if tt.wantEnd != nil {
				return
			}
			if string(msg.StopReason) != tt.wantStop {
				t.Errorf("stop_reason %q, want %q", msg.StopReason, tt.wantStop)
			}
			if msg.Usage.InputTokens != tt.wantInput || msg.Usage.CacheReadInputTokens != tt.wantCached {
				t.Errorf("usage input %d cached %d, want %d %d", msg.Usage.InputTokens, msg.Usage.CacheReadInputTokens, tt.wantInput, tt.wantCached)
			}
		})
	}
}

func TestStreamMalformedEvent(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		new  func(*Translator) Stream
		data string
	}{
		{"anthropic bad json", func(tr *Translator) Stream { return tr.NewMessagesToChatStream(StreamOptions{}) }, `{"type":"message_start",`},
		{"anthropic block start without block", func(tr *Translator) Stream { return tr.NewMessagesToChatStream(StreamOptions{}) }, `{"type":"content_block_start","index":0}`},
		{"anthropic delta without delta", func(tr *Translator) Stream { return tr.NewMessagesToChatStream(StreamOptions{}) }, `{"type":"content_block_delta","index":0}`},
		{"openai bad json", func(tr *Translator) Stream { return tr.NewChatToMessagesStream(StreamOptions{}) }, `{"id":`},
		{"openai wrong type", func(tr *Translator) Stream { return tr.NewChatToMessagesStream(StreamOptions{}) }, `{"choices":"x"}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			tr, _ := newTestTranslator()
			if _, err := tt.new(tr).Push(sse.Event{Data: []byte(tt.data)}); err == nil {
				t.Error("Push: want an error for a malformed event")
			}
		})
	}
}

func TestStreamIgnoresEventsAfterEnd(t *testing.T) {
	t.Parallel()
	tr, _ := newTestTranslator()
	s := tr.NewChatToMessagesStream(StreamOptions{})
	if _, err := s.Push(sse.Event{Data: []byte("[DONE]")}); err != nil {
		t.Fatal(err)
	}
	evs, err := s.Push(sse.Event{Data: []byte(`{"choices":[{"index":0,"delta":{"content":"late"}}]}`)})
	if err != nil || len(evs) != 0 {
		t.Errorf("after [DONE]: %d events, err %v; want none", len(evs), err)
	}
	if evs, err := s.End(); err != nil || len(evs) != 0 {
		t.Errorf("End: %d events, err %v", len(evs), err)
	}
}
