package proxy

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/perpetuity/perpetuity/e2e/fakeprovider"
	"github.com/perpetuity/perpetuity/proxy/dialect"
	"github.com/perpetuity/perpetuity/proxy/sse"
	"github.com/perpetuity/perpetuity/proxy/wire/openai"
)

// walkCase is one event's data; walks says whether the walk itself must
// decide it (a provider's own shape), not hand it to encoding/json.
type walkCase struct {
	name  string
	data  string
	walks bool
}

var chatWalkCases = []walkCase{
	{"openai text chunk", `{"id":"chatcmpl-B9MBs8CjcvOU2jLn4n570S5qMJKcT","object":"chat.completion.chunk","created":1741570283,"model":"gpt-4o-2024-08-06","service_tier":"default","system_fingerprint":"fp_fc9f1d7035","choices":[{"index":0,"delta":{"content":" sunny"},"logprobs":null,"finish_reason":null}],"usage":null}`, true},
	{"role chunk", `{"id":"c","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"role":"assistant","content":"","refusal":null},"logprobs":null,"finish_reason":null}]}`, true},
	{"finish chunk", `{"id":"c","choices":[{"index":0,"delta":{},"logprobs":null,"finish_reason":"stop"}]}`, true},
	{"usage chunk", `{"id":"c","choices":[],"usage":{"prompt_tokens":19,"completion_tokens":10,"total_tokens":29,"prompt_tokens_details":{"cached_tokens":0}}}`, true},
	{"escapes and unicode", `{"choices":[{"delta":{"content":"line\n\"quoted\" \u00e9t\u00e9 \ud83d\ude00 été"}}]}`, true},
	{"two choices", `{"choices":[{"delta":{"content":"a"}},{"delta":{"content":"b"},"finish_reason":"length"}]}`, true},
	{"null delta and content", `{"choices":[{"delta":null,"finish_reason":null},null,{"delta":{"content":null}}]}`, true},
	{"in-band error", `{"error":{"message":"overloaded","type":"server_error"}}`, true},
	{"null error", `{"error":null,"choices":[{"delta":{"content":"x"}}]}`, true},
	{"space around", " \n{\"choices\":[{\"delta\":{\"content\":\"x\"}}]} ", true},
	{"empty object", `{}`, true},
	{"negative zero tokens", `{"usage":{"prompt_tokens":-0,"completion_tokens":3}}`, true},
	// encoding/json's own: the walk hands these over.
	{"key in another case", `{"Choices":[{"delta":{"content":"x"}}]}`, false},
	{"escaped key", `{"choi\u0063es":[{"delta":{"content":"x"}}]}`, false},
	{"key outside ASCII", `{"choiceſ":[{"delta":{"content":"x"}}]}`, false},
	{"key twice", `{"choices":[{"delta":{"content":"x"}}],"choices":[{"delta":{"content":"y"}}]}`, false},
	{"content a number", `{"choices":[{"delta":{"content":5}}]}`, false},
	{"tokens a float", `{"usage":{"prompt_tokens":1.0}}`, false},
	{"tokens an exponent", `{"usage":{"completion_tokens":1e3}}`, false},
	{"tokens too many", `{"usage":{"completion_tokens":99999999999999999999}}`, false},
	{"tokens a string", `{"usage":{"completion_tokens":"3"}}`, false},
	{"choices an object", `{"choices":{"delta":{"content":"x"}}}`, false},
	{"a choice a string", `{"choices":["x"]}`, false},
	{"finish reason a bool", `{"choices":[{"finish_reason":true}]}`, false},
	{"null", `null`, false},
	{"array", `[1]`, false},
	{"not JSON", `{"choices":[`, false},
	{"invalid UTF-8", "{\"choices\":[{\"delta\":{\"content\":\"a\xffb\"}}]}", true},
}

