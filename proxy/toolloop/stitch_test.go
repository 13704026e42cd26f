package toolloop

import (
	"encoding/json"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/perpetuity/perpetuity/proxy/dialect"
	"github.com/perpetuity/perpetuity/proxy/sse"
)

// testLoop is a loop on the first of three rounds, with no memory to run.
func testLoop(d dialect.Dialect) *Loop {
	p, err := protocolFor(d)
	if err != nil {
		panic(err)
	}
	return &Loop{proto: p, max: 3, round: 1}
}

func parseStream(t *testing.T, s string) []sse.Event {
	t.Helper()
	var out []sse.Event
	rd := sse.NewReader(strings.NewReader(s))
	for {
		ev, err := rd.Next()
		if errors.Is(err, io.EOF) {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, ev)
	}
}

// TestStitcherContinuation: the assistant message sent back after a
// memory round is the round as the model said it: Anthropic thinking with
// its signature (required back with tool use), text, every call with its
// arguments; OpenAI text and calls, ids intact. The harness got none of
// the memory call's events, and the round's stop stayed back.
func TestStitcherContinuation(t *testing.T) {
	t.Parallel()
	anth := "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"usage\":{\"input_tokens\":5,\"output_tokens\":1}}}\n\n" +
		"event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"thinking\",\"thinking\":\"\"}}\n\n" +
		"event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"thinking_delta\",\"thinking\":\"Memory may know.\"}}\n\n" +
		"event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"signature_delta\",\"signature\":\"SIG==\"}}\n\n" +
		"event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":0}\n\n" +
		"event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":1,\"content_block\":{\"type\":\"tool_use\",\"id\":\"toolu_m\",\"name\":\"memory_chain\",\"input\":{}}}\n\n" +
		"event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":1,\"delta\":{\"type\":\"input_json_delta\",\"partial_json\":\"{\\\"item\\\":\"}}\n\n" +
		"event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":1,\"delta\":{\"type\":\"input_json_delta\",\"partial_json\":\"42}\"}}\n\n" +
		"event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":1}\n\n" +
		"event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"tool_use\"},\"usage\":{\"output_tokens\":9}}\n\n" +
		"event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n"
	cases := []struct {
		name      string
		d         dialect.Dialect
		stream    string
		forwarded []string // what the harness got, in order (event names or data prefixes)
		assistant string
		calls     string
	}{
		{"anthropic_thinking", dialect.AnthropicMessages, anth,
			[]string{"message_start", "content_block_start", "content_block_delta", "content_block_delta", "content_block_stop"},
			`{"content":[{"type":"thinking","thinking":"Memory may know.","signature":"SIG=="},{"type":"tool_use","id":"toolu_m","name":"memory_chain","input":{"item":42}}],"role":"assistant"}`,
			"toolu_m memory_chain {\"item\":42}"},
		{"openai_parallel", dialect.OpenAIChat, chatRound, []string{`{"id":"c1","choices":[{"index":0,"delta":{"role":"assistant","content":"Hm."}`},
			`{"role":"assistant","content":"Hm.","tool_calls":[{"id":"k","type":"function","function":{"name":"get_weather","arguments":"{}"}},{"id":"m","type":"function","function":{"name":"memory_reopen","arguments":"{}"}}]}`,
			"k get_weather {}|m memory_reopen {}"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			st := testLoop(c.d).Stitcher()
			var got []string
			for _, ev := range parseStream(t, c.stream) {
				if st.Continuing() && st.Terminator(ev) {
					break
				}
				for _, out := range st.Push(ev) {
					if out.Event != "" {
						got = append(got, out.Event)
					} else {
						got = append(got, string(out.Data))
					}
				}
			}
			if !st.Continuing() {
				t.Fatal("the round does not continue")
			}
			if len(got) != len(c.forwarded) {
				t.Fatalf("forwarded %q, want %q", got, c.forwarded)
			}
			for i := range got {
				if !strings.HasPrefix(got[i], c.forwarded[i]) {
					t.Fatalf("forwarded %q, want %q", got, c.forwarded)
				}
			}
			var want, have any
			if err := json.Unmarshal([]byte(c.assistant), &want); err != nil {
				t.Fatal(err)
			}
			if err := json.Unmarshal(st.Round().assistant, &have); err != nil {
				t.Fatal(err)
			}
			if wb, _ := json.Marshal(want); string(wb) != string(mustJSON(have)) {
				t.Fatalf("assistant message %s, want %s", st.Round().assistant, c.assistant)
			}
			var calls []string
			for _, tc := range st.Round().calls {
				calls = append(calls, tc.id+" "+tc.name+" "+tc.args)
			}
			if strings.Join(calls, "|") != c.calls {
				t.Fatalf("calls %q, want %q", strings.Join(calls, "|"), c.calls)
			}
		})
	}
}
