package app

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/perpetuity/perpetuity/memory/importer"
)

// unreachableDB makes any command that gets as far as the database fail
// fast instead of finding or starting one: help and usage mistakes must
// stop before it.
var unreachableDB = map[string]string{"DATABASE_URL": "postgres://perpetuity@127.0.0.1:1/none?connect_timeout=1"}

func testEnv(vars map[string]string, stdout, stderr *bytes.Buffer) env {
	return env{getenv: func(k string) string { return vars[k] }, stdin: strings.NewReader(""), stdout: stdout, stderr: stderr}
}

func runCLI(args ...string) (stdout, stderr string, err error) {
	var out, errOut bytes.Buffer
	err = run(context.Background(), testEnv(unreachableDB, &out, &errOut), args)
	return out.String(), errOut.String(), err
}

// TestEveryCommandHelp: every command and subcommand answers -h/--help
// with its usage on stdout and exit status 0, doing nothing else.
func TestEveryCommandHelp(t *testing.T) {
	t.Parallel()
	var cases [][]string
	names := make([]string, 0, len(commands()))
	for name := range commands() {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		cases = append(cases, []string{name, "--help"}, []string{name, "-h"}, []string{"help", name})
	}
	cases = append(cases,
		[]string{"--help"}, []string{"-h"}, []string{"help"},
		[]string{"tenant", "create", "--help"}, []string{"tenant", "limits", "--help"},
		[]string{"admin", "create", "--help"}, []string{"admin", "create", "someone@example.com", "-h"},
		[]string{"admin", "reset-link", "--help"}, []string{"admin", "unlock", "-h"},
		[]string{"migrate", "up", "--help"}, []string{"migrate", "down", "2", "-h"},
		[]string{"import", "--tenant", "1", "file.jsonl", "--help"}, []string{"export", "-h"},
		[]string{"dict", "upload", "--help"}, []string{"dict", "status", "--help"}, []string{"dict", "derive", "2", "--help"},
		[]string{"dict", "flip", "-h"}, []string{"dict", "retire", "-help"},
	)
	for _, args := range cases {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			t.Parallel()
			out, errOut, err := runCLI(args...)
			if err != nil || ExitCode(err) == 2 {
				t.Fatalf("error %v (exit %d)\nstderr: %s", err, ExitCode(err), errOut)
			}
			if !strings.Contains(out, "Usage: perpetuity") {
				t.Fatalf("no usage on stdout:\n%s", out)
			}
			if errOut != "" {
				t.Fatalf("help wrote to stderr: %s", errOut)
			}
		})
	}
}

// TestWrongUsageExits2: a usage mistake of every command is exit status 2
// with the usage on stderr (the error, which main prints there, or the
// flag set's usage), nothing on stdout, and no database looked for.
func TestWrongUsageExits2(t *testing.T) {
	t.Parallel()
	cases := map[string][][]string{
		"":          {{}, {"nosuch"}},
		"serve":     {{"serve", "extra"}, {"serve", "--port", "1"}},
		"dev":       {{"dev", "extra"}, {"dev", "--nope"}},
		"devdb":     {{"devdb", "extra"}},
		"migrate":   {{"migrate"}, {"migrate", "sideways"}, {"migrate", "down", "x"}, {"migrate", "up", "2"}},
		"tenant":    {{"tenant"}, {"tenant", "delete"}, {"tenant", "create"}, {"tenant", "create", "--nope", "x"}, {"tenant", "limits"}},
		"admin":     {{"admin"}, {"admin", "create"}, {"admin", "create", "a@example.com", "b@example.com"}, {"admin", "reset-link"}, {"admin", "unlock", "a@example.com", "b@example.com"}, {"admin", "nosuch", "a@example.com"}},
		"import":    {{"import"}, {"import", "--tenant", "1"}, {"import", "--tenant", "1", "--format", "csv", "f"}},
		"export":    {{"export"}, {"export", "--tenant", "1"}, {"export", "--tenant", "1", "--user", "u", "--json"}},
		"dict":      {{"dict"}, {"dict", "nosuch"}, {"dict", "derive"}, {"dict", "flip", "x"}, {"dict", "status", "extra"}},
		"integrity": {{"integrity", "extra"}, {"integrity", "--tenant", "-1"}},
		"purge":     {{"purge"}, {"purge", "--tenant", "1"}, {"purge", "--user", "u"}},
		"redact":    {{"redact"}, {"redact", "--tenant", "1"}, {"redact", "5"}, {"redact", "--tenant", "1", "x"}, {"redact", "--tenant", "1", "5", "6"}},
	}
	for name := range commands() {
		if len(cases[name]) == 0 {
			t.Errorf("no wrong-usage case for command %q", name)
		}
	}
	for _, list := range cases {
		for _, args := range list {
			t.Run(strings.Join(args, " "), func(t *testing.T) {
				t.Parallel()
				out, errOut, err := runCLI(args...)
				if ExitCode(err) != 2 || err == nil {
					t.Fatalf("exit %d (%v), want 2", ExitCode(err), err)
				}
				if !strings.Contains(strings.ToLower(errOut+err.Error()), "usage") {
					t.Fatalf("no usage on stderr: %q, error %q", errOut, err)
				}
				if out != "" {
					t.Fatalf("usage mistake wrote to stdout: %q", out)
				}
			})
		}
	}
}

