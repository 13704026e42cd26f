package proxy

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/perpetuity/perpetuity/memory"
	"github.com/perpetuity/perpetuity/proxy/dialect"
)

// TestQuestionKeepsItsBreakpoint: the frame's rendering of the live
// question carries the cache breakpoint the harness put on it (Claude Code
// marks the newest block, so the provider caches the prompt up to it): the
// frame replaces the history, so without it the request's cache ended
// before the frame. A breakpoint on a scaffolding part stays on that part;
// none is made up, and none reaches an OpenAI request.
func TestQuestionKeepsItsBreakpoint(t *testing.T) {
	t.Parallel()
	const bp = `{"type":"ephemeral","ttl":"1h"}`
	const reminder = `{"type":"text","text":"<system-reminder>\nThe todo list is empty.\n</system-reminder>"%s}`
	for _, tc := range []struct {
		name string
		d    dialect.Dialect
		body string
		// want is the rendered question's last message's parts, as
		// "type:cache_control" (empty when none), or its string content.
		want string
	}{
		{"a plain prompt with a breakpoint", dialect.AnthropicMessages,
			`{"model":"m","max_tokens":9,"messages":[{"role":"user","content":[{"type":"text","text":"fix the failing test","cache_control":` + bp + `}]}]}`,
			"text:" + bp},
		{"a prompt beside a reminder, the breakpoint on the prompt", dialect.AnthropicMessages,
			`{"model":"m","max_tokens":9,"messages":[{"role":"user","content":[` + strings.Replace(reminder, "%s", "", 1) +
				`,{"type":"text","text":"fix the failing test","cache_control":` + bp + `}]}]}`,
			"text: text:" + bp},
		{"the breakpoint on the reminder", dialect.AnthropicMessages,
			`{"model":"m","max_tokens":9,"messages":[{"role":"user","content":[{"type":"text","text":"fix the failing test"},` +
				strings.Replace(reminder, "%s", `,"cache_control":`+bp, 1) + `]}]}`,
			"text:" + bp + " text:"},
		{"no breakpoint", dialect.AnthropicMessages,
			`{"model":"m","max_tokens":9,"messages":[{"role":"user","content":[{"type":"text","text":"fix the failing test"}]}]}`,
			"string"},
		{"an image after the prompt", dialect.AnthropicMessages,
			`{"model":"m","max_tokens":9,"messages":[{"role":"user","content":[{"type":"text","text":"fix the failing test","cache_control":` + bp + `},` +
				`{"type":"image","source":{"type":"base64","media_type":"image/png","data":"iVBORw0KGgo="}}]}]}`,
			"text:" + bp + " image:"},
		{"OpenAI chat", dialect.OpenAIChat,
			`{"model":"m","messages":[{"role":"user","content":[{"type":"text","text":"fix the failing test"}]}]}`,
			"string"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			in, err := parseInbound(tc.d, []byte(tc.body))
			if err != nil {
				t.Fatal(err)
			}
			out, err := renderFrame(in, &memory.Frame{Turns: []memory.Turn{{Role: "user", Text: "【now】\nfix the failing test"}}})
			if err != nil {
				t.Fatal(err)
			}
			var req struct {
				Messages []struct {
					Content json.RawMessage `json:"content"`
				} `json:"messages"`
			}
			if err := json.Unmarshal(out, &req); err != nil || len(req.Messages) == 0 {
				t.Fatalf("%v: %s", err, out)
			}
			var parts []struct {
				Type         string          `json:"type"`
				CacheControl json.RawMessage `json:"cache_control"`
			}
			got := "string"
			if json.Unmarshal(req.Messages[len(req.Messages)-1].Content, &parts) == nil {
				var each []string
				for _, p := range parts {
					each = append(each, p.Type+":"+string(p.CacheControl))
				}
				got = strings.Join(each, " ")
			}
			if got != tc.want {
				t.Fatalf("rendered question parts %q, want %q:\n%s", got, tc.want, out)
			}
		})
	}
}
