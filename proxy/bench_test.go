package proxy

import (
	"net/http"
	"testing"

	"github.com/perpetuity/perpetuity/memory"
	"github.com/perpetuity/perpetuity/proxy/dialect"
	"github.com/perpetuity/perpetuity/proxy/translate"
)

// BenchmarkDetect: detection runs on every request; it should cost well
// under a microsecond.
func BenchmarkDetect(b *testing.B) {
	ps := testProviders()
	h := http.Header{"Authorization": {"Bearer sk-proj-abcdef"}, "X-Api-Key": {"sk-ant-api03-abcdef"}}
	for b.Loop() {
		if _, err := ps.detect("gpt-4o-mini", h); err != nil {
			b.Fatal(err)
		}
	}
}

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
