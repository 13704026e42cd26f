package proxy

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/perpetuity/perpetuity/e2e/fakeprovider"
	"github.com/perpetuity/perpetuity/memory"
	"github.com/perpetuity/perpetuity/memory/store"
	"github.com/perpetuity/perpetuity/proxy/translate"
)

var update = flag.Bool("update", false, "rewrite golden files under testdata/")

const testKey = "ppk_test"

// fakeDirectory knows one key and hands out user and conversation ids.
type fakeDirectory struct {
	mu      sync.Mutex
	convs   map[string]int64
	ensured int              // EnsureConversation calls
	users   map[string]int64 // beside the key's own "ada" (1)
	records []store.RequestRecord
}

func (d *fakeDirectory) ResolveKey(_ context.Context, key string) (store.KeyIdentity, error) {
	if key != testKey {
		return store.KeyIdentity{}, store.ErrNotFound
	}
	// Tenant-wide, so that tests may name other users; the pinned case is
	// scope_test.go's, against the real store.
	return store.KeyIdentity{TenantID: 1, KeyID: 1, UserID: 1, UserName: "ada", Scope: store.ScopeTenant}, nil
}

func (d *fakeDirectory) UserByName(_ context.Context, _ int64, name string) (int64, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if name == "ada" {
		return 1, nil
	}
	if id, ok := d.users[name]; ok {
		return id, nil
	}
	return 0, store.ErrNotFound
}

// EnsureUserForKey counts every user made as the one key's (ids from 2).
func (d *fakeDirectory) EnsureUserForKey(_ context.Context, _, _ int64, name string, perDay int) (int64, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if name == "ada" {
		return 1, nil
	}
	if id, ok := d.users[name]; ok {
		return id, nil
	}
	if perDay > 0 && len(d.users) >= perDay {
		return 0, fmt.Errorf("memory user %q: %w", name, store.ErrUserQuota)
	}
	if d.users == nil {
		d.users = map[string]int64{}
	}
	id := int64(len(d.users) + 2)
	d.users[name] = id
	return id, nil
}

func (d *fakeDirectory) FindConversation(_ context.Context, _, _ int64, ext string) (int64, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if id, ok := d.convs[ext]; ok {
		return id, nil
	}
	return 0, store.ErrNotFound
}

// Made reports how many users and conversations were created.
func (d *fakeDirectory) Made() (users, convs int) {
	d.mu.Lock()
	defer d.mu.Unlock()
	return len(d.users), len(d.convs)
}

func (d *fakeDirectory) EnsureConversation(_ context.Context, _, _ int64, ext, _ string) (int64, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.ensured++
	if id, ok := d.convs[ext]; ok {
		return id, nil
	}
	id := int64(len(d.convs) + 1)
	d.convs[ext] = id
	return id, nil
}

func (d *fakeDirectory) RecordRequests(_ context.Context, recs []store.RequestRecord) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.records = append(d.records, recs...)
	return nil
}

func (d *fakeDirectory) TouchKey(context.Context, int64, int64) error { return nil }

func (d *fakeDirectory) Records() []store.RequestRecord {
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([]store.RequestRecord(nil), d.records...)
}

// fakeMemory stores captured messages per conversation (a retry, same
// position and text, is stored once) and renders the frame as a fixed
// recollection followed by the conversation's stored turns.
type fakeMemory struct {
	mu        sync.Mutex
	msgs      []memory.Message
	recall    []memory.Turn
	toolCalls []string
	// lastQuery is the last frame query, to check what the pipeline asked.
	lastQuery memory.FrameQuery
	// frameErr, when set, is what every frame fails with.
	frameErr error
	// erasures is what Erasures reports, for every tenant.
	erasures uint64
	// frameDelay is how long every frame takes.
	frameDelay time.Duration
	// panicRole, when set, makes every capture of that role panic.
	panicRole string
}

