package e2e

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
)

// harnessBody builds a request the way real coding agents send one: a large
// system prompt as content blocks with cache_control, dozens of tools,
// thinking, metadata with a JSON user id, unknown fields, and a history.
func harnessBody(t *testing.T, anthropic bool) ([]byte, map[string]json.RawMessage) {
	t.Helper()
	var tools []map[string]any
	for i := 0; i < 30; i++ {
		schema := map[string]any{"type": "object", "properties": map[string]any{"path": map[string]any{"type": "string"}}}
		if anthropic {
			tools = append(tools, map[string]any{"name": fmt.Sprintf("tool_%02d", i), "description": "does thing " + fmt.Sprint(i), "input_schema": schema})
		} else {
			tools = append(tools, map[string]any{"type": "function", "function": map[string]any{"name": fmt.Sprintf("tool_%02d", i), "description": "does thing", "parameters": schema}})
		}
	}
	big := strings.Repeat("You are a coding agent. Follow the repository conventions. ", 200)
	var body map[string]any
	if anthropic {
		body = map[string]any{
			"model": "claude-sonnet-4-5", "max_tokens": 2048, "stream": false,
			"system": []map[string]any{
				{"type": "text", "text": big, "cache_control": map[string]any{"type": "ephemeral"}},
				{"type": "text", "text": "Environment: linux", "cache_control": map[string]any{"type": "ephemeral", "ttl": "1h"}},
			},
			"tools":       tools,
			"thinking":    map[string]any{"type": "enabled", "budget_tokens": 1024},
			"metadata":    map[string]any{"user_id": `{"device_id":"abc","session_id":"f00d"}`},
			"tool_choice": map[string]any{"type": "auto"},
			"container":   "unknown-to-perpetuity",
			"messages": []map[string]any{
				{"role": "user", "content": []map[string]any{{"type": "text", "text": "<system-reminder>files: a.go b.go</system-reminder>"}, {"type": "text", "text": "refactor the parser"}}},
				{"role": "assistant", "content": "I will refactor it."},
				{"role": "user", "content": "now add tests for the parser"},
			},
		}
	} else {
		body = map[string]any{
			"model": "gpt-4o", "stream": false, "user": "session-123", "reasoning_effort": "high",
			"tools": tools, "parallel_tool_calls": false, "seed": 7,
			"messages": []map[string]any{
				{"role": "system", "content": big},
				{"role": "user", "content": "refactor the parser"},
				{"role": "assistant", "content": "I will refactor it."},
				{"role": "user", "content": "now add tests for the parser"},
			},
		}
	}
	b, err := json.Marshal(body)
	if err != nil {
		t.Fatal(err)
	}
	var fields map[string]json.RawMessage
	_ = json.Unmarshal(b, &fields)
	return b, fields
}

// TestHarnessShapesPassThrough: everything a harness sends reaches the
// provider unchanged except the history the frame replaces; with the memory
// tools on, the harness's own tools and system blocks still lead, unchanged.
func TestHarnessShapesPassThrough(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	for _, c := range []struct {
		name      string
		anthropic bool
		tools     bool
	}{{"anthropic", true, false}, {"anthropic-tools-on", true, true}, {"openai", false, false}, {"openai-tools-on", false, true}} {
		body, sent := harnessBody(t, c.anthropic)
		path := "/v1/chat/completions"
		if c.anthropic {
			path = "/v1/messages"
		}
		req, _ := http.NewRequest(http.MethodPost, s.URL+"/k/"+s.Key+path, strings.NewReader(string(body)))
		req.Header.Set("Content-Type", "application/json")
		if c.anthropic {
			req.Header.Set("x-api-key", "sk-ant-shape")
			req.Header.Set("anthropic-version", "2023-06-01")
			req.Header.Set("anthropic-beta", "prompt-caching-2024-07-31,interleaved-thinking-2025-05-14")
		} else {
			req.Header.Set("Authorization", "Bearer sk-shape")
			req.Header.Set("OpenAI-Beta", "assistants=v2")
		}
		if !c.tools {
			req.Header.Set("X-Perpetuity-Tools", "off")
		}
		resp, err := httpClient().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Fatalf("%s: %d %s", c.name, resp.StatusCode, b)
		}
		reqs := s.Fake.Requests()
		up := reqs[len(reqs)-1]
		var got map[string]json.RawMessage
		if err := json.Unmarshal(up.Body, &got); err != nil {
			t.Fatal(err)
		}
		for k, v := range sent {
			if k == "messages" || (c.tools && (k == "tools" || k == "system")) {
				continue
			}
			if !jsonEqual(v, got[k]) {
				t.Errorf("%s: field %s changed on the way:\n sent %s\n got  %s", c.name, k, v, got[k])
			}
		}
		if c.tools {
			var sentTools, gotTools []json.RawMessage
			_ = json.Unmarshal(sent["tools"], &sentTools)
			_ = json.Unmarshal(got["tools"], &gotTools)
			if len(gotTools) != len(sentTools)+4 {
				t.Errorf("%s: %d tools upstream, want the harness's %d plus 4", c.name, len(gotTools), len(sentTools))
			}
			for i := range sentTools {
				if i < len(gotTools) && !jsonEqual(sentTools[i], gotTools[i]) {
					t.Errorf("%s: harness tool %d changed", c.name, i)
				}
			}
			if c.anthropic {
				var sys, gotSys []json.RawMessage
				_ = json.Unmarshal(sent["system"], &sys)
				_ = json.Unmarshal(got["system"], &gotSys)
				for i := range sys {
					if i >= len(gotSys) || !jsonEqual(sys[i], gotSys[i]) {
						t.Errorf("%s: system block %d (with its cache_control) changed", c.name, i)
					}
				}
			}
		}
		hdr := map[bool][]string{true: {"Anthropic-Beta", "Anthropic-Version", "X-Api-Key"}, false: {"Openai-Beta", "Authorization"}}
		for _, h := range hdr[c.anthropic] {
			if up.Header.Get(h) != req.Header.Get(h) {
				t.Errorf("%s: header %s reached the provider as %q", c.name, h, up.Header.Get(h))
			}
		}
		if up.Header.Get("X-Perpetuity-Tools") != "" {
			t.Errorf("%s: Perpetuity's own headers reached the provider", c.name)
		}
		if !strings.Contains(string(up.Body), "now add tests for the parser") {
			t.Errorf("%s: live question missing upstream", c.name)
		}
	}
}

func jsonEqual(a, b json.RawMessage) bool {
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return false
	}
	xa, _ := json.Marshal(x)
	ya, _ := json.Marshal(y)
	return string(xa) == string(ya)
}
