package proxy

import (
	"net/http"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/perpetuity/perpetuity/proxy/dialect"
)

func TestCheckStorable(t *testing.T) {
	t.Parallel()
	const (
		chat  = `{"model":"gpt-4o","messages":[{"role":"system","content":"%SYS%"},{"role":"user","content":"%FIRST%"},{"role":"assistant","content":"ok"},{"role":"user","content":%LIVE%}]%EXTRA%}`
		anth  = `{"model":"claude-sonnet-4-5","max_tokens":9,"system":"%SYS%","messages":[{"role":"user","content":"%FIRST%"},{"role":"assistant","content":"ok"},{"role":"user","content":%LIVE%}]%EXTRA%}`
		resp  = `{"model":"gpt-4o","instructions":"%SYS%","input":[{"role":"user","content":"%FIRST%"},{"role":"assistant","content":"ok"},{"role":"user","content":%LIVE%}]%EXTRA%}`
		plain = `"what now"`
	)
	build := func(tmpl, sys, first, live, extra string) string {
		return strings.NewReplacer("%SYS%", sys, "%FIRST%", first, "%LIVE%", live, "%EXTRA%", extra).Replace(tmpl)
	}
	type c struct {
		name     string
		d        dialect.Dialect
		body     string
		header   map[string]string
		identity bool
		want     string // "" = storable; else a substring of the 400's message
	}
	var cases []c
	for _, d := range []struct {
		d                 dialect.Dialect
		tmpl, live, model string
		hint              string
	}{{dialect.OpenAIChat, chat, "messages[3].content", `"gpt-4o"`, `,"user":"u\u0000"`},
		{dialect.AnthropicMessages, anth, "messages[2].content", `"claude-sonnet-4-5"`, `,"metadata":{"user_id":"u\u0000"}`},
		{dialect.OpenAIResponses, resp, "input[2].content", `"gpt-4o"`, `,"user":"u\u0000"`}} {
		hintField := "user"
		if d.d == dialect.AnthropicMessages {
			hintField = "metadata.user_id"
		}
		cases = append(cases,
			c{"clean", d.d, build(d.tmpl, "sys", "first", plain, ""), nil, false, ""},
			c{"clean, non-ASCII", d.d, build(d.tmpl, "sys", "first", `"zoë 山田 🙂"`, ""), nil, false, ""},
			c{"NUL in the live question", d.d, build(d.tmpl, "sys", "first", `"a\u0000b"`, ""), nil, false, d.live + " contains a NUL character (U+0000)"},
			c{"NUL in a live text part", d.d, build(d.tmpl, "sys", "first", `[{"type":"text","text":"a"},{"type":"text","text":"\u0000"}]`, ""), nil, false, d.live + " contains a NUL"},
			c{"invalid UTF-8 in the live question", d.d, build(d.tmpl, "sys", "first", "\"a\xffb\"", ""), nil, false, d.live + " is not valid UTF-8"},
			c{"NUL in the first message", d.d, build(d.tmpl, "sys", `f\u0000`, plain, ""), nil, false, ""},
			c{"invalid UTF-8 in the first message", d.d, build(d.tmpl, "sys", "f\xff", plain, ""), nil, false, ""},
			c{"NUL in the system prompt", d.d, build(d.tmpl, `s\u0000`, "first", plain, ""), nil, false, ""},
			c{"NUL in the model", d.d, strings.Replace(build(d.tmpl, "sys", "first", plain, ""), d.model, d.model[:len(d.model)-1]+`\u0000"`, 1), nil, false, "model contains a NUL"},
			c{"user field with a NUL, a hint", d.d, build(d.tmpl, "sys", "first", plain, d.hint), nil, false, ""},
			c{"user field with a NUL, the identity", d.d, build(d.tmpl, "sys", "first", plain, d.hint), nil, true, hintField + " contains a NUL"},
			c{"user field with a NUL, the header wins", d.d, build(d.tmpl, "sys", "first", plain, d.hint), map[string]string{HeaderUser: "bob"}, true, ""},
			c{"user field not UTF-8, the identity", d.d, build(d.tmpl, "sys", "first", plain, strings.Replace(d.hint, `\u0000`, "\xff", 1)), nil, true, hintField + " is not valid UTF-8"},
			c{"X-Perpetuity-User not UTF-8", d.d, build(d.tmpl, "sys", "first", plain, ""), map[string]string{HeaderUser: "bob\xff"}, false, "X-Perpetuity-User is not valid UTF-8"},
			c{"X-Perpetuity-Conversation not UTF-8", d.d, build(d.tmpl, "sys", "first", plain, ""), map[string]string{HeaderConversation: "c\xfe"}, false, "X-Perpetuity-Conversation is not valid UTF-8"},
			c{"X-Perpetuity-User with a NUL", d.d, build(d.tmpl, "sys", "first", plain, ""), map[string]string{HeaderUser: "b\x00b"}, false, "X-Perpetuity-User contains a NUL"},
		)
	}
	cases = append(cases,
		c{"Responses string input with a NUL", dialect.OpenAIResponses, `{"model":"gpt-4o","input":"a\u0000"}`, nil, false, "input contains a NUL"},
		c{"Responses string input not UTF-8", dialect.OpenAIResponses, "{\"model\":\"gpt-4o\",\"input\":\"a\xff\"}", nil, false, "input is not valid UTF-8"},
		c{"Responses conversation with a NUL", dialect.OpenAIResponses, `{"model":"gpt-4o","conversation":"c\u0000","input":"hi"}`, nil, false, "conversation contains a NUL"},
		c{"Responses conversation object not UTF-8", dialect.OpenAIResponses, "{\"model\":\"gpt-4o\",\"conversation\":{\"id\":\"c\xff\"},\"input\":\"hi\"}", nil, false, "conversation is not valid UTF-8"},
		c{"a NUL in a tool result", dialect.OpenAIChat, `{"model":"gpt-4o","messages":[{"role":"user","content":"read"},{"role":"assistant","tool_calls":[{"id":"a","type":"function","function":{"name":"f","arguments":"{}"}}]},{"role":"tool","tool_call_id":"a","content":"\u0000"}]}`, nil, false, ""},
		c{"an Anthropic tool result with a NUL beside the question", dialect.AnthropicMessages, `{"model":"claude-sonnet-4-5","max_tokens":9,"messages":[{"role":"user","content":"q"},{"role":"assistant","content":[{"type":"tool_use","id":"t","name":"f","input":{}}]},{"role":"user","content":[{"type":"tool_result","tool_use_id":"t","content":"\u0000"},{"type":"text","text":"go on"}]}]}`, nil, false, ""},
	)
	for _, tc := range cases {
		t.Run(tc.d.String()+"/"+tc.name, func(t *testing.T) {
			t.Parallel()
			in, err := parseInbound(tc.d, []byte(tc.body))
			if err != nil {
				t.Fatalf("parse: %v", err)
			}
			h := http.Header{}
			for k, v := range tc.header {
				h[k] = []string{v}
			}
			err = checkStorable(in, h, tc.identity)
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case tc.want != "":
				ae, ok := err.(*APIError)
				if !ok || ae.Status != http.StatusBadRequest || ae.Kind != InvalidRequest || !strings.Contains(ae.Message, tc.want) {
					t.Fatalf("got %v, want a 400 saying %q", err, tc.want)
				}
			}
		})
	}
}

