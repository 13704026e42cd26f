package proxy

import (
	"net/http"
	"strings"
	"testing"
)

// TestPassthroughPaths (issue 15, finding 4): pass-through paths are the
// caller's, so what reaches the provider must be one of its documented
// paths, with no traversal, no encoded separator turned real, and nothing
// of the path becoming query or fragment. Refusals come in the caller's
// dialect and never reach the provider.
func TestPassthroughPaths(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name, method, target string
		anthropic            bool
		status               int    // what the client must get
		path, query          string // what the provider must get (status 200)
	}{
		// What pass-through serves keeps working, exactly.
		{"models", "GET", "/v1/models", false, 200, "/v1/models", ""},
		{"model", "GET", "/v1/models/gpt-4o", false, 200, "/v1/models/gpt-4o", ""},
		{"fine-tuned model, escaped colons", "GET", "/v1/models/ft%3Agpt-4o-mini%3Aacme%3Ax1", false, 200, "/v1/models/ft:gpt-4o-mini:acme:x1", ""},
		{"query kept", "GET", "/v1/models?limit=2&after=gpt-4o", false, 200, "/v1/models", "limit=2&after=gpt-4o"},
		{"embeddings", "POST", "/v1/embeddings", false, 200, "/v1/embeddings", ""},
		{"count_tokens", "POST", "/v1/messages/count_tokens", true, 200, "/v1/messages/count_tokens", ""},
		{"anthropic models", "GET", "/v1/models/claude-sonnet-4-5", true, 200, "/v1/models/claude-sonnet-4-5", ""},
		{"batch results", "GET", "/v1/messages/batches/msgbatch_01/results", true, 200, "/v1/messages/batches/msgbatch_01/results", ""},
		{"stored chat completions", "GET", "/v1/chat/completions?limit=1", false, 200, "/v1/chat/completions", "limit=1"},
		{"response input items", "GET", "/v1/responses/resp_1/input_items", false, 200, "/v1/responses/resp_1/input_items", ""},
		{"openrouter models", "GET", "/v1/models", false, 200, "/api/v1/models", ""},
		{"openrouter credits", "GET", "/v1/credits", false, 200, "/api/v1/credits", ""},
		{"openrouter endpoints", "GET", "/v1/models/openai/gpt-4o/endpoints", false, 200, "/api/v1/models/openai/gpt-4o/endpoints", ""},
		{"openrouter unknown path", "GET", "/v1/files", false, 404, "", ""},

		// Traversal, encoded separators and dot segments.
		{"encoded traversal", "GET", "/v1/..%2F..%2Fadmin", false, 400, "", ""},
		{"encoded traversal lowercase", "GET", "/v1/models%2f..%2f..%2fadmin", false, 400, "", ""},
		{"encoded traversal anthropic", "POST", "/v1/messages%2F..%2F..%2Fadmin", true, 400, "", ""},
		{"encoded backslash", "GET", "/v1/models%5C..%5Cadmin", false, 400, "", ""},
		{"encoded dots", "GET", "/v1/models/%2E%2E/%2e%2e/admin", false, 400, "", ""},
		{"literal dot-dot", "GET", "/v1/models/../../admin", false, 400, "", ""},
		{"literal dot", "GET", "/v1/./models", false, 400, "", ""},
		{"double encoding", "GET", "/v1/models/..%252F..%252Fadmin", false, 400, "", ""},
		{"empty segment", "GET", "/v1/models//gpt-4o", false, 400, "", ""},
		{"trailing slash", "GET", "/v1/models/", false, 400, "", ""},
		{"encoded NUL", "GET", "/v1/models%00", false, 400, "", ""},
		{"encoded newline", "GET", "/v1/models%0d%0aX-Evil:%201", false, 400, "", ""},
		// Path turned query or fragment.
		{"encoded question mark", "GET", "/v1/models%3Finjected=1", false, 400, "", ""},
		{"encoded hash", "GET", "/v1/models%23injected", false, 400, "", ""},
		{"hash in the query", "GET", "/v1/models?limit=1#injected", false, 400, "", ""},
		// Undocumented paths and methods.
		{"unknown path", "GET", "/v1/admin", false, 404, "", ""},
		{"unknown path anthropic", "GET", "/v1/organizations/me", true, 404, "", ""},
		{"too deep", "GET", "/v1/models/gpt-4o/admin", false, 404, "", ""},
		{"openai path at anthropic", "POST", "/v1/embeddings", true, 404, "", ""},
		{"wrong method", "DELETE", "/v1/embeddings", false, 405, "", ""},
		{"wrong method anthropic", "PUT", "/v1/messages/count_tokens", true, 405, "", ""},
		{"POST to a read-only path", "POST", "/v1/models", false, 405, "", ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			up := newRecorder(t, func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "application/json")
				_, _ = w.Write([]byte(`{"ok":true}`))
			})
			srv := newEdgeProxy(t, up.URL)
			headers := []string{openAIKey, jsonBody}
			if strings.HasPrefix(c.name, "openrouter") {
				headers = []string{"Authorization: Bearer sk-or-v1-edge", jsonBody}
			}
			if c.anthropic {
				headers = []string{anthropicKey, anthVersion, jsonBody}
			}
			body := ""
			if c.method == "POST" {
				body = `{"model":"m","input":"x"}`
			}
			res := rawDo(t, srv, c.method, "/k/"+testKey+c.target, body, headers...)
			hits := up.Hits()
			if res.Status != c.status {
				t.Fatalf("%s %s: status %d %q, want %d (provider got %v)", c.method, c.target, res.Status, res.Body, c.status, paths(hits))
			}
			if c.status != 200 {
				if !isDialectError(c.anthropic, res.Body) {
					t.Errorf("%s %s: %d without an error body of the caller's dialect: %q", c.method, c.target, res.Status, res.Body)
				}
				if len(hits) > 0 {
					t.Errorf("%s %s: refused, but reached the provider as %v", c.method, c.target, paths(hits))
				}
				if c.status == 405 && res.Header.Get("Allow") == "" {
					t.Errorf("%s %s: 405 without Allow", c.method, c.target)
				}
				return
			}
			if len(hits) != 1 || hits[0].Path != c.path || hits[0].Query != c.query || hits[0].Method != c.method {
				t.Fatalf("%s %s reached the provider as %v, want %s %s?%s", c.method, c.target, paths(hits), c.method, c.path, c.query)
			}
		})
	}
}

func paths(hs []hit) []string {
	var out []string
	for _, h := range hs {
		s := h.Method + " " + h.EscapedPath
		if h.Query != "" {
			s += "?" + h.Query
		}
		out = append(out, strings.ReplaceAll(s, "\x00", `\x00`))
	}
	return out
}
