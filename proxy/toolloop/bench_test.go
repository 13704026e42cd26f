package toolloop

import (
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"

	"github.com/perpetuity/perpetuity/proxy/dialect"
	"github.com/perpetuity/perpetuity/proxy/sse"
)

// textStream is a provider stream of n text deltas in dialect d.
func textStream(d dialect.Dialect, n int) []sse.Event {
	var b strings.Builder
	if d == dialect.AnthropicMessages {
		b.WriteString("event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_1\",\"usage\":{\"input_tokens\":5,\"output_tokens\":1}}}\n\n")
		b.WriteString("event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n")
		for i := range n {
			fmt.Fprintf(&b, "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\" word%d\"}}\n\n", i)
		}
		b.WriteString("event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":0}\n\n")
		b.WriteString("event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\"},\"usage\":{\"output_tokens\":70}}\n\n")
		b.WriteString("event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n")
	} else {
		for i := range n {
			fmt.Fprintf(&b, "data: {\"id\":\"chatcmpl-1\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"gpt-4o\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\" word%d\"},\"logprobs\":null,\"finish_reason\":null}],\"usage\":null}\n\n", i)
		}
		b.WriteString("data: {\"id\":\"chatcmpl-1\",\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}],\"usage\":null}\n\n")
		b.WriteString("data: {\"id\":\"chatcmpl-1\",\"choices\":[],\"usage\":{\"prompt_tokens\":5,\"completion_tokens\":70}}\n\ndata: [DONE]\n\n")
	}
	var evs []sse.Event
	rd := sse.NewReader(strings.NewReader(b.String()))
	for {
		ev, err := rd.Next()
		if errors.Is(err, io.EOF) {
			return evs
		}
		evs = append(evs, ev)
	}
}

// BenchmarkStitch: what the memory-tool loop adds to every streamed event
// of a reply that calls no memory tool; it should stay a few microseconds
// an event.
func BenchmarkStitch(b *testing.B) {
	for _, d := range []dialect.Dialect{dialect.OpenAIChat, dialect.AnthropicMessages} {
		evs := textStream(d, 64)
		b.Run(d.String(), func(b *testing.B) {
			for b.Loop() {
				st := testLoop(d).Stitcher()
				for _, ev := range evs {
					if len(st.Push(ev)) != 1 {
						b.Fatal("an event was held or dropped")
					}
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(evs)), "ns/event")
		})
	}
}
