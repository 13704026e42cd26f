package proxy

import (
	"encoding/json"
	"net/http"
	"sort"
	"strings"
	"testing"

	"github.com/perpetuity/perpetuity/proxy/dialect"
)

// The request shapes below follow what the harnesses send (issue 17):
// Codex CLI speaks the Responses API with its session in the session-id
// and thread-id headers and prompt_cache_key, and opens every session
// with the same scaffolding (AGENTS.md instructions, environment context)
// as user messages; Claude Code sends x-claude-code-session-id and wraps
// its context in system-reminder blocks of the first user message.

const codexCwd = "/home/dev/shop"

// codexBody is one Codex CLI request: the scaffolding Codex opens a
// session with, then the user's prompts (and, past the first, the replies).
func codexBody(t *testing.T, cacheKey string, turns ...string) string {
	t.Helper()
	text := func(role, typ, s string) map[string]any {
		return map[string]any{"type": "message", "role": role, "content": []map[string]any{{"type": typ, "text": s}}}
	}
	input := []map[string]any{
		text("developer", "input_text", "<permissions instructions>\nFilesystem sandboxing defines which files can be read or written. "+
			"sandbox_mode is workspace-write.\n</permissions instructions>"),
		{"type": "message", "role": "user", "content": []map[string]any{
			{"type": "input_text", "text": "# AGENTS.md instructions for " + codexCwd + "\n\n<INSTRUCTIONS>\nRun go test before committing.\n</INSTRUCTIONS>"},
			{"type": "input_text", "text": "<environment_context>\n  <cwd>" + codexCwd + "</cwd>\n  <shell>bash</shell>\n" +
				"  <current_date>2026-11-30</current_date>\n  <timezone>Etc/UTC</timezone>\n</environment_context>"},
		}},
	}
	for i, s := range turns {
		if i%2 == 0 {
			input = append(input, text("user", "input_text", s))
		} else {
			input = append(input, text("assistant", "output_text", s))
		}
	}
	body := map[string]any{
		"model": "gpt-5.1-codex", "instructions": "You are Codex, based on GPT-5. You are running as a coding agent in the Codex CLI.",
		"input": input, "tools": []map[string]any{{"type": "function", "name": "shell", "description": "Runs a shell command",
			"strict": false, "parameters": map[string]any{"type": "object", "properties": map[string]any{"command": map[string]any{"type": "array"}}}}},
		"tool_choice": "auto", "parallel_tool_calls": false, "reasoning": map[string]any{"effort": "medium", "summary": "auto"},
		"store": false, "stream": true, "include": []string{"reasoning.encrypted_content"}, "text": map[string]any{"verbosity": "medium"},
	}
	if cacheKey != "" {
		body["prompt_cache_key"] = cacheKey
	}
	b, err := json.Marshal(body)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// codexHeaders are the headers Codex CLI sends with a session's requests.
func codexHeaders(session string) []string {
	return []string{"Authorization: Bearer sk-proj-k", "originator: codex_exec", "User-Agent: codex_exec/0.171.0 (Ubuntu 24.4.0; x86_64) xterm",
		"session-id: " + session, "thread-id: " + session}
}

// claudeCodeBody is one Claude Code request.
func claudeCodeBody(t *testing.T, session string, turns ...string) string {
	t.Helper()
	var msgs []map[string]any
	for i, s := range turns {
		switch {
		case i == 0:
			msgs = append(msgs, map[string]any{"role": "user", "content": []map[string]any{
				{"type": "text", "text": "<system-reminder>\nAs you answer the user's questions, you can use the following context:\n" +
					"# claudeMd\nRun go test before committing.\n</system-reminder>\n"},
				{"type": "text", "text": s},
			}})
		case i%2 == 1:
			msgs = append(msgs, map[string]any{"role": "assistant", "content": []map[string]any{{"type": "text", "text": s}}})
		default:
			msgs = append(msgs, map[string]any{"role": "user", "content": []map[string]any{{"type": "text", "text": s}}})
		}
	}
	b, err := json.Marshal(map[string]any{
		"model": "claude-sonnet-4-5", "max_tokens": 32000, "stream": true, "messages": msgs,
		"system": []map[string]any{
			{"type": "text", "text": "You are Claude Code, Anthropic's official CLI for Claude.", "cache_control": map[string]any{"type": "ephemeral"}},
			{"type": "text", "text": "You are an interactive CLI tool that helps users with software engineering tasks.", "cache_control": map[string]any{"type": "ephemeral"}},
		},
		"tools":    []map[string]any{{"name": "Bash", "description": "Executes a bash command", "input_schema": map[string]any{"type": "object"}}},
		"metadata": map[string]any{"user_id": `{"device_id":"5e1f","account_uuid":"","session_id":"` + session + `"}`},
	})
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func claudeCodeHeaders(session string) []string {
	return []string{"x-api-key: sk-ant-k", "anthropic-version: 2023-06-01", "anthropic-beta: claude-code-20250219,interleaved-thinking-2025-05-14",
		"x-app: cli", "User-Agent: claude-cli/2.0.50 (external, cli)", "x-claude-code-session-id: " + session}
}

// conversationKeys is every conversation key the proxy created, sorted.
func (d *fakeDirectory) conversationKeys() []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	var ks []string
	for k := range d.convs {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}

// TestHarnessSessionBinding: each harness session is its own conversation,
// across its turns, even when every session opens with the same scaffolding
// (issue 17: every `codex exec` started in one folder landed in one).
func TestHarnessSessionBinding(t *testing.T) {
	t.Parallel()
	const s1, s2 = "019ad0f1-7c2e-7d41-9a5e-1f2b3c4d5e6f", "019ad0f4-0b11-7e20-8c3a-6a7b8c9d0e1f"
	type req struct {
		path, body string
		headers    []string
	}
	cases := []struct {
		name string
		reqs func(t *testing.T) []req
		want []string // conversation keys created
	}{
		{"codex sessions in one folder", func(t *testing.T) []req {
			return []req{
				{"/v1/responses", codexBody(t, s1, "fix the failing test"), codexHeaders(s1)},
				{"/v1/responses", codexBody(t, s1, "fix the failing test", "Fixed.", "now run the linter"), codexHeaders(s1)},
				{"/v1/responses", codexBody(t, s2, "fix the failing test"), codexHeaders(s2)},
			}
		}, []string{"x:" + s1, "x:" + s2}},
		{"codex prompt_cache_key without the headers", func(t *testing.T) []req {
			return []req{
				{"/v1/responses", codexBody(t, s1, "add a changelog"), []string{"Authorization: Bearer sk-proj-k"}},
				{"/v1/responses", codexBody(t, s2, "add a changelog"), []string{"Authorization: Bearer sk-proj-k"}},
			}
		}, []string{"x:" + s1, "x:" + s2}},
		{"codex without any session id hashes past the scaffolding", func(t *testing.T) []req {
			return []req{
				{"/v1/responses", codexBody(t, "", "add a changelog"), []string{"Authorization: Bearer sk-proj-k"}},
				{"/v1/responses", codexBody(t, "", "add a changelog", "Added.", "and a license"), []string{"Authorization: Bearer sk-proj-k"}},
				{"/v1/responses", codexBody(t, "", "rename the module"), []string{"Authorization: Bearer sk-proj-k"}},
			}
		}, nil}, // two auto: keys, checked below
		{"claude code sessions", func(t *testing.T) []req {
			return []req{
				{"/v1/messages", claudeCodeBody(t, s1, "fix the failing test"), claudeCodeHeaders(s1)},
				{"/v1/messages", claudeCodeBody(t, s1, "fix the failing test", "Fixed.", "now run the linter"), claudeCodeHeaders(s1)},
				{"/v1/messages", claudeCodeBody(t, s2, "fix the failing test"), claudeCodeHeaders(s2)},
			}
		}, []string{"x:" + s1, "x:" + s2}},
		{"X-Perpetuity-Conversation comes first", func(t *testing.T) []req {
			return []req{
				{"/v1/messages", claudeCodeBody(t, s1, "fix the failing test"), append(claudeCodeHeaders(s1), "X-Perpetuity-Conversation: shop")},
				{"/v1/responses", codexBody(t, s2, "fix the failing test"), append(codexHeaders(s2), "X-Perpetuity-Conversation: shop")},
			}
		}, []string{"h:shop"}},
		{"a harness session comes before the Responses conversation", func(t *testing.T) []req {
			return []req{{"/v1/responses", `{"model":"gpt-5.1-codex","conversation":"conv_68ab","input":"hello"}`, codexHeaders(s1)}}
		}, []string{"x:" + s1}},
		{"a Responses request continuing a reply is that reply's", func(t *testing.T) []req {
			// Two chains saying "yes" once each, and one of them again
			// (a retry): three requests, two conversations.
			return []req{
				{"/v1/responses", `{"model":"gpt-4.1","previous_response_id":"resp_a1","input":[{"role":"user","content":"yes"}]}`, []string{"Authorization: Bearer sk-proj-k"}},
				{"/v1/responses", `{"model":"gpt-4.1","previous_response_id":"resp_b7","input":[{"role":"user","content":"yes"}]}`, []string{"Authorization: Bearer sk-proj-k"}},
				{"/v1/responses", `{"model":"gpt-4.1","previous_response_id":"resp_a1","input":[{"role":"user","content":"yes"}]}`, []string{"Authorization: Bearer sk-proj-k"}},
			}
		}, []string{"r:resp_a1", "r:resp_b7"}},
		{"a prompt_cache_key that is not a session id is not one", func(t *testing.T) []req {
			return []req{
				{"/v1/responses", `{"model":"gpt-4.1","prompt_cache_key":"support-bot-v2","input":"where is my parcel?"}`, []string{"Authorization: Bearer sk-proj-k"}},
				{"/v1/responses", `{"model":"gpt-4.1","prompt_cache_key":"support-bot-v2","input":"cancel my order"}`, []string{"Authorization: Bearer sk-proj-k"}},
			}
		}, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			tp := newTestProxy(t)
			reqs := c.reqs(t)
			for _, r := range reqs {
				if status, _, body := tp.post(r.path, r.body, r.headers...); status != http.StatusOK {
					t.Fatalf("status %d: %s", status, body)
				}
			}
			tp.settle(len(reqs))
			got := tp.dir.conversationKeys()
			if c.want == nil {
				if len(got) != 2 || !strings.HasPrefix(got[0], "auto:") || !strings.HasPrefix(got[1], "auto:") {
					t.Fatalf("conversations %q, want two hashed ones", got)
				}
				return
			}
			if strings.Join(got, " ") != strings.Join(c.want, " ") {
				t.Fatalf("conversations %q, want %q", got, c.want)
			}
		})
	}
}

// TestHarnessSessionTitle: the title is the user's first words, not the
// harness's scaffolding.
func TestHarnessSessionTitle(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name string
		in   func(t *testing.T) (*inbound, error)
	}{
		{"codex", func(t *testing.T) (*inbound, error) {
			return parseInbound(dialect.OpenAIResponses, []byte(codexBody(t, "", "fix the failing test\nit is flaky")))
		}},
		{"claude code", func(t *testing.T) (*inbound, error) {
			return parseInbound(dialect.AnthropicMessages, []byte(claudeCodeBody(t, "s", "fix the failing test\nit is flaky")))
		}},
	} {
		in, err := c.in(t)
		if err != nil {
			t.Fatal(err)
		}
		if _, title := firstContent(in); title != "fix the failing test" {
			t.Errorf("%s: title %q", c.name, title)
		}
	}
}

// FuzzSessionOf: whatever a harness sends as its session id, the id taken
// is storable text within the name bound, or none.
func FuzzSessionOf(f *testing.F) {
	f.Add("019ad0f1-7c2e-7d41-9a5e-1f2b3c4d5e6f", "019ad0f1-7c2e-7d41-9a5e-1f2b3c4d5e6f")
	f.Add("a\x00b", "support-bot-v2")
	f.Add("\xff\xfe", "019AD0F1-7C2E-7D41-9A5E-1F2B3C4D5E6F")
	f.Fuzz(func(t *testing.T, header, cacheKey string) {
		h := http.Header{}
		h.Set("Session-Id", header)
		hs := sessionOf(h, &inbound{dialect: dialect.OpenAIResponses, cacheKey: cacheKey})
		if hs.id == "" {
			return
		}
		if !usableSession(hs.id) || (hs.source == "prompt_cache_key" && !isUUID(hs.id)) {
			t.Fatalf("took %q from %s", hs.id, hs.source)
		}
	})
}
