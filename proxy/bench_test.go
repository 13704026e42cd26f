package proxy

import (
	"encoding/json"
	"fmt"
	"testing"

	"github.com/perpetuity/perpetuity/memory"
	"github.com/perpetuity/perpetuity/proxy/dialect"
	"github.com/perpetuity/perpetuity/proxy/toolloop"
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

// BenchmarkAgentBody: reading and re-rendering a coding agent's request
// (agentBody) of about 40, 220 and 630 kB, and the largest again with its
// exchanges in flight (after the question, so kept in the body forwarded). "valid" is one json.Valid pass
// over the body, the least a proxy that checks what it forwards does;
// "decode" reads it with encoding/json alone, "walk" as parseInbound does.
// "render" and "render-no-frame" write the body forwarded with a 70-turn
// frame and with none (recall off); "render-offer" adds the memory tools
// to the first.
func BenchmarkAgentBody(b *testing.B) {
	var turns []memory.Turn
	for i := range 70 {
		turns = append(turns, memory.Turn{Role: []string{"user", "assistant"}[i%2], Text: "remembered words, remembered words, remembered words"})
	}
	frame := &memory.Frame{Turns: append(turns, memory.Turn{Role: "user", Text: "Now explain the change you made to f."})}
	for _, c := range []struct {
		n     int
		asked bool
	}{{0, true}, {30, true}, {100, true}, {100, false}} {
		body := agentBodyAt(c.n, c.asked)
		size := fmt.Sprintf("%dkB", len(body)/1000)
		if !c.asked {
			size += "-in-flight"
		}
		b.Run(size+"/valid", func(b *testing.B) {
			b.SetBytes(int64(len(body)))
			for b.Loop() {
				if !json.Valid(body) {
					b.Fatal("not valid")
				}
			}
		})
		for _, skim := range []bool{false, true} {
			b.Run(size+"/"+map[bool]string{false: "decode", true: "walk"}[skim], func(b *testing.B) {
				b.SetBytes(int64(len(body)))
				for b.Loop() {
					if _, err := parseInboundWith(dialect.AnthropicMessages, body, skim); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
		in, err := parseInbound(dialect.AnthropicMessages, body)
		if err != nil {
			b.Fatal(err)
		}
		b.Run(size+"/render-offer", func(b *testing.B) {
			for b.Loop() {
				out, err := renderFrame(in, frame)
				if err != nil {
					b.Fatal(err)
				}
				opt := toolloop.Options{Dialect: dialect.AnthropicMessages, Rounds: 3, State: memory.NewToolState(memory.FrameQuery{}, *frame)}
				if _, _, err := toolloop.Offer(opt, out); err != nil {
					b.Fatal(err)
				}
			}
		})
		for _, r := range []struct {
			name string
			f    *memory.Frame
		}{{"render", frame}, {"render-no-frame", nil}} {
			f := r.f
			b.Run(size+"/"+r.name, func(b *testing.B) {
				for b.Loop() {
					if _, err := renderFrame(in, f); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}