func TestStorableTitle(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{"plain": "plain", "a\x00b": "ab", "\x00": "", "zoë\x00": "zoë"} {
		if got := storableTitle(firstLine(in, 80)); got != want {
			t.Errorf("storableTitle(%q) = %q, want %q", in, got, want)
		}
	}
	if got := storableReply("a\x00b"); got != "a\uFFFDb" {
		t.Errorf("storableReply kept %q", got)
	}
}

// FuzzCheckStorable: whatever the body and headers, a request checkStorable
// lets through holds nothing PostgreSQL refuses in what is stored or names
// a stored row, and a refusal is always a 400.
func FuzzCheckStorable(f *testing.F) {
	for _, s := range []string{
		`{"model":"gpt-4o","messages":[{"role":"user","content":"hi"}]}`,
		`{"model":"gpt-4o","messages":[{"role":"user","content":"h\u0000i"}],"user":"a\u0000"}`,
		"{\"model\":\"gpt-4o\",\"messages\":[{\"role\":\"user\",\"content\":\"h\xffi\"}]}",
		`{"model":"claude-x","max_tokens":1,"metadata":{"user_id":"\u0000"},"messages":[{"role":"user","content":[{"type":"text","text":"\u0000"}]}]}`,
		`{"model":"gpt-4o","input":"x\u0000","conversation":{"id":"c\u0000"}}`,
		`{"model":"m\u0000","input":[{"role":"user","content":[{"type":"input_text","text":"q"}]}]}`,
	} {
		for d := range 3 {
			f.Add(uint8(d), []byte(s), "bob", "conv", true)
		}
	}
	f.Add(uint8(0), []byte(`{"model":"gpt-4o","messages":[{"role":"user","content":"hi"}]}`), "b\xffob", "c\x00", false)
	f.Fuzz(func(t *testing.T, d uint8, body []byte, user, conv string, identity bool) {
		dialect := []dialect.Dialect{dialect.OpenAIChat, dialect.AnthropicMessages, dialect.OpenAIResponses}[int(d)%3]
		in, err := parseInbound(dialect, body)
		if err != nil {
			return
		}
		h := http.Header{}
		if user != "" {
			h[HeaderUser] = []string{user}
		}
		if conv != "" {
			h[HeaderConversation] = []string{conv}
		}
		if err := checkStorable(in, h, identity); err != nil {
			if ae, ok := err.(*APIError); !ok || ae.Status != http.StatusBadRequest {
				t.Fatalf("refusal %v is not a 400", err)
			}
			return
		}
		stored := []string{in.model, in.session, user, conv}
		if in.live >= 0 {
			stored = append(stored, in.messages[in.live].text)
		}
		if identity && user == "" {
			stored = append(stored, in.userHint)
		}
		for _, s := range stored {
			if strings.IndexByte(s, 0) >= 0 || !utf8.ValidString(s) {
				t.Fatalf("let through %q", s)
			}
		}
		for _, m := range in.messages {
			if s := storableTitle(firstLine(m.text, 80)); strings.IndexByte(s, 0) >= 0 || !utf8.ValidString(s) {
				t.Fatalf("title %q", s)
			}
		}
	})
}
