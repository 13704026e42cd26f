package proxy

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/perpetuity/perpetuity/proxy/dialect"
	"github.com/perpetuity/perpetuity/proxy/sse"
)

// cutShortAt feeds raw SSE text to an accumulator of d the way the relay
// does (cutsShort before an event, add after it) and returns the index of
// the event the relay would hold back, or -1; it fails t where cutsShort
// disagrees with what add then records (a terminator ending the stream
// without a stop).
func cutShortAt(t testing.TB, d dialect.Dialect, raw string) int {
	t.Helper()
	p := sse.NewParser()
	evs := p.Push([]byte(raw))
	if err := p.Err(); err != nil {
		t.Fatalf("parse %q: %v", raw, err)
	}
	a := newAccumulator(d)
	for i, ev := range evs {
		ended := a.ended
		cut := a.cutsShort(ev)
		a.add(ev)
		if was := !ended && a.ended && !a.done; cut != was {
			t.Fatalf("%s event %d (%q %q): cutsShort %v, add recorded a terminator without a stop: %v", d, i, ev.Event, ev.Data, cut, was)
		}
		if cut {
			return i
		}
	}
	return -1
}

func TestCutsShort(t *testing.T) {
	t.Parallel()
	chunk := func(content, finish string) string {
		f := "null"
		if finish != "" {
			f = `"` + finish + `"`
		}
		return `data: {"id":"c","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"content":"` + content + `"},"finish_reason":` + f + "}]}\n\n"
	}
	msg := func(event, data string) string { return "event: " + event + "\ndata: " + data + "\n\n" }
	start := msg("message_start", `{"type":"message_start","message":{"usage":{"input_tokens":3}}}`)
	delta := msg("content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"hi"}}`)
	stop := msg("message_delta", `{"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":{"output_tokens":1}}`)
	end := msg("message_stop", `{"type":"message_stop"}`)
	cases := []struct {
		name string
		d    dialect.Dialect
		raw  string
		want int // the event held back, -1 for none
	}{
		{"chat with its stop", dialect.OpenAIChat, chunk("a", "") + chunk("b", "stop") + "data: [DONE]\n\n", -1},
		{"chat without a stop", dialect.OpenAIChat, chunk("a", "") + chunk("b", "") + "data: [DONE]\n\n", 2},
		{"chat terminator padded", dialect.OpenAIChat, chunk("a", "") + "data:  [DONE] \n\n", 1},
		{"chat stop in a usage chunk's stream", dialect.OpenAIChat, chunk("a", "length") + `data: {"choices":[],"usage":{"prompt_tokens":1}}` + "\n\ndata: [DONE]\n\n", -1},
		{"chat text that says [DONE]", dialect.OpenAIChat, chunk("[DONE]", "") + chunk("", "stop") + "data: [DONE]\n\n", -1},
		{"messages with its stop", dialect.AnthropicMessages, start + delta + stop + end, -1},
		{"messages without a stop", dialect.AnthropicMessages, start + delta + end, 2},
		{"messages error then end", dialect.AnthropicMessages, start + msg("error", `{"type":"error","error":{"type":"overloaded_error"}}`) + end, 2},
		{"responses completed", dialect.OpenAIResponses, msg("response.output_text.delta", `{"type":"response.output_text.delta","delta":"hi"}`) +
			msg("response.completed", `{"type":"response.completed","response":{"usage":{"input_tokens":1,"output_tokens":1}}}`), -1},
		{"responses never cut short", dialect.OpenAIResponses, msg("response.output_text.delta", `{"type":"response.output_text.delta","delta":"hi"}`) + "data: [DONE]\n\n", -1},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			if got := cutShortAt(t, c.d, c.raw); got != c.want {
				t.Fatalf("held back event %d, want %d", got, c.want)
			}
		})
	}
}

// FuzzCutsShortAgrees: whatever a provider streams, cutsShort (asked before
// an event goes out, without decoding it) agrees with what the accumulator
// records once it reads the event.
func FuzzCutsShortAgrees(f *testing.F) {
	f.Add(uint8(0), "data: {\"choices\":[{\"delta\":{\"content\":\"a\"},\"finish_reason\":\"stop\"}]}\n\ndata: [DONE]\n\n")
	f.Add(uint8(0), "data: {\"choices\":[{\"delta\":{},\"finish_reason\":\"\"}]}\n\ndata: [DONE]\n\n")
	f.Add(uint8(1), "event: message_delta\ndata: {}\n\nevent: message_stop\ndata: {}\n\n")
	f.Add(uint8(1), "event: message_stop\ndata: {}\n\n")
	f.Add(uint8(2), "event: response.completed\ndata: {\"type\":\"response.completed\"}\n\n")
	f.Fuzz(func(t *testing.T, d uint8, raw string) {
		if strings.Count(raw, "\n") > 400 {
			return
		}
		dl := []dialect.Dialect{dialect.OpenAIChat, dialect.AnthropicMessages, dialect.OpenAIResponses}[int(d)%3]
		p := sse.NewParser()
		if p.Push([]byte(raw)); p.Err() != nil {
			return // the relay ends such a stream before the accumulator sees it
		}
		cutShortAt(t, dl, raw)
	})
}

// TestRelayHoldsBackUnstoppedTerminator: a provider stream in the client's
// own dialect whose terminator comes without a stop reaches the client with
// an error event in the terminator's place; with its stop, the terminator
// goes out as the provider sent it.
func TestRelayHoldsBackUnstoppedTerminator(t *testing.T) {
	t.Parallel()
	chat := `data: {"id":"c1","object":"chat.completion.chunk","created":1,"model":"gpt-4o","choices":[{"index":0,"delta":{"content":"one"},"finish_reason":%s}]}` + "\n\n" + "data: [DONE]\n\n"
	msgs := "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_1\",\"type\":\"message\",\"role\":\"assistant\",\"content\":[],\"model\":\"claude-sonnet-4-5\",\"usage\":{\"input_tokens\":3,\"output_tokens\":1}}}\n\n" +
		"event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n" +
		"event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"one\"}}\n\n" +
		"event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":0}\n\n%s" +
		"event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n"
	stop := "event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\"},\"usage\":{\"output_tokens\":1}}\n\n"
	calls := edgeCalls()
	for _, c := range []struct {
		name, sse, terminator string
		call                  int // of edgeCalls
		held                  bool
	}{
		{"chat with its stop", fmt.Sprintf(chat, `"stop"`), "[DONE]", 1, false},
		{"chat without a stop", fmt.Sprintf(chat, "null"), "[DONE]", 1, true},
		{"messages with its stop", fmt.Sprintf(msgs, stop), "message_stop", 3, false},
		{"messages without a stop", fmt.Sprintf(msgs, ""), "message_stop", 3, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			up := newRecorder(t, func(w http.ResponseWriter, _ *http.Request) {
				w.Header().Set("Content-Type", "text/event-stream")
				_, _ = w.Write([]byte(c.sse))
			})
			call := calls[c.call]
			if !strings.Contains(call.name, "stream") {
				t.Fatalf("edge call %d is %q, not a stream", c.call, call.name)
			}
			res := rawDo(t, newEdgeProxy(t, up.URL), call.method, "/k/"+testKey+call.path, call.body, call.headers...)
			sent := strings.Contains(res.Body, c.terminator)
			failed := strings.Contains(res.Body, "without its terminator")
			if res.Status != http.StatusOK || sent == c.held || failed != c.held || !strings.Contains(res.Body, "one") {
				t.Fatalf("status %d, terminator sent %v, error event %v, want held back %v:\n%s", res.Status, sent, failed, c.held, res.Body)
			}
		})
	}
}
