package proxy

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/perpetuity/perpetuity/memory"
	"github.com/perpetuity/perpetuity/proxy/dialect"
)

// TestEncodeWith: the body with the frame written in place has the keys
// sorted, each value as it came (an empty one as null), and the frame's
// messages byte for byte; it reads as encoding the whole map does.
func TestEncodeWith(t *testing.T) {
	t.Parallel()
	msgs, _ := json.Marshal([]frameMessage{{Role: "user", Content: "<memory> a & b"}, {Role: "assistant", Content: "ok"}})
	fields := map[string]json.RawMessage{
		"model": json.RawMessage(`"gpt-4o"`), "stream": json.RawMessage(`true`), "z<": json.RawMessage(`{"a" : [1, 2], "h": "<b>"}`),
		"messages": json.RawMessage(`["harness history, replaced"]`), "empty": nil, "a": json.RawMessage(`null`),
	}
	want := `{"a":null,"empty":null,"messages":` + string(msgs) + `,"model":"gpt-4o","stream":true,"z\u003c":{"a" : [1, 2], "h": "<b>"}}`
	got, err := encodeWith(fields, "messages", msgs)
	if err != nil || string(got) != want {
		t.Fatalf("got  %s (%v)\nwant %s", got, err, want)
	}
	all := map[string]json.RawMessage{}
	for k, v := range fields {
		all[k] = v
	}
	all["messages"] = msgs
	if marshalled, _ := json.Marshal(all); !sameJSON(got, marshalled) {
		t.Fatalf("got %s, which reads unlike json.Marshal's %s", got, marshalled)
	}
	// The list key may be new to the fields (a body that had none).
	delete(fields, "messages")
	if got, err := encodeWith(fields, "messages", msgs); err != nil || string(got) != want {
		t.Fatalf("list key not in the fields: %s, %v", got, err)
	}
	// No list: the fields alone.
	if got, err := encodeWith(fields, "messages", nil); err != nil || string(got) != `{"a":null,"empty":null,"model":"gpt-4o","stream":true,"z\u003c":{"a" : [1, 2], "h": "<b>"}}` {
		t.Fatalf("no list: %s, %v", got, err)
	}
}

// sameJSON: a and b decode to the same value.
func sameJSON(a, b []byte) bool {
	var x, y any
	return json.Unmarshal(a, &x) == nil && json.Unmarshal(b, &y) == nil && reflect.DeepEqual(x, y)
}

// TestRenderKeepsLeadingScaffolding: a harness's instructions sent as user
// messages ahead of the conversation (Codex's AGENTS.md and environment
// context) go through after the system prompt, as sent, and so do the
// scaffolding parts of a first turn that is history (Claude Code's
// CLAUDE.md reminder beside the first prompt); scaffolding later in the
// conversation is history.
func TestRenderKeepsLeadingScaffolding(t *testing.T) {
	t.Parallel()
	frame := &memory.Frame{Turns: []memory.Turn{{Role: "user", Text: "【memory】"}, {Role: "assistant", Text: "Fixed."}, {Role: "user", Text: "now run the linter"}}}
	for _, tc := range []struct {
		name, body string
		d          dialect.Dialect
		want       []string // each forwarded message's role and the start of its text, in order
	}{
		{"codex", codexBody(t, "", "fix the failing test", "Fixed.", "now run the linter"), dialect.OpenAIResponses,
			[]string{"developer <permissions instructions>", "user # AGENTS.md instructions", "user 【memory】", "assistant Fixed.", "user now run the linter"}},
		{"claude code: the first turn's reminder goes on", claudeCodeBody(t, "s", "fix the failing test", "Fixed.", "now run the linter"), dialect.AnthropicMessages,
			[]string{"user <system-reminder>\nAs you answer the user's questions", "user 【memory】", "assistant Fixed.", "user now run the linter"}},
		// The question is stored without its reminder (question.go), which
		// goes on with the live message, ahead of its rendering.
		{"claude code: the first turn is the question", claudeCodeBody(t, "s", "fix the failing test"), dialect.AnthropicMessages,
			[]string{"user 【memory】", "assistant Fixed.", "user <system-reminder>\nAs you answer the user's questions"}},
		{"a first turn of plain text", `{"model":"m","max_tokens":9,"messages":[{"role":"user","content":"<system-reminder>x</system-reminder> fix it"},` +
			`{"role":"assistant","content":"Fixed."},{"role":"user","content":"now run the linter"}]}`, dialect.AnthropicMessages,
			[]string{"user 【memory】", "assistant Fixed.", "user now run the linter"}},
		{"a reminder with a cache breakpoint stays behind", `{"model":"m","max_tokens":9,"messages":[{"role":"user","content":[` +
			`{"type":"text","text":"<system-reminder>x</system-reminder>","cache_control":{"type":"ephemeral"}},{"type":"text","text":"fix it"}]},` +
			`{"role":"assistant","content":"Fixed."},{"role":"user","content":"now run the linter"}]}`, dialect.AnthropicMessages,
			[]string{"user 【memory】", "assistant Fixed.", "user now run the linter"}},
		{"scaffolding later is history", `{"model":"m","messages":[{"role":"system","content":"S"},{"role":"user","content":"fix the failing test"},` +
			`{"role":"user","content":"<environment_context><cwd>/x</cwd></environment_context>"},{"role":"assistant","content":"Fixed."},{"role":"user","content":"now run the linter"}]}`,
			dialect.OpenAIChat, []string{"system S", "user 【memory】", "assistant Fixed.", "user now run the linter"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			in, err := parseInbound(tc.d, []byte(tc.body))
			if err != nil {
				t.Fatal(err)
			}
			out, err := renderFrame(in, frame)
			if err != nil {
				t.Fatal(err)
			}
			again, err := parseInbound(tc.d, out)
			if err != nil {
				t.Fatalf("%v: %s", err, out)
			}
			var got []string
			for _, m := range again.messages {
				got = append(got, m.role+" "+m.text)
			}
			if len(got) != len(tc.want) {
				t.Fatalf("forwarded %q, want %q", got, tc.want)
			}
			for i := range got {
				if !strings.HasPrefix(got[i], tc.want[i]) {
					t.Fatalf("forwarded %q, want %q", got, tc.want)
				}
			}
		})
	}
}