var anthropicWalkCases = []walkCase{
	{"text delta", `{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Hello"}}`, true},
	{"json delta", `{"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"{\"a\":"}}`, true},
	{"thinking delta", `{"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":"hmm"}}`, true},
	{"null delta", `{"type":"content_block_delta","delta":null}`, true},
	{"escaped text", `{"delta":{"type":"text_delta","text":"tab\tand \u2603"}}`, true},
	{"Delta in another case", `{"Delta":{"type":"text_delta","text":"x"}}`, false},
	{"text twice", `{"delta":{"type":"text_delta","text":"x","text":"y"}}`, false},
	{"text an array", `{"delta":{"type":"text_delta","text":["x"]}}`, false},
	{"delta a string", `{"delta":"x"}`, false},
}

var responsesWalkCases = []walkCase{
	{"text delta", `{"type":"response.output_text.delta","item_id":"msg_1","output_index":0,"content_index":0,"delta":"Hi","sequence_number":4,"logprobs":[]}`, true},
	{"part added", `{"type":"response.content_part.added","item_id":"msg_1","output_index":0,"content_index":0,"part":{"type":"output_text","text":"","annotations":[]},"sequence_number":3}`, true},
	{"no type", `{"delta":"x"}`, true},
	{"created carries a response", `{"type":"response.created","response":{"id":"resp_1","object":"response","status":"in_progress","output":[]},"sequence_number":0}`, false},
	{"completed carries usage", `{"type":"response.completed","response":{"id":"resp_1","status":"completed","output":[],"usage":{"input_tokens":5,"output_tokens":7}}}`, false},
	{"null response", `{"type":"response.output_text.delta","delta":"x","response":null}`, false},
	{"Type in another case", `{"Type":"response.output_text.delta","delta":"x"}`, false},
	{"delta a number", `{"type":"response.output_text.delta","delta":1}`, false},
}

// checkWalk holds walk to encoding/json on data: decodeChunk must decode
// what json.Unmarshal decodes, into the same value, and the walk alone,
// when it decides, must too.
func checkWalk[T any](t *testing.T, data []byte, walk func([]byte, *T) bool) (walked bool) {
	t.Helper()
	var want T
	wantOK := json.Unmarshal(data, &want) == nil
	var got T
	if ok := decodeChunk(data, &got, walk); ok != wantOK || ok && !reflect.DeepEqual(got, want) {
		t.Fatalf("decodeChunk(%q) = %+v, %v; encoding/json %+v, %v", data, got, ok, want, wantOK)
	}
	if !json.Valid(data) {
		return false
	}
	var alone T
	if walked = walk(data, &alone); walked && (!wantOK || !reflect.DeepEqual(alone, want)) {
		t.Fatalf("walk(%q) = %+v; encoding/json %+v, %v", data, alone, want, wantOK)
	}
	return walked
}

func TestChunkWalks(t *testing.T) {
	t.Parallel()
	for _, set := range []struct {
		name  string
		cases []walkCase
		check func(*testing.T, []byte) bool
	}{
		{"chat", chatWalkCases, func(t *testing.T, b []byte) bool { return checkWalk(t, b, walkChat) }},
		{"anthropic", anthropicWalkCases, func(t *testing.T, b []byte) bool { return checkWalk(t, b, walkAnthropicDelta) }},
		{"responses", responsesWalkCases, func(t *testing.T, b []byte) bool { return checkWalk(t, b, walkResponses) }},
	} {
		for _, c := range set.cases {
			t.Run(set.name+"/"+c.name, func(t *testing.T) {
				t.Parallel()
				if walked := set.check(t, []byte(c.data)); walked != c.walks {
					t.Errorf("walked %v, want %v", walked, c.walks)
				}
			})
		}
	}
}

