package app

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/perpetuity/perpetuity/memory/store"
	"github.com/perpetuity/perpetuity/migrations/dbtest"
)

// cli runs an import or export command line against dbURL and returns its
// stdout.
func cli(t *testing.T, ctx context.Context, dbURL string, args ...string) (string, error) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	e := env{
		getenv: func(k string) string {
			if k == "DATABASE_URL" {
				return dbURL
			}
			return ""
		},
		stdin: strings.NewReader(""), stdout: &stdout, stderr: &stderr,
	}
	cmds := map[string]func(context.Context, env, []string) error{"import": runImport, "export": runExport}
	err := cmds[args[0]](ctx, e, args[1:])
	if err != nil {
		err = errors.Join(err, errors.New("stderr: "+stderr.String()))
	}
	return stdout.String(), err
}

func mustCLI(t *testing.T, ctx context.Context, dbURL string, args ...string) string {
	t.Helper()
	out, err := cli(t, ctx, dbURL, args...)
	if err != nil {
		t.Fatalf("perpetuity %s: %v", strings.Join(args, " "), err)
	}
	return out
}

func newTenant(t *testing.T, ctx context.Context, dbURL, name, user string) string {
	t.Helper()
	db, err := store.Open(ctx, dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	nt, err := db.CreateTenant(ctx, name, user)
	if err != nil {
		t.Fatal(err)
	}
	return strconv.FormatInt(nt.TenantID, 10)
}

const cliHistory = `{"conversation": "trip", "title": "Trip", "turns": [` +
	`{"role": "user", "speaker": "Caroline", "text": "We land at 9:40 on the 14th.", "at": "2023-05-08T13:56:00+02:00"},` +
	`{"role": "assistant", "text": "Noted: 14th, 09:40.", "at": "2023-05-08T11:57:00.5Z"}]}` + "\n" +
	`{"conversation": "work", "turns": [{"role": "user", "text": "The deploy key rotates monthly.", "at": "2022-01-01T00:00:00Z"}]}` + "\n"

// TestExportImportRoundTrip is the whole user story on the command line:
// import, export to a file, import that into another tenant under another
// name, export to stdout: the same bytes.
func TestExportImportRoundTrip(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	dbURL := dbtest.New(t)
	dir := t.TempDir()
	in := filepath.Join(dir, "history.jsonl")
	if err := os.WriteFile(in, []byte(cliHistory), 0o600); err != nil {
		t.Fatal(err)
	}
	a := newTenant(t, ctx, dbURL, "acme", "owner")
	mustCLI(t, ctx, dbURL, "import", "--tenant", a, "--user", "caroline", in)

	file := filepath.Join(dir, "caroline.jsonl")
	msg := mustCLI(t, ctx, dbURL, "export", "--tenant", a, "--user", "caroline", "--out", file)
	if !strings.Contains(msg, "exported 2 conversations, 3 turns") {
		t.Errorf("export said %q", msg)
	}
	first, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(file); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("export file mode %v, %v: want 0600 (it is someone's memory)", fi.Mode(), err)
	}
	if left, _ := filepath.Glob(filepath.Join(dir, ".*partial")); len(left) != 0 {
		t.Errorf("temporary files left: %v", left)
	}
	for _, s := range []string{`"conversation":"trip"`, `"at":"2023-05-08T11:56:00Z"`, `"at":"2023-05-08T11:57:00.5Z"`, `"speaker":"Caroline"`} {
		if !bytes.Contains(first, []byte(s)) {
			t.Errorf("export lacks %s:\n%s", s, first)
		}
	}

	b := newTenant(t, ctx, dbURL, "elsewhere", "owner")
	mustCLI(t, ctx, dbURL, "import", "--tenant", b, "--user", "restored", file)
	second := mustCLI(t, ctx, dbURL, "export", "--tenant", b, "--user", "restored")
	if second != string(first) {
		t.Errorf("round trip changed the export:\nfirst:\n%s\nsecond:\n%s", first, second)
	}
}

// TestImportChatGPTThenExport imports the ChatGPT fixture through the CLI
// and exports it: the result is the importer's conversion of it, byte for
// byte, so nothing was lost or reordered on the way through the store.
func TestImportChatGPTThenExport(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	dbURL := dbtest.New(t)
	a := newTenant(t, ctx, dbURL, "acme", "owner")
	const dir = "../memory/importer/testdata/chatgpt/"
	out := mustCLI(t, ctx, dbURL, "import", "--tenant", a, "--user", "me", "--format", "chatgpt", dir+"conversations.json")
	if !strings.Contains(out, "imported 3 conversations") || !strings.Contains(out, "8 turns stored") {
		t.Errorf("import said %q", out)
	}
	got := mustCLI(t, ctx, dbURL, "export", "--tenant", a, "--user", "me")
	want, err := os.ReadFile(dir + "conversations.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	if got != string(want) {
		t.Errorf("export after ChatGPT import:\n%s\nwant:\n%s", got, want)
	}
	// A second import of the same export stores nothing new.
	again := mustCLI(t, ctx, dbURL, "import", "--tenant", a, "--user", "me", "--format", "chatgpt", dir+"conversations.json")
	if !strings.Contains(again, "0 turns stored, 8 already present") {
		t.Errorf("re-import said %q", again)
	}
}

func TestExportCommandErrors(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	dbURL := dbtest.New(t)
	a := newTenant(t, ctx, dbURL, "acme", "owner")
	cases := []struct {
		name  string
		args  []string
		usage bool
		want  string
	}{
		{"no tenant", []string{"export", "--user", "x"}, true, "usage: perpetuity export"},
		{"no user", []string{"export", "--tenant", a}, true, "usage: perpetuity export"},
		{"stray argument", []string{"export", "--tenant", a, "--user", "owner", "file"}, true, "usage"},
		{"bad flag", []string{"export", "--tenant", "x"}, true, "invalid value"},
		{"unknown user", []string{"export", "--tenant", a, "--user", "nobody"}, false, `tenant ` + a + ` has no memory user "nobody"`},
		{"unknown tenant", []string{"export", "--tenant", "999999", "--user", "owner"}, false, `tenant 999999 has no memory user "owner"`},
		{"unwritable out", []string{"export", "--tenant", a, "--user", "owner", "--out", "/nonexistent-dir/x.jsonl"}, false, "no such file"},
		{"unknown import format", []string{"import", "--tenant", a, "--user", "u", "--format", "claude", "x"}, true, `--format "claude" is not supported`},
		{"bad chatgpt file", []string{"import", "--tenant", a, "--user", "u", "--format", "chatgpt", "../memory/importer/testdata/chatgpt/conversations.jsonl"}, false, "want a JSON array of conversations (nothing was imported)"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			// A deadline of its own: a parallel subtest may wait long for a
			// slot after the parent's context was made.
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			_, err := cli(t, ctx, dbURL, tc.args...)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want it to contain %q", err, tc.want)
			}
			var ue UsageError
			if errors.As(err, &ue) != tc.usage {
				t.Errorf("usage error = %v, want %v (exit status %d)", !tc.usage, tc.usage, ExitCode(err))
			}
		})
	}
}
