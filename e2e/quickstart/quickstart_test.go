package quickstart

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/perpetuity/perpetuity/e2e/fakeprovider"
	"github.com/perpetuity/perpetuity/e2e/rig"
	"github.com/perpetuity/perpetuity/migrations/dbtest"
)

// answer is what the fake provider replies to every question.
const answer = "You land at 9:40 on the 14th."

// question is what every chat quick start asks.
const question = "When do we land?"

// server is the real binary on its own database, with the fake provider as
// both upstreams.
type server struct {
	url, dbURL string
	env        []string // what the CLI needs to reach the same database
	fake       *fakeprovider.Provider
}

func startServer(t *testing.T) *server {
	t.Helper()
	s := &server{dbURL: dbtest.New(t), fake: fakeprovider.New()}
	s.fake.SetDefault(func(fakeprovider.Recorded) fakeprovider.Reply { return fakeprovider.Reply{Text: answer} })
	up := httptest.NewServer(s.fake)
	t.Cleanup(up.Close)
	s.env = []string{"DATABASE_URL=" + s.dbURL}
	p, err := rig.Serve(t, append(s.env, "PERPETUITY_OPENAI_BASE_URL="+up.URL+"/v1", "PERPETUITY_ANTHROPIC_BASE_URL="+up.URL))
	if err != nil {
		t.Fatal(err)
	}
	s.url = p.URL
	return s
}

// clientEnv is the quick start's process environment: this process's
// without any setting a quick start reads, plus vars.
func clientEnv(vars ...string) []string {
	var env []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(k, "OPENAI_") || strings.HasPrefix(k, "ANTHROPIC_") || strings.HasPrefix(k, "PERPETUITY") {
			continue
		}
		env = append(env, kv)
	}
	return append(env, vars...)
}

// quickStart is one README block and how it is run and checked.
type quickStart struct {
	name string
	kind string // node, go, sh
	// dialect is the upstream the chat quick starts reach (checked on
	// the provider's side); empty for the imports.
	dialect string
	// env says how the client is pointed at the proxy: "base" (the code
	// names the base URL from PERPETUITY and PERPETUITY_KEY) or "env" (the
	// SDK reads OPENAI_BASE_URL / ANTHROPIC_BASE_URL).
	env string
	// files are put in the working directory first (name → source path).
	files map[string]string
	// check inspects stdout and what was stored.
	check func(t *testing.T, s *server, tn rig.Tenant, stdout string)
}

