package secrets

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/perpetuity/perpetuity/app"
	"github.com/perpetuity/perpetuity/e2e/reliability/figure"
	"github.com/perpetuity/perpetuity/memory/store"
	"github.com/perpetuity/perpetuity/proxy"
)

// No route of the real binary panics, so the panic path is driven in
// process: app.NewRouter is the very chain serve builds (error handler,
// recovery, access log), with the real proxy routes mounted on it and a key
// directory that panics while the canary keys are in scope.

// panicDirectory panics in ResolveKey, the first thing that touches the key.
type panicDirectory struct {
	how func(key string)
}

func (d panicDirectory) ResolveKey(_ context.Context, key string) (store.KeyIdentity, error) {
	d.how(key)
	return store.KeyIdentity{}, store.ErrNotFound
}
func (panicDirectory) UserByName(context.Context, int64, string) (int64, error) { return 0, nil }
func (panicDirectory) EnsureUserForKey(context.Context, int64, int64, string, int) (int64, error) {
	return 0, nil
}
func (panicDirectory) FindConversation(context.Context, int64, int64, string) (int64, error) {
	return 0, nil
}
func (panicDirectory) EnsureConversation(context.Context, int64, int64, string, string) (int64, error) {
	return 0, nil
}
func (panicDirectory) RecordRequests(context.Context, []store.RequestRecord) error { return nil }
func (panicDirectory) TouchKey(context.Context, int64, int64) error                { return nil }

// lockedWriter collects a log stream.
type lockedWriter struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (w *lockedWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.Write(p)
}

func (w *lockedWriter) Bytes() []byte {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]byte(nil), w.b.Bytes()...)
}

func TestSecretsPanicPath(t *testing.T) {
	c := newCanaries("panic")
	c.ppk = "ppk_" + randomTail(32) // a well-formed key; the directory never answers
	needles := c.needles()

	var nilMap map[string]int
	kinds := []struct {
		name string
		how  func(key string)
	}{
		{"runtime error, key in scope", func(key string) { nilMap[key]++ }},
		{"index out of range, key in scope", func(key string) { _ = key[len(key)+int(time.Now().Unix()%2)+1] }},
		{"panic value wraps the key", func(key string) { panic(fmt.Errorf("resolve %q: directory broken", key)) }},
		{"panic with the key itself", func(key string) { panic(key) }},
	}
	type result struct {
		kind, route string
		status      int
		logHits     int
		respHits    int
		found       []string
	}
	var results []result
	for _, k := range kinds {
		logs := &lockedWriter{}
		log := slog.New(slog.NewJSONHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
		ec := app.NewRouter(log)
		ec.Logger.SetOutput(logs) // Echo's own logger (recovery) writes here
		px := proxy.New(proxy.Config{
			OpenAIBaseURL: "http://127.0.0.1:1/v1", AnthropicBaseURL: "http://127.0.0.1:1",
			MaxBodyBytes: 1 << 20, CaptureTimeout: time.Second, FrameCeiling: 1000,
		}, panicDirectory{how: k.how}, nil, log)
		px.Register(ec)
		// A non-proxy route, answered by Echo's default error handler.
		ec.GET("/console/panic/:secret", func(e echo.Context) error {
			secret := e.Param("secret")
			k.how(secret)
			return nil
		})
		srv := httptest.NewServer(ec)
		reqs := []struct {
			route string
			req   *http.Request
		}{
			{"chat, key in path", mustReq(http.MethodPost, srv.URL+"/k/"+c.ppk+"/v1/chat/completions", chatBody("gpt-4o", "hi", false),
				"Authorization", "Bearer "+c.openai)},
			{"messages, key in header", mustReq(http.MethodPost, srv.URL+"/v1/messages", messagesBody("claude-sonnet-4-5", "hi", true),
				"X-Perpetuity-Key", c.ppk, "x-api-key", c.anthropic, "anthropic-version", "2023-06-01")},
			{"passthrough", mustReq(http.MethodGet, srv.URL+"/k/"+c.ppk+"/v1/models", "", "Authorization", "Bearer "+c.openai)},
			{"console-style route", mustReq(http.MethodGet, srv.URL+"/console/panic/"+c.ppk, "", "Authorization", "Bearer "+c.openai)},
		}
		for _, r := range reqs {
			before := len(logs.Bytes())
			resp, err := http.DefaultClient.Do(r.req)
			if err != nil {
				t.Fatalf("%s / %s: %v", k.name, r.route, err)
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			var hdr strings.Builder
			for name, vs := range resp.Header {
				fmt.Fprintf(&hdr, "%s: %s\n", name, strings.Join(vs, ", "))
			}
			logged := logs.Bytes()[before:]
			res := result{kind: k.name, route: r.route, status: resp.StatusCode}
			var f1, f2 []string
			res.logHits, f1 = hits(logged, needles)
			res.respHits, f2 = hits(append([]byte(hdr.String()), b...), needles)
			res.found = dedupe(append(f1, f2...))
			if resp.StatusCode != http.StatusInternalServerError {
				t.Errorf("%s / %s: status %d, want 500 from the recovered panic", k.name, r.route, resp.StatusCode)
			}
			if !bytes.Contains(logged, []byte(`"msg":"panic recovered"`)) {
				t.Errorf("%s / %s: the panic was not logged at all (positive control)", k.name, r.route)
			}
			if res.logHits+res.respHits > 0 {
				t.Errorf("LEAK: panic %q on %s: %d in the log, %d in the response (%s)\n…%s…", k.name, r.route,
					res.logHits, res.respHits, strings.Join(res.found, ", "), excerpt(append(logged, b...), needles))
			}
			results = append(results, res)
		}
		srv.Close()
	}

	total := 0
	var d strings.Builder
	d.WriteString("app.NewRouter (serve's error handler, recovery and access log; the access log writes no line for a panicking request, " +
		"the recovery's \"panic recovered\" line names the route) with the real proxy routes and a key directory that panics " +
		"while the canary Perpetuity key (in the path or X-Perpetuity-Key) and provider keys (Bearer, x-api-key) are in scope; " +
		"slog and Echo's logger both captured.\n\n| panic | route | status | log | response |\n|---|---|--:|--:|--:|\n")
	for _, r := range results {
		total += r.logHits + r.respHits
		fmt.Fprintf(&d, "| %s | %s | %d | %d | %d |\n", r.kind, r.route, r.status, r.logHits, r.respHits)
	}
	figure.Record(t, figure.Figure{
		Item:    6,
		Name:    "Secrets canaries, panic path",
		Figure:  fmt.Sprintf("%d occurrences over %d panics × %d routes (log and response)", total, len(kinds), len(results)/len(kinds)),
		Target:  "0 occurrences",
		Pass:    total == 0,
		Details: d.String(),
	})
}

func mustReq(method, url, b string, kv ...string) *http.Request {
	var rd io.Reader
	if b != "" {
		rd = strings.NewReader(b)
	}
	req, err := http.NewRequest(method, url, rd)
	if err != nil {
		panic(err)
	}
	req.Header.Set("Content-Type", "application/json")
	for i := 0; i+1 < len(kv); i += 2 {
		req.Header.Set(kv[i], kv[i+1])
	}
	return req
}
