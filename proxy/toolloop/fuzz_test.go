package toolloop

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/perpetuity/perpetuity/proxy/dialect"
	"github.com/perpetuity/perpetuity/proxy/sse"
)

// anthropicRound and chatRound are provider streams of one round that
// calls memory, as seeds.
const anthropicRound = "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"usage\":{\"input_tokens\":5,\"output_tokens\":1}}}\n\n" +
	"event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n" +
	"event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"Hm.\"}}\n\n" +
	"event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":0}\n\n" +
	"event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":1,\"content_block\":{\"type\":\"tool_use\",\"id\":\"t1\",\"name\":\"memory_search\",\"input\":{}}}\n\n" +
	"event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":1,\"delta\":{\"type\":\"input_json_delta\",\"partial_json\":\"{\\\"query\\\":\\\"x\\\"}\"}}\n\n" +
	"event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":1}\n\n" +
	"event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"tool_use\"},\"usage\":{\"output_tokens\":9}}\n\n" +
	"event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n"

const chatRound = "data: {\"id\":\"c1\",\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"Hm.\"},\"finish_reason\":null}]}\n\n" +
	"data: {\"id\":\"c1\",\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,\"id\":\"k\",\"function\":{\"name\":\"get_weather\",\"arguments\":\"{}\"}},{\"index\":1,\"id\":\"m\",\"function\":{\"name\":\"memory_reopen\",\"arguments\":\"\"}}]},\"finish_reason\":null}]}\n\n" +
	"data: {\"id\":\"c1\",\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"tool_calls\"}]}\n\n" +
	"data: {\"id\":\"c1\",\"choices\":[],\"usage\":{\"prompt_tokens\":3,\"completion_tokens\":4}}\n\n" +
	"data: [DONE]\n\n"

// FuzzStitch: any provider stream, over up to three rounds, stitches
// without panicking into events that are whole SSE events, and the
// continuation it builds is valid JSON.
func FuzzStitch(f *testing.F) {
	f.Add(true, anthropicRound+anthropicRound+anthropicRound)
	f.Add(false, chatRound+chatRound+chatRound)
	f.Add(true, "event: content_block_delta\ndata: {\"index\":7}\n\n")
	f.Add(false, "data: {\"choices\":[{\"delta\":{\"tool_calls\":[{\"index\":-1}]}}]}\n\n")
	f.Fuzz(func(t *testing.T, anthropic bool, stream string) {
		d := dialect.OpenAIChat
		if anthropic {
			d = dialect.AnthropicMessages
		}
		l := testLoop(d)
		l.body = []byte(`{"messages":[]}`)
		st := l.Stitcher()
		rd := sse.NewReader(strings.NewReader(stream))
		for {
			ev, err := rd.Next()
			if errors.Is(err, io.EOF) || err != nil {
				break
			}
			if st.Continuing() && st.Terminator(ev) {
				r := st.Round()
				if !json.Valid(r.assistant) {
					t.Fatalf("assistant message is not JSON: %s", r.assistant)
				}
				if _, err := l.next(r.assistant, r.calls, make([]string, len(r.calls))); err != nil {
					t.Fatal(err)
				}
				st.NextRound()
				continue
			}
			for _, out := range append(st.Push(ev), st.Flush()...) {
				if !bytes.HasSuffix(out.Raw, []byte("\n\n")) {
					t.Fatalf("event %q is not whole", out.Raw)
				}
			}
		}
	})
}

// FuzzMergeRounds: any reply bodies merge or fail, never panic, and what
// merges is JSON.
func FuzzMergeRounds(f *testing.F) {
	f.Add(true, `{"content":[{"type":"text","text":"a"},{"type":"tool_use","name":"memory_search","input":{}}],"usage":{"input_tokens":1}}`, `{"content":[{"type":"text","text":"b"}],"stop_reason":"end_turn"}`)
	f.Add(false, `{"choices":[{"message":{"content":"a","tool_calls":[{"function":{"name":"memory_count"}}]}}],"usage":{"prompt_tokens":1}}`, `{"choices":[{"message":{"content":"b"},"finish_reason":"stop"}]}`)
	f.Fuzz(func(t *testing.T, anthropic bool, a, b string) {
		d := dialect.OpenAIChat
		if anthropic {
			d = dialect.AnthropicMessages
		}
		for _, body := range []string{a, b} {
			if r, err := testLoop(d).Read([]byte(body)); err == nil && !json.Valid(r.assistant) {
				t.Fatalf("assistant message is not JSON: %s", r.assistant)
			}
		}
		out, err := testLoop(d).Merge([][]byte{[]byte(a), []byte(b)})
		if err == nil && !json.Valid(out) {
			t.Fatalf("merged reply is not JSON: %s", out)
		}
	})
}
