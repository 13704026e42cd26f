// Package rig starts the real perpetuity binary for tests outside package
// e2e (the reliability suite): it builds the binary once, gives each server
// its own database and fake provider, and reads back what was stored.
package rig

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// Binary builds cmd/perpetuity into dir (once per process) and returns its path.
func Binary(t testing.TB) string {
	t.Helper()
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "perpetuity-rig-")
		if err != nil {
			buildErr = err
			return
		}
		builtPath = filepath.Join(dir, "perpetuity")
		build := exec.Command("go", "build", "-o", builtPath, "./cmd/perpetuity")
		build.Dir = moduleRoot()
		out, err := build.CombinedOutput()
		if err != nil {
			buildErr = fmt.Errorf("build perpetuity: %w\n%s", err, out)
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return builtPath
}

// The binary is a per-process artefact shared by every test of a package;
// building it per test would cost seconds each.
var (
	buildOnce sync.Once
	builtPath string
	buildErr  error
)

func moduleRoot() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..")
}

// Proc is one running perpetuity process.
type Proc struct {
	URL    string // http://127.0.0.1:port
	Cmd    *exec.Cmd
	Log    *LockedBuffer // standard error and standard output, line by line
	exited chan struct{}
}

// Exited is closed when the process has ended.
func (p *Proc) Exited() <-chan struct{} { return p.exited }

// Kill sends SIGKILL and waits for the process to end.
func (p *Proc) Kill() {
	_ = p.Cmd.Process.Kill()
	<-p.exited
	_ = p.Cmd.Wait()
}

// Serve starts `perpetuity serve` with env (which must carry DATABASE_URL
// and the upstream base URLs) and waits until it listens. The process is
// killed when t ends.
func Serve(t testing.TB, env []string) (*Proc, error) {
	t.Helper()
	bin := Binary(t)
	cmd := exec.Command(bin, "serve")
	cmd.Env = append(os.Environ(), "PERPETUITY_ADDR=127.0.0.1:0")
	cmd.Env = append(cmd.Env, env...)
	pr, pw, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	// Stdout too: Echo's own logger (panic recovery) writes there, and a
	// secret printed on either stream is in the server's log.
	cmd.Stdout, cmd.Stderr = pw, pw
	if err := cmd.Start(); err != nil {
		pw.Close()
		return nil, err
	}
	pw.Close()
	p := &Proc{Cmd: cmd, Log: &LockedBuffer{}, exited: make(chan struct{})}
	addr := make(chan string, 1)
	go func() {
		defer close(p.exited) // stderr closed: the process ended
		sc := bufio.NewScanner(pr)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			line := sc.Text()
			p.Log.Write([]byte(line + "\n"))
			var rec struct {
				Msg  string `json:"msg"`
				Addr string `json:"addr"`
			}
			if json.Unmarshal([]byte(line), &rec) == nil && rec.Msg == "perpetuity serving" {
				select {
				case addr <- rec.Addr:
				default:
				}
			}
		}
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-p.exited
		_ = cmd.Wait()
	})
	select {
	case a := <-addr:
		p.URL = "http://" + a
		return p, nil
	case <-p.exited:
		return nil, fmt.Errorf("server exited at start:\n%s", p.Log.String())
	case <-time.After(60 * time.Second):
		return nil, fmt.Errorf("server did not start:\n%s", p.Log.String())
	}
}

// CLI runs a perpetuity subcommand and returns its standard output.
func CLI(t testing.TB, env []string, args ...string) (string, error) {
	t.Helper()
	cmd := exec.Command(Binary(t), args...)
	cmd.Env = append(os.Environ(), env...)
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return stdout.String() + stderr.String(), err
	}
	return stdout.String(), nil
}

// Tenant is a tenant made with `perpetuity tenant create --json`.
type Tenant struct {
	TenantID int64  `json:"tenant_id"`
	Key      string `json:"key"`
}

// CreateTenant makes a tenant and its first key, pinned to the first
// memory user unless flags say otherwise (e.g. "--scope", "tenant" for a
// test that names several users with one key).
func CreateTenant(t testing.TB, env []string, name string, flags ...string) Tenant {
	t.Helper()
	out, err := CLI(t, env, append(append([]string{"tenant", "create", "--json"}, flags...), name)...)
	if err != nil {
		t.Fatalf("tenant create: %v\n%s", err, out)
	}
	var nt Tenant
	if err := json.Unmarshal([]byte(out), &nt); err != nil {
		t.Fatalf("tenant create output %q: %v", out, err)
	}
	return nt
}

// Message is a captured message as the database holds it.
type Message struct {
	Role        string
	Text        string
	Interrupted bool
}

// Stored reads every captured message of a tenant, in capture order. It
// connects as the test's (owner) role, outside the application's role.
func Stored(ctx context.Context, dbURL string, tenantID int64) ([]Message, error) {
	conn, err := pgx.Connect(ctx, dbURL)
	if err != nil {
		return nil, err
	}
	defer conn.Close(ctx)
	rows, err := conn.Query(ctx, `SELECT m.role, string_agg(i.body, '' ORDER BY i.part), m.interrupted
		FROM messages m JOIN items i ON i.tenant_id = m.tenant_id AND i.message_id = m.id
		WHERE m.tenant_id = $1 GROUP BY m.tenant_id, m.id ORDER BY m.id`, tenantID)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, pgx.RowToStructByPos[Message])
}

// Scalar runs one integer-valued query.
func Scalar(ctx context.Context, dbURL, sql string, args ...any) (int64, error) {
	conn, err := pgx.Connect(ctx, dbURL)
	if err != nil {
		return 0, err
	}
	defer conn.Close(ctx)
	var n int64
	err = conn.QueryRow(ctx, sql, args...).Scan(&n)
	return n, err
}

// LockedBuffer is a strings.Builder safe for one writer and many readers.
type LockedBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *LockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *LockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}
