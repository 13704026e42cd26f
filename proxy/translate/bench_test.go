package translate

import (
	"fmt"
	"strings"
	"testing"

	"github.com/perpetuity/perpetuity/proxy/sse"
)

// bigChatRequest is a long agent conversation: 200 turns of ~500 bytes,
// tool calls every tenth turn, and one 256 KiB inline image.
func bigChatRequest() []byte {
	var b strings.Builder
	b.WriteString(`{"model":"claude-sonnet-4-5","messages":[{"role":"system","content":"You are an agent."}`)
	text := strings.Repeat("lorem ipsum dolor sit amet ", 18)
	for i := range 200 {
		switch {
		case i == 0:
			fmt.Fprintf(&b, `,{"role":"user","content":[{"type":"text","text":%q},{"type":"image_url","image_url":{"url":"data:image/png;base64,%s"}}]}`, text, strings.Repeat("A", 256<<10))
		case i%10 == 9:
			fmt.Fprintf(&b, `,{"role":"assistant","content":null,"tool_calls":[{"id":"call_%d","type":"function","function":{"name":"read","arguments":"{\"path\":\"/x/%d\"}"}}]},{"role":"tool","tool_call_id":"call_%d","content":%q}`, i, i, i, text)
		case i%2 == 0:
			fmt.Fprintf(&b, `,{"role":"user","content":%q}`, text)
		default:
			fmt.Fprintf(&b, `,{"role":"assistant","content":%q}`, text)
		}
	}
	b.WriteString(`],"tools":[{"type":"function","function":{"name":"read","parameters":{"type":"object","properties":{"path":{"type":"string"}}}}}],"stream":true}`)
	return []byte(b.String())
}

func BenchmarkChatRequestToMessages(b *testing.B) {
	tr := New(nil, nil)
	body := bigChatRequest()
	b.SetBytes(int64(len(body)))
	for b.Loop() {
		if _, err := tr.ChatRequestToMessages(body); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkMessagesRequestToChat(b *testing.B) {
	tr := New(nil, nil)
	body, err := tr.ChatRequestToMessages(bigChatRequest())
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(body)))
	for b.Loop() {
		if _, err := tr.MessagesRequestToChat(body); err != nil {
			b.Fatal(err)
		}
	}
}

// The per-event cost is what adds latency to every streamed token.
func BenchmarkMessagesToChatStreamEvent(b *testing.B) {
	tr := New(nil, nil)
	s := tr.NewMessagesToChatStream(StreamOptions{IncludeUsage: true})
	start := splitSSE(b, "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"m\",\"model\":\"c\",\"usage\":{\"input_tokens\":1}}}\n\n")[0]
	if _, err := s.Push(start); err != nil {
		b.Fatal(err)
	}
	ev := sse.Event{Event: "content_block_delta", Data: []byte(`{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Hello, world"}}`)}
	for b.Loop() {
		if _, err := s.Push(ev); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkChatToMessagesStreamEvent(b *testing.B) {
	tr := New(nil, nil)
	s := tr.NewChatToMessagesStream(StreamOptions{})
	ev := sse.Event{Data: []byte(`{"id":"c","object":"chat.completion.chunk","created":1,"model":"gpt-4o","choices":[{"index":0,"delta":{"content":"Hello, world"},"logprobs":null,"finish_reason":null}]}`)}
	for b.Loop() {
		if _, err := s.Push(ev); err != nil {
			b.Fatal(err)
		}
	}
}
