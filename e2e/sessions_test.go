package e2e

import (
	"encoding/json"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
)

// TestHarnessSessionsThroughTheBinary: two Codex CLI sessions started in
// one folder, and two Claude Code sessions, each in its harness's request
// shape, make four conversations of the real service (issue 17: every
// `codex exec` in one folder used to land in one), and the binding log
// records which session id and user hint each was bound to. The
// integrity check finds every label bound.
func TestHarnessSessionsThroughTheBinary(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	const codexA, codexB = "019ad0f1-7c2e-7d41-9a5e-1f2b3c4d5e6f", "019ad0f4-0b11-7e20-8c3a-6a7b8c9d0e1f"
	const claudeA, claudeB = "6c1f0b2e-3d4a-4b5c-8d6e-7f8091a2b3c4", "a1b2c3d4-e5f6-4a7b-8c9d-0e1f2a3b4c5d"
	codex := func(session, prompt string) (string, string, http.Header) {
		env := "<environment_context>\n  <cwd>/home/dev/shop</cwd>\n  <shell>bash</shell>\n  <current_date>2026-11-30</current_date>\n</environment_context>"
		agents := "# AGENTS.md instructions for /home/dev/shop\n\n<INSTRUCTIONS>\nRun go test before committing.\n</INSTRUCTIONS>"
		body, _ := json.Marshal(map[string]any{
			"model": "gpt-5.1-codex", "instructions": "You are Codex, based on GPT-5.", "stream": true, "store": false,
			"input": []map[string]any{
				{"type": "message", "role": "developer", "content": []map[string]any{{"type": "input_text", "text": "<permissions instructions>\nworkspace-write\n</permissions instructions>"}}},
				{"type": "message", "role": "user", "content": []map[string]any{{"type": "input_text", "text": agents}, {"type": "input_text", "text": env}}},
				{"type": "message", "role": "user", "content": []map[string]any{{"type": "input_text", "text": prompt}}},
			},
			"tools": []map[string]any{}, "tool_choice": "auto", "parallel_tool_calls": false,
			"reasoning": map[string]any{"effort": "medium", "summary": "auto"}, "include": []string{"reasoning.encrypted_content"},
			"prompt_cache_key": session,
		})
		h := http.Header{"Authorization": {"Bearer sk-proj-test"}, "Originator": {"codex_exec"},
			"User-Agent": {"codex_exec/0.171.0 (Ubuntu 24.4.0; x86_64)"}, "Session-Id": {session}, "Thread-Id": {session}}
		return s.OpenAIBase() + "/responses", string(body), h
	}
	claude := func(session, prompt string) (string, string, http.Header) {
		body, _ := json.Marshal(map[string]any{
			"model": "claude-sonnet-4-5", "max_tokens": 32000, "stream": true,
			"system": []map[string]any{{"type": "text", "text": "You are Claude Code, Anthropic's official CLI for Claude.", "cache_control": map[string]any{"type": "ephemeral"}}},
			"messages": []map[string]any{{"role": "user", "content": []map[string]any{
				{"type": "text", "text": "<system-reminder>\nAs you answer the user's questions, you can use the following context:\n# claudeMd\nRun go test.\n</system-reminder>\n"},
				{"type": "text", "text": prompt}}}},
			"metadata": map[string]any{"user_id": `{"device_id":"5e1f","session_id":"` + session + `"}`},
		})
		h := http.Header{"X-Api-Key": {"sk-ant-test"}, "Anthropic-Version": {"2023-06-01"}, "Anthropic-Beta": {"claude-code-20250219"},
			"X-App": {"cli"}, "User-Agent": {"claude-cli/2.0.50 (external, cli)"}, "X-Claude-Code-Session-Id": {session}}
		return s.AnthropicBase() + "/v1/messages", string(body), h
	}
	send := func(target, body string, h http.Header) {
		t.Helper()
		req, err := http.NewRequest(http.MethodPost, target, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header = h
		req.Header.Set("Content-Type", "application/json")
		resp, err := httpClient().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("status %d: %s", resp.StatusCode, b)
		}
	}
	send(codex(codexA, "fix the failing test"))
	send(codex(codexB, "fix the failing test"))
	send(codex(codexA, "now run the linter"))
	send(claude(claudeA, "rename the module"))
	send(claude(claudeB, "rename the module"))
	s.waitStored(10)

	if n := s.scalar(`SELECT count(*) FROM conversations WHERE tenant_id = $1`, s.TenantID); n != 4 {
		t.Fatalf("%d conversations, want 4 (one per harness session)", n)
	}
	for _, c := range []struct{ subject, value string }{
		{"thread-id", codexA}, {"thread-id", codexB}, {"x-claude-code-session-id", claudeA}, {"x-claude-code-session-id", claudeB},
	} {
		n := s.scalar(`SELECT count(*) FROM bindings b JOIN conversations c ON c.tenant_id = b.tenant_id AND c.id = b.conversation_id
			WHERE b.tenant_id = $1 AND b.kind = 'hint' AND b.subject = $2 AND b.value = $3 AND c.ext_key = 'x:' || $3`, s.TenantID, c.subject, c.value)
		if n != 1 {
			t.Errorf("%s %s bound %d times to its conversation, want once", c.subject, c.value, n)
		}
	}
	if n := s.scalar(`SELECT count(*) FROM bindings WHERE tenant_id = $1 AND kind = 'hint' AND subject = 'metadata.user_id'`, s.TenantID); n != 2 {
		t.Errorf("%d Anthropic user hints bound, want 2", n)
	}
	if n := s.scalar(`SELECT count(*) FROM conversations WHERE tenant_id = $1 AND title = 'fix the failing test'`, s.TenantID); n != 2 {
		t.Errorf("%d Codex conversations titled with the user's words, want 2", n)
	}
	env := []string{"DATABASE_URL=" + s.DBURL}
	if out, err := runCLI(env, "integrity", "--tenant", strconv.FormatInt(s.TenantID, 10), "--json"); err != nil || !strings.Contains(out, `"violations":0`) {
		t.Fatalf("integrity: %v\n%s", err, out)
	}
}
