// Package harness is what the reliability tests of issue 9 share: a real
// perpetuity server on its own database and fake provider, requests in
// either dialect sent as raw HTTP, a stream reader that tells content,
// terminators and error events apart, and tags that pair each request
// with what the provider saw and what was stored.
package harness

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"net/http/httptest"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/perpetuity/perpetuity/e2e/fakeprovider"
	"github.com/perpetuity/perpetuity/e2e/rig"
	"github.com/perpetuity/perpetuity/migrations/dbtest"
)

// Server is one running perpetuity process with its own database, tenant
// and fake provider.
type Server struct {
	Proc     *rig.Proc
	URL      string
	DBURL    string
	Key      string
	TenantID int64
	Fake     *fakeprovider.Provider
	Upstream *httptest.Server // the fake provider's server
}

// Start runs `perpetuity serve` on a fresh database against a fake provider
// mounted on httptest; extraEnv adds configuration. The server log is
// printed when t fails.
func Start(t testing.TB, extraEnv ...string) *Server {
	t.Helper()
	fake := fakeprovider.New()
	fs := httptest.NewServer(fake)
	t.Cleanup(fs.Close)
	s := &Server{DBURL: dbtest.New(t), Fake: fake, Upstream: fs}
	env := append([]string{
		"DATABASE_URL=" + s.DBURL,
		"PERPETUITY_OPENAI_BASE_URL=" + fs.URL + "/v1",
		"PERPETUITY_ANTHROPIC_BASE_URL=" + fs.URL,
	}, extraEnv...)
	tn := rig.CreateTenant(t, env, "reliability")
	s.Key, s.TenantID = tn.Key, tn.TenantID
	p, err := rig.Serve(t, env)
	if err != nil {
		t.Fatal(err)
	}
	s.Proc, s.URL = p, p.URL
	t.Cleanup(func() {
		if t.Failed() {
			log := p.Log.String()
			if len(log) > 20000 {
				log = "...\n" + log[len(log)-20000:]
			}
			t.Logf("server log:\n%s", log)
		}
	})
	return s
}

// PID is the server's process id.
func (s *Server) PID() int { return s.Proc.Cmd.Process.Pid }

// Dialect is an inbound API shape and the provider its model goes to.
type Dialect struct {
	Name   string
	Client string // the caller's dialect: "openai" (chat completions) or "anthropic" (messages)
	Path   string // under the proxy URL's /v1
	Model  string
	Header map[string]string
}

// Anthropic reports whether the caller speaks the Anthropic dialect.
func (d Dialect) Anthropic() bool { return d.Client == "anthropic" }

// The two chat dialects, each for a model of its own provider, and each
// for a model of the other provider (the reply is translated both ways).
var (
	OpenAI = Dialect{Name: "openai", Client: "openai", Path: "/chat/completions", Model: "gpt-4o-mini",
		Header: map[string]string{"Authorization": "Bearer sk-reliability"}}
	Anthropic = Dialect{Name: "anthropic", Client: "anthropic", Path: "/messages", Model: "claude-sonnet-4-5",
		Header: map[string]string{"x-api-key": "sk-ant-reliability", "anthropic-version": "2023-06-01"}}
	OpenAIToAnthropic = Dialect{Name: "openai->anthropic", Client: "openai", Path: "/chat/completions", Model: "claude-sonnet-4-5",
		Header: map[string]string{"Authorization": "Bearer sk-ant-api03-reliability"}}
	AnthropicToOpenAI = Dialect{Name: "anthropic->openai", Client: "anthropic", Path: "/messages", Model: "gpt-4o-mini",
		Header: map[string]string{"x-api-key": "sk-proj-reliability", "anthropic-version": "2023-06-01"}}

	Dialects = []Dialect{OpenAI, Anthropic}
	Crossed  = []Dialect{OpenAIToAnthropic, AnthropicToOpenAI}
)

// Body is a one-question chat request.
func (d Dialect) Body(question string, stream bool) []byte {
	body := map[string]any{
		"model":    d.Model,
		"stream":   stream,
		"messages": []map[string]string{{"role": "user", "content": question}},
	}
	if d.Anthropic() {
		body["max_tokens"] = 4096
	}
	b, err := json.Marshal(body)
	if err != nil {
		panic(err) // a map of strings always encodes
	}
	return b
}

// Request builds the chat request for question, addressed through the
// key-in-path proxy URL.
func (s *Server) Request(ctx context.Context, d Dialect, question string, stream bool) *http.Request {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.URL+"/k/"+s.Key+"/v1"+d.Path,
		bytes.NewReader(d.Body(question, stream)))
	if err != nil {
		panic(err) // the URL is ours
	}
	req.Header.Set("Content-Type", "application/json")
	for k, v := range d.Header {
		req.Header.Set(k, v)
	}
	return req
}

// Tags pair a request with the provider call it caused and the messages it
// stored: questions carry q#N#, the fake's replies r#N#.
var tagRE = regexp.MustCompile(`[qr]#(\d+)#`)

// Question is the tagged question of request n.
func Question(n int, text string) string { return fmt.Sprintf("q#%d# %s", n, text) }

// ReplyText is the tagged reply the fake gives request n.
func ReplyText(n int, text string) string { return fmt.Sprintf("r#%d# %s", n, text) }

// TagOf finds the tag of a stored text or of a provider request body. In a
// rendered request the live question comes after any recalled memory, so
// the last tag is the live one.
func TagOf(b []byte) (int, bool) {
	all := tagRE.FindAllSubmatch(b, -1)
	if len(all) == 0 {
		return 0, false
	}
	n, err := strconv.Atoi(string(all[len(all)-1][1]))
	return n, err == nil
}

// Turn is what one tagged request left in the database.
type Turn struct {
	User, Assistant *rig.Message
	Extra           int // messages beyond one of each role: duplicates
}

// Turns reads the tenant's stored messages grouped by tag.
func (s *Server) Turns(ctx context.Context) (map[int]*Turn, int, error) {
	msgs, err := rig.Stored(ctx, s.DBURL, s.TenantID)
	if err != nil {
		return nil, 0, err
	}
	out := map[int]*Turn{}
	for i := range msgs {
		m := &msgs[i]
		n, ok := TagOf([]byte(m.Text))
		if !ok {
			continue
		}
		tr := out[n]
		if tr == nil {
			tr = &Turn{}
			out[n] = tr
		}
		switch {
		case m.Role == "user" && tr.User == nil:
			tr.User = m
		case m.Role == "assistant" && tr.Assistant == nil:
			tr.Assistant = m
		default:
			tr.Extra++
		}
	}
	return out, len(msgs), nil
}

// WaitStored polls until at least n messages are stored or the timeout
// passes (reply captures run after the response ends), and returns the
// turns it last read.
func (s *Server) WaitStored(t testing.TB, n int, timeout time.Duration) map[int]*Turn {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		turns, got, err := s.Turns(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if got >= n || time.Now().After(deadline) {
			return turns
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// Words is a reply text of n words, tagged for request tag.
func Words(tag, n int) string {
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, " w%d", i)
	}
	return ReplyText(tag, strings.TrimSpace(b.String()))
}

// Percentile is the p-th percentile (0..100) of ds by nearest rank; 0 for none.
func Percentile(ds []time.Duration, p float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := append([]time.Duration(nil), ds...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	k := int(math.Ceil(p/100*float64(len(s)))) - 1
	return s[min(max(k, 0), len(s)-1)]
}

// Ms formats a duration in milliseconds with one decimal.
func Ms(d time.Duration) string {
	return strconv.FormatFloat(float64(d.Microseconds())/1000, 'f', 1, 64) + " ms"
}
