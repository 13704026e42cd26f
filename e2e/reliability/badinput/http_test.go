package badinput

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/perpetuity/perpetuity/e2e/fakeprovider"
	"github.com/perpetuity/perpetuity/e2e/reliability/figure"
	"github.com/perpetuity/perpetuity/e2e/reliability/internal/harness"
	"github.com/perpetuity/perpetuity/e2e/rig"
	"github.com/perpetuity/perpetuity/migrations/dbtest"
)

// limit is the server's PERPETUITY_MAX_BODY_BYTES here: small next to the
// 100 MB body, so memory that grew with the body would show.
const limit = 4 << 20

// endpoint is one place bad input can arrive.
type endpoint struct {
	name    string
	path    string // after /k/<key>
	dialect string // "openai", "anthropic" or "import"
	header  map[string]string
	// wrap puts a JSON value where the endpoint reads user text.
	wrap func(text string) string
}

func endpoints() []endpoint {
	return []endpoint{
		{"chat", "/v1/chat/completions", "openai", map[string]string{"Authorization": "Bearer sk-badinput"},
			func(v string) string { return `{"model":"gpt-4o","messages":[{"role":"user","content":` + v + `}]}` }},
		{"messages", "/v1/messages", "anthropic", map[string]string{"X-Api-Key": "sk-ant-badinput", "Anthropic-Version": "2023-06-01"},
			func(v string) string {
				return `{"model":"claude-sonnet-4-5","max_tokens":16,"messages":[{"role":"user","content":` + v + `}]}`
			}},
		{"responses", "/v1/responses", "openai", map[string]string{"Authorization": "Bearer sk-badinput"},
			func(v string) string { return `{"model":"gpt-4o","input":` + v + `}` }},
		{"import", "/perpetuity/import", "import", nil,
			func(v string) string {
				return `{"conversation":"bad","turns":[{"role":"user","text":` + v + `,"at":"2024-01-01T00:00:00Z"}]}` + "\n"
			}},
	}
}

// badCase is one bad body and the status it must get.
type badCase struct {
	name string
	body func(e endpoint) io.Reader
	size int64 // Content-Length; -1 streams it chunked
	want int
	// importWant, when set, is the import endpoint's status instead.
	importWant int
}

func (c badCase) wantFor(e endpoint) int {
	if e.dialect == "import" && c.importWant != 0 {
		return c.importWant
	}
	return c.want
}

func fixed(f func(e endpoint) string) func(e endpoint) io.Reader {
	return func(e endpoint) io.Reader { return strings.NewReader(f(e)) }
}

func nested(depth int) string {
	return strings.Repeat("[", depth) + strings.Repeat("]", depth)
}

func badCases() []badCase {
	cs := []badCase{
		// An empty JSONL file is a valid one (blank lines are ignored, says
		// the README): it imports nothing and says so.
		{"empty body", fixed(func(endpoint) string { return "" }), 0, 400, 200},
		{"truncated JSON", fixed(func(e endpoint) string { s := e.wrap(`"hello"`); return s[:len(s)/2] }), 0, 400, 0},
		{"not JSON", fixed(func(endpoint) string { return "hello, world" }), 0, 400, 0},
		{"JSON array, not an object", fixed(func(endpoint) string { return `[1,2,3]` }), 0, 400, 0},
		{"JSON null", fixed(func(endpoint) string { return `null` }), 0, 400, 0},
		{"trailing garbage", fixed(func(e endpoint) string { return strings.TrimRight(e.wrap(`"hello"`), "\n") + `}}}` }), 0, 400, 0},
		{"NUL and control bytes", fixed(func(endpoint) string { return "\x00\x01\x02{\"model\":\x00}" }), 0, 400, 0},
		{"text is a number", fixed(func(e endpoint) string { return e.wrap(`12345`) }), 0, 400, 0},
		{"text is an object of the wrong shape", fixed(func(e endpoint) string { return e.wrap(`{"x":true}`) }), 0, 400, 0},
		{"wrong types at the top", fixed(func(e endpoint) string {
			if e.dialect == "import" {
				return `{"conversation":7,"turns":"many"}` + "\n"
			}
			return `{"model":42,"messages":"hi","input":false,"stream":"yes","max_tokens":"x"}`
		}), 0, 400, 0},
		{"100k levels of nesting in the text", fixed(func(e endpoint) string { return e.wrap(nested(100_000)) }), 0, 400, 0},
		{"100k levels of nesting in an unknown field", fixed(func(e endpoint) string {
			s := e.wrap(`"hello"`)
			return s[:1] + `"extra":` + nested(100_000) + `,` + s[1:]
		}), 0, 400, 0},
		{fmt.Sprintf("body of limit+1 bytes (%d)", limit+1), func(e endpoint) io.Reader {
			return io.LimitReader(io.MultiReader(strings.NewReader(e.wrap(`"`)), repeatReader('x')), limit+1)
		}, limit + 1, 413, 0},
	}
	return cs
}

// repeatReader yields b forever.
type repeatReader byte