func quickStarts() []quickStart {
	chat := func(t *testing.T, s *server, tn rig.Tenant, stdout string) {
		t.Helper()
		if strings.TrimSpace(stdout) != answer {
			t.Errorf("printed %q, want the provider's reply %q", stdout, answer)
		}
		waitStored(t, s, tn, []rig.Message{{Role: "user", Text: question}, {Role: "assistant", Text: answer}})
	}
	return []quickStart{
		{name: "node-openai", kind: "node", dialect: fakeprovider.DialectOpenAIChat, env: "base", check: chat},
		{name: "node-anthropic", kind: "node", dialect: fakeprovider.DialectAnthropic, env: "base", check: chat},
		{name: "node-openai-env", kind: "node", dialect: fakeprovider.DialectOpenAIChat, env: "env", check: chat},
		{name: "node-anthropic-env", kind: "node", dialect: fakeprovider.DialectAnthropic, env: "env", check: chat},
		{name: "go-openai", kind: "go", dialect: fakeprovider.DialectOpenAIChat, env: "base", check: chat},
		{name: "go-anthropic", kind: "go", dialect: fakeprovider.DialectAnthropic, env: "base", check: chat},
		{name: "curl-openai", kind: "sh", dialect: fakeprovider.DialectOpenAIChat, env: "base",
			check: func(t *testing.T, s *server, tn rig.Tenant, stdout string) {
				var r struct {
					Choices []struct {
						Message struct{ Content string }
					}
				}
				if err := json.Unmarshal([]byte(stdout), &r); err != nil || len(r.Choices) != 1 {
					t.Fatalf("not a chat completion (%v):\n%s", err, stdout)
				}
				chat(t, s, tn, r.Choices[0].Message.Content)
			}},
		{name: "curl-anthropic-stream", kind: "sh", dialect: fakeprovider.DialectAnthropic, env: "base",
			check: func(t *testing.T, s *server, tn rig.Tenant, stdout string) {
				text, stopped := anthropicStream(t, stdout)
				if !stopped {
					t.Errorf("no message_stop event:\n%s", stdout)
				}
				chat(t, s, tn, text)
			}},
		{name: "curl-import", kind: "sh", env: "base", files: map[string]string{"history.jsonl": "e2e/quickstart/testdata/history.jsonl"},
			check: func(t *testing.T, s *server, tn rig.Tenant, stdout string) {
				if strings.TrimSpace(stdout) != `{"conversations":2,"turns":5,"duplicates":0}` {
					t.Errorf("import answered %s", stdout)
				}
				if got := waitCount(t, s, tn, 5); got != 5 {
					t.Errorf("%d messages stored, want 5", got)
				}
			}},
		{name: "curl-import-chatgpt", kind: "sh", env: "base", files: map[string]string{"conversations.json": "memory/importer/testdata/chatgpt/conversations.json"},
			check: func(t *testing.T, s *server, tn rig.Tenant, stdout string) {
				if strings.TrimSpace(stdout) != `{"conversations":3,"turns":8,"duplicates":0,"skipped":1}` {
					t.Errorf("import answered %s", stdout)
				}
				// What went in over HTTP comes out of `perpetuity export`
				// as the converter's JSONL, byte for byte.
				out, err := rig.CLI(t, s.env, "export", "--tenant", strconv.FormatInt(tn.TenantID, 10), "--user", "default")
				if err != nil {
					t.Fatalf("export: %v\n%s", err, out)
				}
				want, err := os.ReadFile(filepath.Join(moduleRoot(), "memory/importer/testdata/chatgpt/conversations.jsonl"))
				if err != nil {
					t.Fatal(err)
				}
				if out != string(want) {
					t.Errorf("export after the HTTP import:\n%s\nwant:\n%s", out, want)
				}
			}},
	}
}

// TestQuickStarts runs every marked README block against the real binary:
// each gets a tenant of its own and provider keys of its own, so what it
// stored and what the provider received are its alone.
func TestQuickStarts(t *testing.T) {
	blocks, err := readmeBlocks()
	if err != nil {
		t.Fatal(err)
	}
	qs := quickStarts()
	var known, marked []string
	for _, q := range qs {
		known = append(known, q.name)
	}
	for name := range blocks {
		marked = append(marked, name)
	}
	sort.Strings(known)
	sort.Strings(marked)
	if !slices.Equal(known, marked) {
		t.Fatalf("README marks quick starts %v; this test runs %v: mark every tested block, test every marked one", marked, known)
	}
	modules := nodeModules(t)
	s := startServer(t)
	for _, q := range qs {
		t.Run(q.name, func(t *testing.T) {
			t.Parallel()
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
			defer cancel()
			tn := rig.CreateTenant(t, s.env, "quickstart "+q.name)
			openaiKey, anthropicKey := "sk-qs-"+q.name, "sk-ant-qs-"+q.name
			vars := []string{"OPENAI_API_KEY=" + openaiKey, "ANTHROPIC_API_KEY=" + anthropicKey}
			if q.env == "env" {
				vars = append(vars, "OPENAI_BASE_URL="+s.url+"/k/"+tn.Key+"/v1", "ANTHROPIC_BASE_URL="+s.url+"/k/"+tn.Key)
			} else {
				vars = append(vars, "PERPETUITY="+s.url, "PERPETUITY_KEY="+tn.Key)
			}
			env := clientEnv(vars...)
			var out string
			var err error
			switch q.kind {
			case "node":
				out, err = runNode(ctx, t, modules, blocks[q.name], env)
			case "go":
				out, err = runGo(ctx, t, blocks[q.name], env)
			case "sh":
				dir := t.TempDir()
				for name, src := range q.files {
					b, err := os.ReadFile(filepath.Join(moduleRoot(), src))
					if err != nil {
						t.Fatal(err)
					}
					if err := os.WriteFile(filepath.Join(dir, name), b, 0o600); err != nil {
						t.Fatal(err)
					}
				}
				cmd := exec.CommandContext(ctx, "sh", "-e", "-c", blocks[q.name])
				cmd.Dir, cmd.Env = dir, env
				out, err = output(cmd)
			}
			if err != nil {
				t.Fatalf("%s quick start failed: %v\noutput:\n%s", q.kind, err, out)
			}
			q.check(t, s, tn, out)
			if q.dialect != "" {
				checkProvider(t, s, q.dialect, openaiKey, anthropicKey)
			}
		})
	}
}