// recollection is what the fake memory puts at the head of every frame.
func recollection() []memory.Turn {
	return []memory.Turn{
		{Role: "user", Text: "[memory] Earlier, ada said her cat is called Miso."},
		{Role: "assistant", Text: "Noted."},
	}
}

func (m *fakeMemory) Capture(_ context.Context, msg memory.Message) (store.Captured, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.panicRole != "" && msg.Role == m.panicRole {
		var byRole map[string]int
		byRole[msg.Role]++ // a nil map: a runtime error, as a bug would be
	}
	for i, old := range m.msgs {
		if old.ConversationID == msg.ConversationID && old.Position == msg.Position && old.Text == msg.Text && old.Role == msg.Role {
			return store.Captured{MessageID: int64(i + 1), Duplicate: true}, nil
		}
	}
	m.msgs = append(m.msgs, msg)
	return store.Captured{MessageID: int64(len(m.msgs)), ItemIDs: []int64{int64(len(m.msgs))}}, nil
}

func (m *fakeMemory) Frame(ctx context.Context, q memory.FrameQuery) (memory.Frame, error) {
	time.Sleep(m.frameDelay) // set before the proxy serves
	m.mu.Lock()
	defer m.mu.Unlock()
	m.lastQuery = q
	if m.frameErr != nil {
		return memory.Frame{}, m.frameErr
	}
	if err := ctx.Err(); err != nil { // as the engine's reads fail
		return memory.Frame{}, err
	}
	turns := append([]memory.Turn(nil), m.recall...)
	for _, msg := range m.msgs {
		if msg.ConversationID == q.ConversationID {
			turns = append(turns, memory.Turn{Role: msg.Role, Text: msg.Text})
		}
	}
	if !q.LiveStored && q.Live != "" { // as the engine's render: no text, no turn
		turns = append(turns, memory.Turn{Role: "user", Text: q.Live})
	}
	return memory.Frame{Turns: turns, Items: len(turns), Tokens: 10 * len(turns)}, nil
}

// FrameBeside captures, then frames: the fake has no reads to overlap.
func (m *fakeMemory) FrameBeside(ctx context.Context, q memory.FrameQuery, capture func(b memory.Beside) (store.Captured, error)) (store.Captured, memory.Frame, error) {
	got, err := capture(memory.Beside{})
	if err != nil {
		return store.Captured{}, memory.Frame{}, err
	}
	q.LiveStored, q.LiveItems = true, got.ItemIDs
	f, err := m.Frame(ctx, q)
	return got, f, err
}

// RunTool answers every memory call with a result naming it, and keeps the
// calls; the frame's tool state must come along.
func (m *fakeMemory) RunTool(_ context.Context, st *memory.ToolState, name string, args json.RawMessage) (string, error) {
	if st == nil || !memory.IsTool(name) {
		return "", fmt.Errorf("fake memory: call %q without a tool state", name)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.toolCalls = append(m.toolCalls, name+" "+string(args))
	return fmt.Sprintf("%s found: [memory] ada's cat Miso is grey (call %d)", name, len(m.toolCalls)), nil
}

func (m *fakeMemory) ToolCalls() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]string(nil), m.toolCalls...)
}

func (m *fakeMemory) Stored() []memory.Message {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]memory.Message(nil), m.msgs...)
}

// countingIDs makes translated ids and timestamps deterministic.
type countingIDs struct{ n atomic.Int64 }

func (c *countingIDs) NewID(prefix string) string {
	return fmt.Sprintf("%stest%03d", prefix, c.n.Add(1))
}
func (c *countingIDs) Now() int64 { return 1700000000 }

// upstreamServer is one fake provider behind its own listener, so tests
// can tell which provider a request reached.
type upstreamServer struct {
	*fakeprovider.Provider
	URL string
}

func newUpstream(t testing.TB) upstreamServer {
	t.Helper()
	f := fakeprovider.New()
	s := httptest.NewServer(f)
	t.Cleanup(s.Close)
	return upstreamServer{Provider: f, URL: s.URL}
}

