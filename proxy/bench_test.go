package proxy

import (
	"testing"

	"github.com/perpetuity/perpetuity/memory"
	"github.com/perpetuity/perpetuity/proxy/dialect"
	"github.com/perpetuity/perpetuity/proxy/translate"
)

// BenchmarkCrossDialectBuild: parsing, rendering the frame and translating
// one OpenAI chat request for Anthropic.
func BenchmarkCrossDialectBuild(b *testing.B) {
	tr := translate.New(nil, nil)
	body := []byte(with(chatIn, `,"stream":true`))
	frame := &memory.Frame{Turns: append(recollection(), memory.Turn{Role: "user", Text: "What is my cat called?"})}
	b.SetBytes(int64(len(body)))
	for b.Loop() {
		in, err := parseInbound(dialect.OpenAIChat, body)
		if err != nil {
			b.Fatal(err)
		}
		out, err := renderFrame(in, frame)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := tr.ChatRequestToMessages(out); err != nil {
			b.Fatal(err)
		}
	}
}