// checkProvider: exactly one request reached the provider with this quick
// start's key, on the dialect's route, carrying the question.
func checkProvider(t *testing.T, s *server, dialect, openaiKey, anthropicKey string) {
	t.Helper()
	var mine []fakeprovider.Recorded
	for _, r := range s.fake.Requests() {
		if r.Header.Get("Authorization") == "Bearer "+openaiKey || r.Header.Get("X-Api-Key") == anthropicKey {
			mine = append(mine, r)
		}
	}
	if len(mine) != 1 {
		t.Fatalf("%d provider requests with this quick start's key, want 1", len(mine))
	}
	if mine[0].Dialect != dialect || !strings.Contains(string(mine[0].Body), question) {
		t.Errorf("provider got a %s request, want %s with the question:\n%s", mine[0].Dialect, dialect, mine[0].Body)
	}
}

// waitStored waits for the reply's capture (it runs after the reply) and
// compares the tenant's stored messages.
func waitStored(t *testing.T, s *server, tn rig.Tenant, want []rig.Message) {
	t.Helper()
	var got []rig.Message
	deadline := time.Now().Add(10 * time.Second)
	for {
		var err error
		if got, err = rig.Stored(context.Background(), s.dbURL, tn.TenantID); err != nil {
			t.Fatal(err)
		}
		if len(got) >= len(want) || time.Now().After(deadline) {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("stored %+v, want %+v", got, want)
	}
}

func waitCount(t *testing.T, s *server, tn rig.Tenant, n int) int {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		got, err := rig.Stored(context.Background(), s.dbURL, tn.TenantID)
		if err != nil {
			t.Fatal(err)
		}
		if len(got) >= n || time.Now().After(deadline) {
			return len(got)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// anthropicStream joins the text deltas of an Anthropic event stream and
// reports whether it ended with message_stop.
func anthropicStream(t *testing.T, body string) (string, bool) {
	t.Helper()
	var text strings.Builder
	stopped := false
	sc := bufio.NewScanner(strings.NewReader(body))
	for sc.Scan() {
		data, ok := strings.CutPrefix(sc.Text(), "data: ")
		if !ok {
			continue
		}
		var ev struct {
			Type  string
			Delta struct{ Type, Text string }
		}
		if err := json.Unmarshal([]byte(data), &ev); err != nil {
			t.Fatalf("event %q: %v", data, err)
		}
		if ev.Type == "content_block_delta" && ev.Delta.Type == "text_delta" {
			text.WriteString(ev.Delta.Text)
		}
		stopped = stopped || ev.Type == "message_stop"
	}
	return text.String(), stopped
}

// runGo builds and runs a Go quick start as its own main package, in a
// module that requires what this one does (the SDKs at the versions the
// e2e tests use), from the module cache only.
func runGo(ctx context.Context, t *testing.T, code string, env []string) (string, error) {
	t.Helper()
	dir := t.TempDir()
	for _, f := range []string{"go.mod", "go.sum"} {
		b, err := os.ReadFile(filepath.Join(moduleRoot(), f))
		if err != nil {
			t.Fatal(err)
		}
		if f == "go.mod" {
			b = []byte(strings.Replace(string(b), "module github.com/perpetuity/perpetuity", "module quickstart", 1))
		}
		if err := os.WriteFile(filepath.Join(dir, f), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "main.go"), []byte(code), 0o644); err != nil {
		t.Fatal(err)
	}
	build := exec.CommandContext(ctx, "go", "build", "-o", "quickstart", ".")
	build.Dir = dir
	build.Env = append(os.Environ(), "GOFLAGS=-mod=mod", "GOPROXY=off", "GOWORK=off")
	if out, err := build.CombinedOutput(); err != nil {
		return string(out), fmt.Errorf("go build: %w", err)
	}
	run := exec.CommandContext(ctx, filepath.Join(dir, "quickstart"))
	run.Env = env
	return output(run)
}