// TestAccumulatorReadsWalkedStreams runs whole streams through the
// accumulator: the text, usage and ending it reads are a provider's.
func TestAccumulatorReadsWalkedStreams(t *testing.T) {
	t.Parallel()
	ev := func(event, data string) sse.Event { return sse.Event{Event: event, Data: []byte(data)} }
	for _, tc := range []struct {
		name    string
		dialect dialect.Dialect
		events  []sse.Event
		want    reply
	}{
		{"chat", dialect.OpenAIChat, []sse.Event{
			ev("", chatWalkCases[1].data), ev("", chatWalkCases[0].data), ev("", chatWalkCases[4].data),
			ev("", chatWalkCases[2].data), ev("", chatWalkCases[3].data), ev("", "[DONE]"),
		}, reply{text: " sunnyline\n\"quoted\" été 😀 été", usage: usage{in: 19, out: 10}}},
		{"anthropic", dialect.AnthropicMessages, []sse.Event{
			ev("message_start", `{"type":"message_start","message":{"usage":{"input_tokens":21,"output_tokens":1}}}`),
			ev("content_block_delta", anthropicWalkCases[0].data), ev("content_block_delta", anthropicWalkCases[1].data),
			ev("content_block_delta", anthropicWalkCases[4].data),
			ev("message_delta", `{"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":{"output_tokens":9}}`),
			ev("message_stop", `{"type":"message_stop"}`),
		}, reply{text: "Hellotab\tand ☃", usage: usage{in: 21, out: 9}}},
		{"responses", dialect.OpenAIResponses, []sse.Event{
			ev("response.created", responsesWalkCases[3].data), ev("response.output_text.delta", responsesWalkCases[0].data),
			ev("response.output_text.delta", `{"type":"response.output_text.delta","delta":" there"}`),
			ev("response.completed", responsesWalkCases[4].data),
		}, reply{text: "Hi there", usage: usage{in: 5, out: 7}, response: "resp_1"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			a := newAccumulator(tc.dialect)
			for _, e := range tc.events {
				a.add(e)
			}
			if got := a.reply(false); !a.done || got != tc.want {
				t.Errorf("reply %+v (done %v), want %+v done", got, a.done, tc.want)
			}
		})
	}
}

// FuzzChunkWalks: on any data, each walk decides as encoding/json does or
// hands the data over.
func FuzzChunkWalks(f *testing.F) {
	for _, set := range [][]walkCase{chatWalkCases, anthropicWalkCases, responsesWalkCases} {
		for _, c := range set {
			f.Add([]byte(c.data))
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		checkWalk(t, data, walkChat)
		checkWalk(t, data, walkAnthropicDelta)
		checkWalk(t, data, walkResponses)
	})
}

// BenchmarkAccumulateChunk: an OpenAI text chunk read by the walk against
// encoding/json, as the accumulator read every chunk before.
func BenchmarkAccumulateChunk(b *testing.B) {
	data := []byte(chatWalkCases[0].data)
	b.Run("walk", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			var ch chatChunk
			if !decodeChunk(data, &ch, walkChat) {
				b.Fatal("not decoded")
			}
		}
	})
	b.Run("encoding/json", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			var ch chatChunk
			if json.Unmarshal(data, &ch) != nil {
				b.Fatal("not decoded")
			}
		}
	})
	b.Run("anthropic walk", func(b *testing.B) {
		data := []byte(anthropicWalkCases[0].data)
		b.ReportAllocs()
		for b.Loop() {
			var d anthropicDelta
			decodeChunk(data, &d, walkAnthropicDelta)
		}
	})
	b.Run("responses walk", func(b *testing.B) {
		data := []byte(responsesWalkCases[0].data)
		b.ReportAllocs()
		for b.Loop() {
			var e openai.ResponsesStreamEvent
			decodeChunk(data, &e, walkResponses)
		}
	})
}

// BenchmarkRelayStream relays streamed chat replies of 64 text chunks
// through the proxy, memory off, as fast as the in-process fake provider
// sends them: the proxy's CPU per relayed event, the fake provider's and
// the client's with it.
func BenchmarkRelayStream(b *testing.B) {
	tp := newTestProxy(b)
	text := strings.Repeat("word ", 64)
	tp.openai.SetDefault(func(fakeprovider.Recorded) fakeprovider.Reply {
		return fakeprovider.Reply{Text: text, Chunks: 64}
	})
	body := `{"model":"gpt-4o-mini","stream":true,"messages":[{"role":"user","content":"go on"}]}`
	events := 0
	for b.Loop() {
		_, _, out := tp.post("/v1/chat/completions", body, "Authorization: Bearer sk-proj-k", "X-Perpetuity-Recall: off", "X-Perpetuity-Capture: off")
		if n := strings.Count(out, "data: "); n < 64 {
			b.Fatalf("%d events: %.200s", n, out)
		} else {
			events += n
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(events), "ns/event")
}
