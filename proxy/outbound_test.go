package proxy

import (
	"sort"
	"strings"
	"testing"
)

// foreignHeaders are what a client may carry that no provider should get:
// its cookies (the console's session among them, on the same origin),
// Perpetuity's own headers, where it connected from, headers some gateways
// read as another method or path, and credentials for other services.
var foreignHeaders = []string{
	"Cookie: perpetuity_session=console-secret; other=1",
	HeaderUser + ": ada",
	HeaderConversation + ": trip",
	"X-Forwarded-For: 10.1.2.3",
	"X-Forwarded-Host: console.internal",
	"Forwarded: for=10.1.2.3;host=console.internal",
	"X-Real-Ip: 10.1.2.3",
	"X-Original-Url: /admin",
	"X-Http-Method-Override: DELETE",
	"Origin: http://console.internal",
	"Referer: http://console.internal/keys",
	"Api-Key: azure-secret",
	"X-Goog-Api-Key: google-secret",
	"Proxy-Authorization: Basic c2VjcmV0",
}

// harmlessHeaders are what SDKs and harnesses send that providers read.
var harmlessHeaders = []string{
	"User-Agent: OpenAI/Go 3.0",
	"Accept: application/json",
	"Idempotency-Key: idem-1",
	"X-Stainless-Lang: go",
	"X-Stainless-Retry-Count: 0",
	"Anthropic-Beta: tools-2024",
	"Openai-Beta: assistants=v2",
	"Openai-Organization: org-1",
	"Openai-Project: proj-1",
}

// TestOutboundHeaderPolicy (issue 15, finding 6): one policy for every
// route: the provider addressed gets its own credential, in its header,
// and the harmless headers of its dialect; never the other provider's
// credential, cookies, Perpetuity's own headers, forwarding headers or
// anything else.
func TestOutboundHeaderPolicy(t *testing.T) {
	t.Parallel()
	both := []string{"Authorization: Bearer sk-proj-openaisecret", "X-Api-Key: sk-ant-api03-anthropicsecret", anthVersion}
	chat := `{"model":"%s","messages":[{"role":"user","content":"hello"}]}`
	msgs := `{"model":"%s","max_tokens":20,"messages":[{"role":"user","content":"hello"}]}`
	cases := []struct {
		name, method, path, body string
		anthropic                bool // the provider addressed
	}{
		{"passthrough count_tokens", "POST", "/v1/messages/count_tokens", with(msgs, "claude-sonnet-4-5"), true},
		{"passthrough models", "GET", "/v1/models", "", true},
		{"chat to openai", "POST", "/v1/chat/completions", strings.Replace(chat, "%s", "gpt-4o", 1), false},
		{"chat to anthropic", "POST", "/v1/chat/completions", strings.Replace(chat, "%s", "claude-sonnet-4-5", 1), true},
		{"messages to anthropic", "POST", "/v1/messages", strings.Replace(msgs, "%s", "claude-sonnet-4-5", 1), true},
		{"messages to openai", "POST", "/v1/messages", strings.Replace(msgs, "%s", "gpt-4o", 1), false},
		{"responses", "POST", "/v1/responses", `{"model":"gpt-4o","input":"hello"}`, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			up := hostileProvider(t)
			srv := newEdgeProxy(t, up.URL)
			headers := append(append(append([]string{jsonBody}, both...), foreignHeaders...), harmlessHeaders...)
			res := rawDo(t, srv, c.method, "/k/"+testKey+c.path, c.body, headers...)
			if res.Status != 200 {
				t.Fatalf("status %d %q", res.Status, res.Body)
			}
			hits := up.Hits()
			if len(hits) != 1 {
				t.Fatalf("provider got %v", paths(hits))
			}
			got := hits[0].Header
			want := map[string]string{"User-Agent": "OpenAI/Go 3.0", "Accept": "application/json", "Idempotency-Key": "idem-1",
				"X-Stainless-Lang": "go", "X-Stainless-Retry-Count": "0", "Content-Type": "application/json"}
			if c.anthropic {
				want["X-Api-Key"] = "sk-ant-api03-anthropicsecret"
				want["Anthropic-Version"] = "2023-06-01"
				want["Anthropic-Beta"] = "tools-2024"
			} else {
				want["Authorization"] = "Bearer sk-proj-openaisecret"
				want["Openai-Beta"] = "assistants=v2"
				want["Openai-Organization"] = "org-1"
				want["Openai-Project"] = "proj-1"
			}
			// What the transport adds on its own.
			for _, k := range []string{"Accept-Encoding", "Content-Length"} {
				if v := got.Get(k); v != "" {
					want[k] = v
				}
			}
			var extra []string
			for k, vs := range got {
				if w, ok := want[k]; !ok || len(vs) != 1 || vs[0] != w {
					extra = append(extra, k+": "+strings.Join(vs, ", "))
				}
			}
			for k, w := range want {
				if got.Get(k) != w {
					t.Errorf("%s: %q, want %q", k, got.Get(k), w)
				}
			}
			sort.Strings(extra)
			for _, e := range extra {
				t.Errorf("reached the provider: %s", e)
			}
		})
	}
}
