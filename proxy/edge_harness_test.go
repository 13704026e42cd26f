package proxy

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/labstack/echo/v4"
)

// hit is one request a test server received, as it came on the wire.
type hit struct {
	Method, Path, EscapedPath, Query string
	Header                           http.Header
	Body                             []byte
}

// recorder is a test server that keeps every request it gets and answers
// with answer; the hostile provider and the redirect target of the edge
// tests are both recorders.
type recorder struct {
	URL    string
	mu     sync.Mutex
	hits   []hit
	answer http.HandlerFunc
}

func newRecorder(t *testing.T, answer http.HandlerFunc) *recorder {
	t.Helper()
	rc := &recorder{answer: answer}
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		rc.mu.Lock()
		rc.hits = append(rc.hits, hit{Method: r.Method, Path: r.URL.Path, EscapedPath: r.URL.EscapedPath(), Query: r.URL.RawQuery,
			Header: r.Header.Clone(), Body: b})
		rc.mu.Unlock()
		r.Body = io.NopCloser(bytes.NewReader(b))
		rc.answer(w, r)
	}))
	t.Cleanup(s.Close)
	rc.URL = s.URL
	return rc
}

func (rc *recorder) Hits() []hit {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return append([]hit(nil), rc.hits...)
}

// newEdgeProxy serves the proxy in-process (fake memory and directory) with
// every provider, OpenAI, Anthropic and OpenRouter, at upstream, and
// returns the server's address (http://host:port).
func newEdgeProxy(t *testing.T, upstream string) string {
	t.Helper()
	cfg := Config{
		OpenAIBaseURL: upstream + "/v1", AnthropicBaseURL: upstream, OpenRouterBaseURL: upstream + "/api/v1",
		MaxBodyBytes: 1 << 20, CaptureTimeout: 5 * time.Second, FrameCeiling: 4000,
	}
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	px := New(cfg, &fakeDirectory{convs: map[string]int64{}}, &fakeMemory{recall: recollection()}, log)
	e := echo.New()
	e.HTTPErrorHandler = func(err error, c echo.Context) {
		if DialectOf(c) != 0 {
			WriteError(c, err)
			return
		}
		e.DefaultHTTPErrorHandler(err, c)
	}
	px.Register(e)
	s := httptest.NewServer(e)
	t.Cleanup(s.Close)
	t.Cleanup(func() { _ = px.Drain(t.Context()) })
	return s.URL
}

// rawResponse is what a raw request got back.
type rawResponse struct {
	Status int
	Header http.Header
	Body   string
}

// rawDo writes one request byte for byte (so that a path's escapes reach
// the server as the attacker wrote them; Go's client would re-encode some)
// and reads the response. headers are "Name: value" lines.
func rawDo(t *testing.T, server, method, target, body string, headers ...string) rawResponse {
	t.Helper()
	host := strings.TrimPrefix(server, "http://")
	conn, err := net.Dial("tcp", host)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(30 * time.Second))
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s HTTP/1.1\r\nHost: %s\r\nConnection: close\r\nContent-Length: %d\r\n", method, target, host, len(body))
	for _, h := range headers {
		b.WriteString(h + "\r\n")
	}
	b.WriteString("\r\n" + body)
	if _, err := io.WriteString(conn, b.String()); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatalf("%s %s: %v", method, target, err)
	}
	defer resp.Body.Close()
	rb, _ := io.ReadAll(resp.Body)
	return rawResponse{Status: resp.StatusCode, Header: resp.Header, Body: string(rb)}
}

// edgeCall is one request of the edge tests: a route in one dialect.
type edgeCall struct {
	name, method, path, body string
	headers                  []string
	anthropic                bool // answers in the Anthropic dialect
}

const (
	openAIKey    = "Authorization: Bearer sk-proj-edge"
	anthropicKey = "X-Api-Key: sk-ant-api03-edge"
	anthVersion  = "Anthropic-Version: 2023-06-01"
	jsonBody     = "Content-Type: application/json"
)

// edgeCalls covers every proxy route that reaches a provider, in both
// dialects, streaming and not, same-dialect and translated.
func edgeCalls() []edgeCall {
	chat := `{"model":"gpt-4o","messages":[{"role":"user","content":"hello there"}]%s}`
	msgs := `{"model":"claude-sonnet-4-5","max_tokens":50,"messages":[{"role":"user","content":"hello there"}]%s}`
	return []edgeCall{
		{"chat", "POST", "/v1/chat/completions", with(chat, ""), []string{openAIKey, jsonBody}, false},
		{"chat stream", "POST", "/v1/chat/completions", with(chat, `,"stream":true`), []string{openAIKey, jsonBody}, false},
		{"messages", "POST", "/v1/messages", with(msgs, ""), []string{anthropicKey, anthVersion, jsonBody}, true},
		{"messages stream", "POST", "/v1/messages", with(msgs, `,"stream":true`), []string{anthropicKey, anthVersion, jsonBody}, true},
		{"chat to anthropic", "POST", "/v1/chat/completions", strings.Replace(with(chat, ""), "gpt-4o", "claude-sonnet-4-5", 1),
			[]string{"Authorization: Bearer sk-ant-api03-edge", jsonBody}, false},
		{"messages to openai", "POST", "/v1/messages", strings.Replace(with(msgs, ""), "claude-sonnet-4-5", "gpt-4o", 1),
			[]string{"X-Api-Key: sk-proj-edge", jsonBody}, true},
		{"responses", "POST", "/v1/responses", `{"model":"gpt-4o","input":"hello there"}`, []string{openAIKey, jsonBody}, false},
		{"passthrough models", "GET", "/v1/models", "", []string{openAIKey}, false},
		{"passthrough embeddings", "POST", "/v1/embeddings", `{"model":"text-embedding-3-small","input":"x"}`, []string{openAIKey, jsonBody}, false},
		{"passthrough count_tokens", "POST", "/v1/messages/count_tokens", with(msgs, ""), []string{anthropicKey, anthVersion, jsonBody}, true},
		{"passthrough anthropic models", "GET", "/v1/models", "", []string{anthropicKey, anthVersion}, true},
	}
}

// isDialectError tells whether body is an error body of the dialect.
func isDialectError(anthropic bool, body string) bool {
	if anthropic {
		return strings.Contains(body, `"type":"error"`) && strings.Contains(body, `"error":{`)
	}
	return strings.HasPrefix(strings.TrimSpace(body), `{"error":{`) || strings.Contains(body, `data: {"error":{`)
}
