package proxy

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/perpetuity/perpetuity/proxy/dialect"
)

// harnessView is what a harness reads of a reply, after checking the reply
// is one well-formed message of its dialect.
type harnessView struct {
	text    string
	calls   []string
	stop    string // "answer" or "tool"
	in, out int
}

type chatUsageView struct {
	PromptTokens     int `json:"prompt_tokens"`
	CompletionTokens int `json:"completion_tokens"`
}

func stopKind(reason string) string {
	switch reason {
	case "tool_calls", "tool_use":
		return "tool"
	case "stop", "end_turn":
		return "answer"
	}
	return reason
}

// clientSaw reads a reply the way the SDKs accumulate it, failing on
// anything a strict accumulator refuses: a second message_start or role
// chunk, block indexes out of order, chunks of another id, events after
// the end.
func clientSaw(t *testing.T, d dialect.Dialect, stream bool, body string) harnessView {
	t.Helper()
	var v harnessView
	switch {
	case d == dialect.OpenAIChat && !stream:
		var r struct {
			Choices []struct {
				Message struct {
					Content   *string `json:"content"`
					ToolCalls []struct {
						Function struct{ Name string } `json:"function"`
					} `json:"tool_calls"`
				} `json:"message"`
				FinishReason string `json:"finish_reason"`
			} `json:"choices"`
			Usage chatUsageView `json:"usage"`
		}
		if err := json.Unmarshal([]byte(body), &r); err != nil || len(r.Choices) != 1 {
			t.Fatalf("not a chat completion: %v\n%s", err, body)
		}
		m := r.Choices[0].Message
		if m.Content != nil {
			v.text = *m.Content
		}
		for _, c := range m.ToolCalls {
			v.calls = append(v.calls, c.Function.Name)
		}
		v.stop, v.in, v.out = stopKind(r.Choices[0].FinishReason), r.Usage.PromptTokens, r.Usage.CompletionTokens
	case d == dialect.OpenAIChat:
		evs := events(t, body)
		id, roles, finishes := "", 0, 0
		var text strings.Builder
		calls := map[int]string{}
		for i, ev := range evs {
			if string(ev.Data) == "[DONE]" {
				if i != len(evs)-1 {
					t.Fatalf("[DONE] is not last:\n%s", body)
				}
				continue
			}
			var c struct {
				ID      string `json:"id"`
				Choices []struct {
					Delta struct {
						Role      string  `json:"role"`
						Content   *string `json:"content"`
						ToolCalls []struct {
							Index    int    `json:"index"`
							ID       string `json:"id"`
							Function struct {
								Name string `json:"name"`
							} `json:"function"`
						} `json:"tool_calls"`
					} `json:"delta"`
					FinishReason *string `json:"finish_reason"`
				} `json:"choices"`
				Usage *chatUsageView `json:"usage"`
			}
			if err := json.Unmarshal(ev.Data, &c); err != nil {
				t.Fatalf("chunk %s: %v", ev.Data, err)
			}
			if id == "" {
				id = c.ID
			} else if c.ID != id {
				t.Fatalf("chunk of id %s in a stream of %s:\n%s", c.ID, id, body)
			}
			if c.Usage != nil {
				v.in, v.out = c.Usage.PromptTokens, c.Usage.CompletionTokens
			}
			for _, ch := range c.Choices {
				if ch.Delta.Role != "" {
					roles++
				}
				if ch.Delta.Content != nil {
					text.WriteString(*ch.Delta.Content)
				}
				for _, tc := range ch.Delta.ToolCalls {
					if _, ok := calls[tc.Index]; !ok {
						if tc.Index != len(calls) || tc.ID == "" {
							t.Fatalf("tool call index %d (id %q) after %d calls:\n%s", tc.Index, tc.ID, len(calls), body)
						}
						calls[tc.Index] = tc.Function.Name
					}
				}
				if ch.FinishReason != nil {
					finishes++
					v.stop = stopKind(*ch.FinishReason)
				}
			}
		}
		if roles != 1 || finishes != 1 || string(evs[len(evs)-1].Data) != "[DONE]" {
			t.Fatalf("%d role chunks, %d finishes, last %q:\n%s", roles, finishes, evs[len(evs)-1].Data, body)
		}
		v.text = text.String()
		for i := range len(calls) {
			v.calls = append(v.calls, calls[i])
		}
	case !stream:
		var m struct {
			Type    string `json:"type"`
			Content []struct {
				Type, Text, Name string
			} `json:"content"`
			StopReason string `json:"stop_reason"`
			Usage      struct {
				InputTokens  int `json:"input_tokens"`
				OutputTokens int `json:"output_tokens"`
			} `json:"usage"`
		}
		if err := json.Unmarshal([]byte(body), &m); err != nil || m.Type != "message" {
			t.Fatalf("not a message: %v\n%s", err, body)
		}
		for _, b := range m.Content {
			switch b.Type {
			case "text":
				v.text += b.Text
			case "tool_use":
				v.calls = append(v.calls, b.Name)
			}
		}
		v.stop, v.in, v.out = stopKind(m.StopReason), m.Usage.InputTokens, m.Usage.OutputTokens
	default:
		evs := events(t, body)
		open := -1
		blocks := 0
		for i, ev := range evs {
			var e struct {
				Type    string `json:"type"`
				Index   int    `json:"index"`
				Message struct {
					Usage struct {
						InputTokens int `json:"input_tokens"`
					} `json:"usage"`
				} `json:"message"`
				ContentBlock struct{ Type, Name string } `json:"content_block"`
				Delta        struct {
					Type, Text string
					StopReason string `json:"stop_reason"`
				} `json:"delta"`
				Usage *struct {
					InputTokens  *int `json:"input_tokens"`
					OutputTokens int  `json:"output_tokens"`
				} `json:"usage"`
			}
			if err := json.Unmarshal(ev.Data, &e); err != nil || e.Type != ev.Event {
				t.Fatalf("event %s %s: %v", ev.Event, ev.Data, err)
			}
			if (i == 0) != (e.Type == "message_start") || (i == len(evs)-1) != (e.Type == "message_stop") {
				t.Fatalf("event %d is %s:\n%s", i, e.Type, body)
			}
			switch e.Type {
			case "message_start":
				v.in = e.Message.Usage.InputTokens
			case "content_block_start":
				if open >= 0 || e.Index != blocks {
					t.Fatalf("block %d starts with %d open after %d blocks:\n%s", e.Index, open, blocks, body)
				}
				open = e.Index
				blocks++
				if e.ContentBlock.Type == "tool_use" {
					v.calls = append(v.calls, e.ContentBlock.Name)
				}
			case "content_block_delta":
				if e.Index != open {
					t.Fatalf("delta for block %d, %d open:\n%s", e.Index, open, body)
				}
				if e.Delta.Type == "text_delta" {
					v.text += e.Delta.Text
				}
			case "content_block_stop":
				if e.Index != open {
					t.Fatalf("stop for block %d, %d open:\n%s", e.Index, open, body)
				}
				open = -1
			case "message_delta":
				if v.stop != "" {
					t.Fatalf("second message_delta:\n%s", body)
				}
				v.stop = stopKind(e.Delta.StopReason)
				if e.Usage != nil {
					v.out = e.Usage.OutputTokens
					if e.Usage.InputTokens != nil {
						v.in = *e.Usage.InputTokens
					}
				}
			}
		}
	}
	return v
}
