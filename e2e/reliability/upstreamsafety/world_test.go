// Package upstreamsafety is issue 15, findings 4, 5 and 6: the proxy's edge
// towards the provider, attacked from both sides against the real binary.
// A hostile provider answers with redirects to another local listener,
// sets cookies, CORS grants, policies, refreshes, redirects and
// Perpetuity's own headers, and serves HTML pages with a script; hostile
// clients send pass-through paths with encoded traversal, separators that
// would become query or fragment, undocumented paths and methods, and
// requests carrying both providers' keys, cookies and forwarding headers.
// Counted: redirects followed, hits at the redirect target, forbidden
// headers and HTML reaching the client, traversal reaching the provider,
// foreign credentials and cookies reaching the provider. All must be 0,
// while the documented pass-through endpoints keep working through the
// official SDKs.
package upstreamsafety

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/perpetuity/perpetuity/e2e/fakeprovider"
	"github.com/perpetuity/perpetuity/e2e/rig"
	"github.com/perpetuity/perpetuity/migrations/dbtest"
)

// hit is one request a test listener received, as it came on the wire.
type hit struct {
	Method, Path, EscapedPath, Query string
	Header                           http.Header
	Body                             []byte
}

// listener is a local HTTP server that keeps every request it gets.
type listener struct {
	URL    string
	mu     sync.Mutex
	hits   []hit
	answer http.HandlerFunc
}

func newListener(t *testing.T, answer http.HandlerFunc) *listener {
	t.Helper()
	l := &listener{answer: answer}
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		l.mu.Lock()
		l.hits = append(l.hits, hit{Method: r.Method, Path: r.URL.Path, EscapedPath: r.URL.EscapedPath(), Query: r.URL.RawQuery,
			Header: r.Header.Clone(), Body: b})
		answer := l.answer
		l.mu.Unlock()
		r.Body = io.NopCloser(bytes.NewReader(b))
		answer(w, r)
	}))
	t.Cleanup(s.Close)
	l.URL = s.URL
	return l
}

// Hits returns the requests received since the i-th.
func (l *listener) Hits(from int) []hit {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]hit(nil), l.hits[min(from, len(l.hits)):]...)
}

func (l *listener) Count() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.hits)
}

// Answer changes how the listener answers from now on.
func (l *listener) Answer(a http.HandlerFunc) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.answer = a
}

// world is the real binary with every provider (OpenAI, Anthropic) at
// one hostile listener, and a second listener as the redirect target.
type world struct {
	t        *testing.T
	url, key string
	up       *listener
	fake     *fakeprovider.Provider
}

func startWorld(t *testing.T) *world {
	t.Helper()
	w := &world{t: t, fake: fakeprovider.New()}
	w.up = newListener(t, w.fake.ServeHTTP)
	dbURL := dbtest.New(t)
	env := []string{"DATABASE_URL=" + dbURL, "PERPETUITY_OPENAI_BASE_URL=" + w.up.URL + "/v1", "PERPETUITY_ANTHROPIC_BASE_URL=" + w.up.URL}
	w.key = rig.CreateTenant(t, env, "upstreamsafety").Key
	p, err := rig.Serve(t, env)
	if err != nil {
		t.Fatal(err)
	}
	w.url = p.URL
	t.Cleanup(func() {
		if t.Failed() {
			log := p.Log.String()
			if len(log) > 20000 {
				log = "...\n" + log[len(log)-20000:]
			}
			t.Logf("server log:\n%s", log)
		}
	})
	return w
}

// response is what a raw request got back.
type response struct {
	Status int
	Header http.Header
	Body   string
}