// TestMovedCommands: eval and bench left the server binary; typing them,
// or asking for their help, is a usage error that says how to run them
// now, with nothing on stdout and no database looked for, and the
// server's usage says where they went.
func TestMovedCommands(t *testing.T) {
	t.Parallel()
	cases := []struct {
		args []string
		want string // in the error, after "perpetuity NAME moved"
	}{
		{[]string{"eval"}, "go run ./cmd/perpetuity-bench eval locomo [flags] FILE"},
		{[]string{"eval", "locomo", "--json", "f.json"}, "go run ./cmd/perpetuity-bench eval locomo"},
		{[]string{"eval", "--help"}, "go run ./cmd/perpetuity-bench eval"},
		{[]string{"help", "eval"}, "go run ./cmd/perpetuity-bench eval"},
		{[]string{"bench"}, "go run ./cmd/perpetuity-bench bench [all|proxy|"},
		{[]string{"bench", "all", "--mode", "smoke"}, "go run ./cmd/perpetuity-bench bench"},
		{[]string{"bench", "-h"}, "go run ./cmd/perpetuity-bench bench"},
	}
	for _, tc := range cases {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			t.Parallel()
			out, _, err := runCLI(tc.args...)
			if ExitCode(err) != 2 || err == nil {
				t.Fatalf("exit %d (%v), want 2", ExitCode(err), err)
			}
			name := strings.Fields(tc.want)[3]
			if msg := err.Error(); !strings.HasPrefix(msg, "perpetuity "+name+" moved") || !strings.Contains(msg, tc.want) {
				t.Errorf("error %q, want it to say perpetuity %s moved and %q", msg, name, tc.want)
			}
			if out != "" {
				t.Errorf("wrote to stdout: %q", out)
			}
		})
	}
	for name := range movedCommands() {
		if _, ok := commands()[name]; ok {
			t.Errorf("%q is both a command and moved", name)
		}
	}
	out, _, err := runCLI("--help")
	if err != nil || !strings.Contains(out, "go run ./cmd/perpetuity-bench bench | eval") {
		t.Errorf("usage does not say where bench and eval went (%v):\n%s", err, out)
	}
}

// TestProgressOnlyOnTerminals: progress lines go to a terminal or a
// non-file writer, never into a file or a pipe.
func TestProgressOnlyOnTerminals(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	if progressOut(&buf) != io.Writer(&buf) {
		t.Error("a buffer lost its progress")
	}
	f, err := os.Create(filepath.Join(t.TempDir(), "log"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if progressOut(f) != io.Discard {
		t.Error("a regular file gets progress lines")
	}
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	if progressOut(w) != io.Discard {
		t.Error("a pipe gets progress lines")
	}
	p := newImportProgress(f)
	p.update(1, importer.Result{Conversations: 1, Turns: 3})
	p.done()
	if fi, _ := f.Stat(); fi.Size() != 0 {
		t.Errorf("import progress wrote %d bytes into a file", fi.Size())
	}
	tty, err := os.OpenFile("/dev/null", os.O_WRONLY, 0) // a character device, as a terminal is
	if err != nil {
		t.Fatal(err)
	}
	defer tty.Close()
	if progressOut(tty) != io.Writer(tty) {
		t.Error("a character device lost its progress")
	}
}

// TestJSONOutputs: the commands a script drives print one JSON object with
// --json.
func TestJSONOutputs(t *testing.T) {
	t.Parallel()
	w := newOpsWorld(t)
	dir := t.TempDir()
	in := filepath.Join(dir, "in.jsonl")
	if err := os.WriteFile(in, []byte(cliHistory), 0o600); err != nil {
		t.Fatal(err)
	}
	tenant := itoa(w.acme.TenantID)
	decode := func(what, out string, err error) map[string]any {
		t.Helper()
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		var m map[string]any
		dec := json.NewDecoder(strings.NewReader(out))
		if err := dec.Decode(&m); err != nil || dec.More() {
			t.Fatalf("%s: not one JSON object (%v):\n%s", what, err, out)
		}
		return m
	}
	want := func(what string, m map[string]any, kv map[string]any) {
		t.Helper()
		for k, v := range kv {
			if m[k] != v {
				t.Errorf("%s: %s = %v, want %v (all: %v)", what, k, m[k], v, m)
			}
		}
	}

	out, _, err := w.run(t, "", runImport, "--tenant", tenant, "--user", "carol", "--json", in)
	want("import", decode("import", out, err), map[string]any{"tenant_id": float64(w.acme.TenantID), "format": "jsonl", "conversations": 2.0, "turns": 3.0, "duplicates": 0.0})

	out, _, err = w.run(t, "", runExport, "--tenant", tenant, "--user", "carol", "--out", filepath.Join(dir, "out.jsonl"), "--json")
	want("export", decode("export", out, err), map[string]any{"user": "carol", "conversations": 2.0, "turns": 3.0, "file": filepath.Join(dir, "out.jsonl")})

	out, _, err = w.run(t, "", runDict, "status", "--json")
	st := decode("dict status", out, err)
	if ts, _ := st["tenants"].([]any); len(ts) != 2 {
		t.Errorf("dict status: tenants %v", st["tenants"])
	} else {
		want("dict status tenant", ts[0].(map[string]any), map[string]any{"tenant_id": float64(w.acme.TenantID), "name": "acme", "serving": 1.0})
	}

	out, _, err = w.run(t, "", runIntegrity, "--json", "--tenant", tenant)
	ig := decode("integrity", out, err)
	want("integrity", ig, map[string]any{"violations": 0.0})
	if ts, _ := ig["tenants"].([]any); len(ts) != 1 || ts[0].(map[string]any)["items"].(float64) < 1 {
		t.Errorf("integrity: tenants %v", ig["tenants"])
	}

	out, _, err = w.run(t, "", runPurge, "--tenant", tenant, "--user", "carol", "--yes", "--json")
	want("purge", decode("purge", out, err), map[string]any{"user": "carol", "messages": 3.0, "conversations": 2.0})
}