func (r repeatReader) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = byte(r)
	}
	return len(p), nil
}

// world is one running server with its own database and fake provider.
type world struct {
	proc  *rig.Proc
	fake  *fakeprovider.Provider
	env   []string
	dbURL string
}

func startWorld(t *testing.T, extraEnv ...string) *world {
	t.Helper()
	fake := fakeprovider.New()
	fs := httptest.NewServer(fake)
	t.Cleanup(fs.Close)
	dbURL := dbtest.New(t)
	env := append([]string{
		"DATABASE_URL=" + dbURL,
		"PERPETUITY_OPENAI_BASE_URL=" + fs.URL + "/v1",
		"PERPETUITY_ANTHROPIC_BASE_URL=" + fs.URL,
	}, extraEnv...)
	proc, err := rig.Serve(t, env)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			log := proc.Log.String()
			if len(log) > 8000 {
				log = log[len(log)-8000:]
			}
			t.Logf("server log (end):\n%s", log)
		}
	})
	return &world{proc: proc, fake: fake, env: env, dbURL: dbURL}
}

func (w *world) alive() bool {
	select {
	case <-w.proc.Exited():
		return false
	default:
	}
	resp, err := http.Get(w.proc.URL + "/healthz")
	if err != nil {
		return false
	}
	resp.Body.Close()
	return resp.StatusCode == http.StatusOK
}

// post sends body (chunked when size < 0) and reads the answer; a
// transport error is returned as status 0.
func (w *world) post(path string, header map[string]string, body io.Reader, size int64) (int, []byte, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, w.proc.URL+path, io.NopCloser(body))
	if err != nil {
		return 0, nil, err
	}
	if size >= 0 {
		req.ContentLength = size
	}
	req.Header.Set("Content-Type", "application/json")
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, b, nil
}

// dialectOK reports whether an error body is the endpoint's dialect's.
func dialectOK(e endpoint, status int, b []byte) bool {
	var v struct {
		Type  string `json:"type"`
		Error struct {
			Type    string `json:"type"`
			Message string `json:"message"`
		} `json:"error"`
	}
	if json.Unmarshal(b, &v) != nil || v.Error.Message == "" {
		return false
	}
	switch e.dialect {
	case "anthropic":
		want := map[int]string{400: "invalid_request_error", 413: "request_too_large"}[status]
		return v.Type == "error" && v.Error.Type == want
	case "openai":
		return v.Type == "" && v.Error.Type == "invalid_request_error"
	}
	return v.Type == "" && v.Error.Type == "" // import: {"error":{"message":...,"line":...}}
}