// do writes one request byte for byte under /k/<key> (so that a path's
// escapes reach the server as the attacker wrote them) and reads the
// response. headers are "Name: value" lines.
func (w *world) do(method, target, body string, headers ...string) response {
	w.t.Helper()
	host := strings.TrimPrefix(w.url, "http://")
	conn, err := net.Dial("tcp", host)
	if err != nil {
		w.t.Fatal(err)
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(60 * time.Second))
	var b strings.Builder
	fmt.Fprintf(&b, "%s /k/%s%s HTTP/1.1\r\nHost: %s\r\nConnection: close\r\nContent-Length: %d\r\n", method, w.key, target, host, len(body))
	for _, h := range headers {
		b.WriteString(h + "\r\n")
	}
	b.WriteString("\r\n" + body)
	if _, err := io.WriteString(conn, b.String()); err != nil {
		w.t.Fatal(err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		w.t.Fatalf("%s %s: %v", method, target, err)
	}
	defer resp.Body.Close()
	rb, _ := io.ReadAll(resp.Body)
	return response{Status: resp.StatusCode, Header: resp.Header, Body: string(rb)}
}

// call is one request on a proxy route that reaches a provider.
type call struct {
	name, method, path, body string
	headers                  []string
	anthropic                bool // the caller speaks Anthropic
	toAnthropic              bool // the provider addressed is Anthropic
}

const (
	openAIKey    = "Authorization: Bearer sk-proj-upstreamsafety"
	anthropicKey = "X-Api-Key: sk-ant-api03-upstreamsafety"
	anthVersion  = "Anthropic-Version: 2023-06-01"
	jsonType     = "Content-Type: application/json"
)

// calls covers every proxy route that reaches a provider, in both
// dialects, streaming and not, same-dialect and translated.
func calls() []call {
	chat := func(model, extra string) string {
		return `{"model":"` + model + `","messages":[{"role":"user","content":"hello there"}]` + extra + `}`
	}
	msgs := func(model, extra string) string {
		return `{"model":"` + model + `","max_tokens":50,"messages":[{"role":"user","content":"hello there"}]` + extra + `}`
	}
	return []call{
		{"chat", "POST", "/v1/chat/completions", chat("gpt-4o", ""), []string{openAIKey, jsonType}, false, false},
		{"chat stream", "POST", "/v1/chat/completions", chat("gpt-4o", `,"stream":true`), []string{openAIKey, jsonType}, false, false},
		{"messages", "POST", "/v1/messages", msgs("claude-sonnet-4-5", ""), []string{anthropicKey, anthVersion, jsonType}, true, true},
		{"messages stream", "POST", "/v1/messages", msgs("claude-sonnet-4-5", `,"stream":true`), []string{anthropicKey, anthVersion, jsonType}, true, true},
		{"chat to anthropic", "POST", "/v1/chat/completions", chat("claude-sonnet-4-5", ""), []string{"Authorization: Bearer sk-ant-api03-upstreamsafety", jsonType}, false, true},
		{"messages to openai", "POST", "/v1/messages", msgs("gpt-4o", ""), []string{"X-Api-Key: sk-proj-upstreamsafety", jsonType}, true, false},
		{"responses", "POST", "/v1/responses", `{"model":"gpt-4o","input":"hello there"}`, []string{openAIKey, jsonType}, false, false},
		{"pass-through models", "GET", "/v1/models", "", []string{openAIKey}, false, false},
		{"pass-through embeddings", "POST", "/v1/embeddings", `{"model":"text-embedding-3-small","input":"x"}`, []string{openAIKey, jsonType}, false, false},
		{"pass-through count_tokens", "POST", "/v1/messages/count_tokens", msgs("claude-sonnet-4-5", ""), []string{anthropicKey, anthVersion, jsonType}, true, true},
		{"pass-through anthropic models", "GET", "/v1/models", "", []string{anthropicKey, anthVersion}, true, true},
	}
}

// isDialectError tells whether body is an error of the caller's dialect
// (a JSON error, or the stream's in-band error event).
func isDialectError(anthropic bool, body string) bool {
	if anthropic {
		return strings.Contains(body, `"type":"error"`) && strings.Contains(body, `"error":{`)
	}
	return strings.HasPrefix(strings.TrimSpace(body), `{"error":{`) || strings.Contains(body, `data: {"error":{`)
}