// testProxy is the proxy served in-process with fake memory, directory and
// one fake provider per configured upstream.
type testProxy struct {
	t                                 testing.TB
	URL                               string
	px                                *Proxy
	mem                               *fakeMemory
	dir                               *fakeDirectory
	openai, anthropic, openrouter, vl upstreamServer
}

func newTestProxy(t testing.TB) *testProxy {
	t.Helper()
	tp := &testProxy{t: t, mem: &fakeMemory{recall: recollection()}, dir: &fakeDirectory{convs: map[string]int64{}},
		openai: newUpstream(t), anthropic: newUpstream(t), openrouter: newUpstream(t), vl: newUpstream(t)}
	cfg := Config{
		OpenAIBaseURL: tp.openai.URL + "/v1", AnthropicBaseURL: tp.anthropic.URL, OpenRouterBaseURL: tp.openrouter.URL + "/v1",
		Upstreams: []Upstream{{Name: "vllm", BaseURL: tp.vl.URL + "/v1", Prefixes: []string{"llama-", "meta-llama/", "gpt-oss"}},
			{Name: "notools", BaseURL: tp.vl.URL + "/v1", Prefixes: []string{"qwen"}, NoTools: true}}, // same server, declared notools
		MaxBodyBytes: 1 << 20, CaptureTimeout: 5 * time.Second, FrameCeiling: 4000,
	}
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	tp.px = New(cfg, tp.dir, tp.mem, log)
	tp.px.tr = translate.New(log, &countingIDs{})
	e := echo.New()
	e.HTTPErrorHandler = func(err error, c echo.Context) {
		if DialectOf(c) != 0 {
			WriteError(c, err)
			return
		}
		e.DefaultHTTPErrorHandler(err, c)
	}
	tp.px.Register(e)
	s := httptest.NewServer(e)
	t.Cleanup(s.Close)
	tp.URL = s.URL + "/k/" + testKey
	return tp
}

// post sends body to path (under /k/<key>) with headers given as
// "Name: value" strings, and returns the status, headers and whole body.
func (tp *testProxy) post(path, body string, headers ...string) (int, http.Header, string) {
	tp.t.Helper()
	req, err := http.NewRequest(http.MethodPost, tp.URL+path, strings.NewReader(body))
	if err != nil {
		tp.t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	for _, h := range headers {
		k, v, _ := strings.Cut(h, ": ")
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		tp.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		tp.t.Fatal(err)
	}
	return resp.StatusCode, resp.Header, string(b)
}

// settle waits until n forwarded requests have been recorded, which
// happens after their reply capture: a client can hold the whole reply
// before the handler has even started that work.
func (tp *testProxy) settle(n int) {
	tp.t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for len(tp.dir.Records()) < n {
		if time.Now().After(deadline) {
			tp.t.Fatalf("%d of %d requests recorded", len(tp.dir.Records()), n)
		}
		time.Sleep(5 * time.Millisecond)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := tp.px.Drain(ctx); err != nil {
		tp.t.Fatal(err)
	}
}

// received is every request the four fake providers got, by provider name.
func (tp *testProxy) received() map[string][]fakeprovider.Recorded {
	out := map[string][]fakeprovider.Recorded{}
	for name, u := range map[string]upstreamServer{"openai": tp.openai, "anthropic": tp.anthropic, "openrouter": tp.openrouter, "vllm": tp.vl} {
		if r := u.Requests(); len(r) > 0 {
			out[name] = r
		}
	}
	return out
}

// golden compares got with testdata/name, or rewrites it under -update.
func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update to create it)", err)
	}
	if string(want) != string(got) {
		t.Fatalf("%s differs from the golden file\n--- got ---\n%s\n--- want ---\n%s", name, got, want)
	}
}

func (m *fakeMemory) Erasures(int64) uint64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.erasures
}
