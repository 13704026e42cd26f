package secrets

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/perpetuity/perpetuity/e2e/fakeprovider"
	"github.com/perpetuity/perpetuity/e2e/rig"
	"github.com/perpetuity/perpetuity/migrations/dbtest"
)

// world is one running server, its fake provider and its database, plus
// every exchange the test had with it (the "responses" place).
type world struct {
	t     *testing.T
	proc  *rig.Proc
	fake  *fakeprovider.Provider
	env   []string // for the CLI: DATABASE_URL and the upstreams
	dbURL string
	http  *http.Client

	mu        sync.Mutex
	exchanges []exchange
}

// exchange is one request and what came back, kept whole for the search.
type exchange struct {
	path   string // the canary set (failure path) it belongs to
	what   string
	status int // 0: no response (transport error, client timeout)
	header http.Header
	body   []byte
	err    error
}

// text is the exchange as the client saw it: status line, headers, body.
func (x exchange) text() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%d\n", x.status)
	keys := make([]string, 0, len(x.header))
	for k := range x.header {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		for _, v := range x.header[k] {
			fmt.Fprintf(&b, "%s: %s\n", k, v)
		}
	}
	b.Write(x.body)
	return b.String()
}

// startWorld starts the real binary against a fresh database and a fake
// provider scripted by markers in the last user message.
func startWorld(t *testing.T, extraEnv ...string) *world {
	t.Helper()
	fake := fakeprovider.New()
	fake.SetDefault(scripted)
	fs := httptest.NewServer(fake)
	t.Cleanup(fs.Close)
	dbURL := dbtest.New(t)
	env := []string{
		"DATABASE_URL=" + dbURL,
		"PERPETUITY_OPENAI_BASE_URL=" + fs.URL + "/v1",
		"PERPETUITY_ANTHROPIC_BASE_URL=" + fs.URL,
		// debug is the most talkative level: a key that reaches any log
		// line reaches it here.
		"PERPETUITY_LOG_LEVEL=debug",
		// Port 1 on loopback refuses connections: models named dead-* go to
		// an unreachable upstream.
		"PERPETUITY_UPSTREAMS=dead=http://127.0.0.1:1/v1|dead-",
	}
	env = append(env, extraEnv...)
	proc, err := rig.Serve(t, env)
	if err != nil {
		t.Fatal(err)
	}
	w := &world{t: t, proc: proc, fake: fake, env: env, dbURL: dbURL, http: &http.Client{
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("server log:\n%s", proc.Log.String())
		}
	})
	return w
}

// Markers in the last user message script the fake provider's answer, so
// the order requests arrive in does not matter.
const (
	mark429      = "[[upstream-429]]"
	mark500      = "[[upstream-500]]"
	mark503      = "[[upstream-503]]"
	mark529      = "[[upstream-529]]"
	markSlow     = "[[upstream-slow]]"
	markCut      = "[[upstream-cut]]"
	markInBand   = "[[upstream-inband]]"
	markEchoAuth = "[[upstream-401-echo]]"
)

func scripted(r fakeprovider.Recorded) fakeprovider.Reply {
	// The frame carries earlier turns of the same tenant, markers
	// included: the live message, which comes last, decides.
	body := string(r.Body)
	last, at := "", -1
	for _, m := range []string{mark429, mark500, mark503, mark529, markSlow, markCut, markInBand, markEchoAuth} {
		if i := strings.LastIndex(body, m); i > at {
			last, at = m, i
		}
	}
	switch last {
	case mark429:
		return fakeprovider.Reply{Status: 429}
	case mark500:
		return fakeprovider.Reply{Status: 500}
	case mark503:
		return fakeprovider.Reply{Status: 503}
	case mark529:
		return fakeprovider.Reply{Status: 529}
	case markSlow:
		return fakeprovider.Reply{FirstByteDelay: 3 * time.Second}
	case markCut:
		return fakeprovider.Reply{Text: "one two three four five six", FailAfter: 2}
	case markInBand:
		return fakeprovider.Reply{Text: "one two three four five six", InBandErrorAfter: 2}
	case markEchoAuth:
		// The worst an upstream can do: echo the whole credential back in
		// its error, as some OpenAI-compatible servers do.
		key := r.Header.Get("X-Api-Key")
		if key == "" {
			key = strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")
		}
		return fakeprovider.Reply{Status: 401, ErrorMessage: "Incorrect API key provided: " + key}
	}
	return fakeprovider.Reply{}
}

// call is one request a failure path makes.
type call struct {
	what    string
	method  string
	path    string // joined to the server URL
	header  http.Header
	body    io.Reader
	timeout time.Duration // 0: 20s
	want    int           // expected status; 0 expects no response (client gave up)
	any     bool          // any status will do (warming a rate limit up)
}

// do sends c, reads the whole answer and keeps it; a status other than the
// expected one fails the test (the path must really be the path it names).
func (w *world) do(pathName string, c call) exchange {
	w.t.Helper()
	timeout := c.timeout
	if timeout == 0 {
		timeout = 20 * time.Second
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	method := c.method
	if method == "" {
		method = http.MethodPost
	}
	req, err := http.NewRequestWithContext(ctx, method, w.proc.URL+c.path, c.body)
	if err != nil {
		w.t.Fatalf("%s: %v", c.what, err)
	}
	for k, vs := range c.header {
		req.Header[k] = append(req.Header[k], vs...)
	}
	x := exchange{path: pathName, what: c.what}
	resp, err := w.http.Do(req)
	if err == nil {
		x.status, x.header = resp.StatusCode, resp.Header
		x.body, err = io.ReadAll(resp.Body)
		resp.Body.Close()
	}
	x.err = err
	w.mu.Lock()
	w.exchanges = append(w.exchanges, x)
	w.mu.Unlock()
	switch {
	case c.any:
	case c.want == 0 && x.status != 0:
		w.t.Errorf("%s / %s: got status %d, want the client to give up first", pathName, c.what, x.status)
	case c.want != 0 && x.status != c.want:
		w.t.Errorf("%s / %s: status %d (err %v), want %d: %s", pathName, c.what, x.status, err, c.want, truncate(x.body, 300))
	}
	return x
}

func truncate(b []byte, n int) string {
	if len(b) > n {
		return string(b[:n]) + "…"
	}
	return string(b)
}

func jsonHeader(kv ...string) http.Header {
	h := http.Header{"Content-Type": {"application/json"}}
	for i := 0; i+1 < len(kv); i += 2 {
		h[http.CanonicalHeaderKey(kv[i])] = append(h[http.CanonicalHeaderKey(kv[i])], kv[i+1])
	}
	return h
}

func body(s string) io.Reader { return bytes.NewReader([]byte(s)) }