// stored counts the tenant's messages (as the owner role).
func stored(ctx context.Context, t *testing.T, dbURL string, tenant int64) int64 {
	n, err := rig.Scalar(ctx, dbURL, `SELECT count(*) FROM messages WHERE tenant_id = $1`, tenant)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

const bigBody = 100 << 20

func TestBadInputRealBinary(t *testing.T) {
	ctx := context.Background()
	w := startWorld(t, "PERPETUITY_MAX_BODY_BYTES="+strconv.Itoa(limit))
	tn := rig.CreateTenant(t, w.env, "bad input")

	type tally struct{ sent, crashes, fiveXX, wrongStatus, wrongDialect int }
	var all tally
	var rows []string
	check := func(e endpoint, name string, want, status int, b []byte, err error) {
		all.sent++
		problem := ""
		switch {
		case !w.alive():
			all.crashes++
			problem = "server died"
		case status >= 500:
			all.fiveXX++
			problem = fmt.Sprintf("status %d", status)
		case status == 0:
			problem = fmt.Sprintf("no answer: %v", err)
			all.wrongStatus++
		case status != want:
			all.wrongStatus++
			problem = fmt.Sprintf("status %d, want %d", status, want)
		case status == http.StatusOK:
			if !strings.Contains(string(b), `"turns":0`) {
				all.wrongStatus++
				problem = "accepted and imported something"
			}
		case !dialectOK(e, status, b):
			all.wrongDialect++
			problem = fmt.Sprintf("error body not in the %s dialect", e.dialect)
		}
		if problem != "" {
			t.Errorf("%s / %s: %s: %.300s", e.name, name, problem, b)
			rows = append(rows, fmt.Sprintf("| %s | %s | %s |", e.name, name, problem))
		}
		if all.crashes > 0 {
			t.FailNow()
		}
	}

	for _, e := range endpoints() {
		for _, c := range badCases() {
			status, b, err := w.post("/k/"+tn.Key+e.path, e.header, c.body(e), c.size)
			check(e, c.name, c.wantFor(e), status, b, err)
		}
	}

	// Invalid UTF-8 in the text: refused, or accepted with the text made
	// valid; never a 5xx, never stored as invalid bytes.
	utf8Tenant := rig.CreateTenant(t, w.env, "bad input utf8")
	utf8Accepted := 0
	for _, e := range endpoints() {
		body := e.wrap("\"caf\xe9 \xff\xfe \xed\xa0\x80 ok\"")
		status, b, err := w.post("/k/"+utf8Tenant.Key+e.path, e.header, strings.NewReader(body), int64(len(body)))
		all.sent++
		switch {
		case !w.alive():
			all.crashes++
			t.Fatalf("%s / invalid UTF-8: server died", e.name)
		case status >= 500 || status == 0:
			all.fiveXX++
			t.Errorf("%s / invalid UTF-8: status %d (%v): %.300s", e.name, status, err, b)
		case status == http.StatusOK:
			utf8Accepted++
		case status != http.StatusBadRequest || !dialectOK(e, status, b):
			all.wrongStatus++
			t.Errorf("%s / invalid UTF-8: status %d: %.300s", e.name, status, b)
		}
	}
	time.Sleep(500 * time.Millisecond)
	// PostgreSQL refuses invalid UTF-8 outright, so what was accepted was
	// made valid first; count what landed.
	utf8Stored := stored(ctx, t, w.dbURL, utf8Tenant.TenantID)

	// 100 MB streamed without Content-Length, into each endpoint, while the
	// server's memory is watched.
	pid := w.proc.Cmd.Process.Pid
	var peakDelta int64
	var bigRows []string
	for _, e := range endpoints() {
		base, err := harness.RSS(pid)
		if err != nil {
			t.Fatal(err)
		}
		stop := make(chan struct{})
		peak := harness.PeakRSS(pid, stop)
		start := time.Now()
		head := e.wrap(`"`)
		body := io.LimitReader(io.MultiReader(strings.NewReader(head), repeatReader('x')), bigBody)
		status, b, err := w.post("/k/"+tn.Key+e.path, e.header, body, -1)
		close(stop)
		p := <-peak
		delta := p - base
		peakDelta = max(peakDelta, delta)
		bigRows = append(bigRows, fmt.Sprintf("| %s | %d | %.1f MiB | %s |", e.name, status, float64(delta)/(1<<20), time.Since(start).Round(time.Millisecond)))
		all.sent++
		switch {
		case !w.alive():
			all.crashes++
			t.Fatalf("%s / 100 MB body: server died", e.name)
		case status >= 500:
			all.fiveXX++
			t.Errorf("%s / 100 MB body: status %d: %.300s", e.name, status, b)
		case status == 0:
			// The server may close the connection once it has answered
			// 413 while the client is still writing; the client then sees
			// a write error rather than the answer. Not a server fault.
			t.Logf("%s / 100 MB body: no answer read (%v)", e.name, err)
		case status != http.StatusRequestEntityTooLarge || !dialectOK(e, status, b):
			all.wrongStatus++
			t.Errorf("%s / 100 MB body: status %d: %.300s", e.name, status, b)
		}
	}
	const rssBound = 64 << 20

	time.Sleep(500 * time.Millisecond)
	nStored := stored(ctx, t, w.dbURL, tn.TenantID)
	if nStored != 0 {
		t.Errorf("bad input stored %d messages", nStored)
	}
	if peakDelta > rssBound {
		t.Errorf("RSS grew by %.1f MiB during a 100 MB body (limit %d MiB)", float64(peakDelta)/(1<<20), limit>>20)
	}
	alive := w.alive()

	var d strings.Builder
	fmt.Fprintf(&d, "Real binary, PERPETUITY_MAX_BODY_BYTES=%d. %d bad bodies × %d endpoints (chat, messages, responses, import), "+
		"%d invalid-UTF-8 texts (%d accepted with the text made valid, the rest 400), and a 100 MB body streamed without Content-Length into each endpoint. "+
		"Messages stored from bad input: %d (from the accepted invalid-UTF-8 texts, on their own tenant: %d). Process alive at the end: %v.\n\n",
		limit, len(badCases()), len(endpoints()), len(endpoints()), utf8Accepted, nStored, utf8Stored, alive)
	d.WriteString("| endpoint | 100 MB body: status | peak RSS growth | time |\n|---|--:|--:|--:|\n")
	d.WriteString(strings.Join(bigRows, "\n") + "\n")
	if len(rows) > 0 {
		d.WriteString("\nFailures:\n\n| endpoint | case | problem |\n|---|---|---|\n" + strings.Join(rows, "\n") + "\n")
	}
	pass := all.crashes == 0 && all.fiveXX == 0 && all.wrongStatus == 0 && all.wrongDialect == 0 && nStored == 0 && peakDelta <= rssBound && alive
	figure.Record(t, figure.Figure{
		Item: 8,
		Name: "Bad input against the real binary",
		Figure: fmt.Sprintf("%d requests: %d crashes, %d 5xx, %d wrong status, %d wrong dialect, %d stored; peak RSS growth %.1f MiB during 100 MB bodies",
			all.sent, all.crashes, all.fiveXX, all.wrongStatus, all.wrongDialect, nStored, float64(peakDelta)/(1<<20)),
		Target:  fmt.Sprintf("0 crashes, 0 5xx, right 4xx in the caller's dialect, nothing stored, RSS growth <= %d MiB", rssBound>>20),
		Pass:    pass,
		Details: d.String(),
	})
}
