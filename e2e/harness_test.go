// Package e2e builds the real perpetuity binary, starts it against a fresh
// PostgreSQL database and a fake provider, and drives it with the official
// OpenAI and Anthropic SDKs.
package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/perpetuity/perpetuity/e2e/fakeprovider"
	"github.com/perpetuity/perpetuity/migrations/dbtest"
)

// binary is built once for the whole package by TestMain.
var binary string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "perpetuity-e2e-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	binary = filepath.Join(dir, "perpetuity")
	build := exec.Command("go", "build", "-o", binary, "../cmd/perpetuity")
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "build perpetuity:", err)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// server is one running perpetuity process with its own database and fake provider.
type server struct {
	t        *testing.T
	URL      string // http://127.0.0.1:port
	DBURL    string
	Key      string
	TenantID int64
	Fake     *fakeprovider.Provider
	stderr   *lockedBuffer
}

func (s *server) OpenAIBase() string    { return s.URL + "/k/" + s.Key + "/v1" }
func (s *server) AnthropicBase() string { return s.URL + "/k/" + s.Key }

type lockedBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

func startServer(t *testing.T, extraEnv ...string) *server {
	t.Helper()
	s, err := tryStartServer(t, extraEnv...)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// tryStartServer starts a server, or says why it could not (a caller that
// chose its own port may retry with another).
func tryStartServer(t *testing.T, extraEnv ...string) (*server, error) {
	t.Helper()
	fake := fakeprovider.New()
	fs := httptest.NewServer(fake)
	t.Cleanup(fs.Close)
	s := &server{t: t, DBURL: dbtest.New(t), Fake: fake, stderr: &lockedBuffer{}}

	env := append(os.Environ(),
		"DATABASE_URL="+s.DBURL,
		"PERPETUITY_ADDR=127.0.0.1:0",
		"PERPETUITY_OPENAI_BASE_URL="+fs.URL+"/v1",
		"PERPETUITY_ANTHROPIC_BASE_URL="+fs.URL,
		"PERPETUITY_LOG_LEVEL=debug",
	)
	env = append(env, extraEnv...)

	out, err := runCLI(env, "tenant", "create", "--json", "e2e")
	if err != nil {
		t.Fatalf("tenant create: %v\n%s", err, out)
	}
	var nt struct {
		TenantID int64  `json:"tenant_id"`
		Key      string `json:"key"`
	}
	if err := json.Unmarshal([]byte(out), &nt); err != nil {
		t.Fatalf("tenant create output %q: %v", out, err)
	}
	s.Key, s.TenantID = nt.Key, nt.TenantID

	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, binary, "serve")
	cmd.Env = env
	pr, pw, _ := os.Pipe()
	cmd.Stderr = pw
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pw.Close()
	addr := make(chan string, 1)
	exited := make(chan struct{})
	go func() {
		defer close(exited) // stderr closed: the process ended
		sc := bufio.NewScanner(pr)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			line := sc.Text()
			s.stderr.Write([]byte(line + "\n"))
			var rec struct {
				Msg  string `json:"msg"`
				Addr string `json:"addr"`
			}
			if json.Unmarshal([]byte(line), &rec) == nil && rec.Msg == "perpetuity serving" {
				addr <- rec.Addr
			}
		}
	}()
	t.Cleanup(func() {
		cancel()
		_ = cmd.Wait()
		if t.Failed() {
			t.Logf("server log:\n%s", s.stderr.String())
		}
	})
	select {
	case a := <-addr:
		s.URL = "http://" + a
	case <-exited:
		return nil, fmt.Errorf("server exited at start:\n%s", s.stderr.String())
	case <-time.After(30 * time.Second):
		return nil, fmt.Errorf("server did not start:\n%s", s.stderr.String())
	}
	return s, nil
}

func runCLI(env []string, args ...string) (string, error) {
	cmd := exec.Command(binary, args...)
	cmd.Env = env
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	if err != nil {
		return stdout.String() + stderr.String(), err
	}
	return stdout.String(), nil
}

// storedMessage is a captured message as the database holds it.
type storedMessage struct {
	Role        string
	Text        string
	Interrupted bool
}

// stored reads every captured message of the tenant, in capture order.
func (s *server) stored() []storedMessage {
	s.t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, s.DBURL)
	if err != nil {
		s.t.Fatal(err)
	}
	defer conn.Close(ctx)
	rows, err := conn.Query(ctx, `SELECT m.role, string_agg(i.body, '' ORDER BY i.part), m.interrupted
		FROM messages m JOIN items i ON i.tenant_id = m.tenant_id AND i.message_id = m.id
		WHERE m.tenant_id = $1 GROUP BY m.tenant_id, m.id ORDER BY m.id`, s.TenantID)
	if err != nil {
		s.t.Fatal(err)
	}
	out, err := pgx.CollectRows(rows, pgx.RowToStructByPos[storedMessage])
	if err != nil {
		s.t.Fatal(err)
	}
	return out
}

// waitStored polls until n messages are stored (reply capture finishes
// after the response ends) or fails.
func (s *server) waitStored(n int) []storedMessage {
	s.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		got := s.stored()
		if len(got) >= n || time.Now().After(deadline) {
			return got
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// query runs one scalar query against the server's database.
func (s *server) scalar(sql string, args ...any) int64 {
	s.t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, s.DBURL)
	if err != nil {
		s.t.Fatal(err)
	}
	defer conn.Close(ctx)
	var n int64
	if err := conn.QueryRow(ctx, sql, args...).Scan(&n); err != nil {
		s.t.Fatal(err)
	}
	return n
}

func httpClient() *http.Client { return &http.Client{Timeout: 30 * time.Second} }
