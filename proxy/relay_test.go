package proxy

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
)

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
