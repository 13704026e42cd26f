package lab

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/perpetuity/perpetuity/app"
)

// unreachableDB makes any command that gets as far as the database fail
// fast instead of finding or starting one: help and usage mistakes must
// stop before it.
const unreachableDB = "postgres://perpetuity@127.0.0.1:1/none?connect_timeout=1"

func runCLI(args ...string) (stdout, stderr string, err error) {
	var out, errOut bytes.Buffer
	err = run(context.Background(), testEnv(map[string]string{"DATABASE_URL": unreachableDB}, &out, &errOut), args)
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
		[]string{"eval", "locomo", "--help"}, []string{"eval", "locomo", "f.json", "-h"},
		[]string{"bench", "scan", "--help"}, []string{"bench", "all", "--mode", "smoke", "-h"},
	)
	for _, args := range cases {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			t.Parallel()
			out, errOut, err := runCLI(args...)
			if err != nil {
				t.Fatalf("error %v (exit %d)\nstderr: %s", err, app.ExitCode(err), errOut)
			}
			if !strings.Contains(out, "Usage: perpetuity-bench") {
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
		"":      {{}, {"nosuch"}, {"serve"}},
		"bench": {{"bench", "nosuch"}, {"bench", "--nope"}, {"bench", "all", "extra"}},
		"eval":  {{"eval"}, {"eval", "mteb", "f.json"}, {"eval", "locomo"}, {"eval", "locomo", "--samples", "x", "f.json"}},
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
				if app.ExitCode(err) != 2 || err == nil {
					t.Fatalf("exit %d (%v), want 2", app.ExitCode(err), err)
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

// TestEvalTakesFlagsAfterTheFile: "eval locomo FILE --json" is "eval
// locomo --json FILE" (issue 16), and after "--" a flag-looking word is a
// positional. The file is not JSON, so both fail on it, past the usage
// check and before any database.
func TestEvalTakesFlagsAfterTheFile(t *testing.T) {
	t.Parallel()
	bad := filepath.Join(t.TempDir(), "bad.json")
	if err := os.WriteFile(bad, []byte("not json"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, _, errBefore := runCLI("eval", "locomo", "--json", "--samples", "1", bad)
	_, _, errAfter := runCLI("eval", "locomo", bad, "--json", "--samples", "1")
	for _, err := range []error{errBefore, errAfter} {
		if err == nil || app.ExitCode(err) == 2 || !strings.Contains(err.Error(), "want a JSON list of LoCoMo samples") {
			t.Fatalf("%v (exit %d), want the file refused past the usage check", err, app.ExitCode(err))
		}
	}
	if errBefore.Error() != errAfter.Error() {
		t.Errorf("flags before: %v\nflags after: %v", errBefore, errAfter)
	}
	if _, _, err := runCLI("eval", "locomo", "--", bad, "--json"); app.ExitCode(err) != 2 {
		t.Errorf("eval locomo -- FILE --json: %v, want a usage error", err)
	}
}

// TestReadmeListsEveryCommand: the README's command list names each of
// this binary's commands as it is run.
func TestReadmeListsEveryCommand(t *testing.T) {
	t.Parallel()
	b, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	for name := range commands() {
		if !strings.Contains(string(b), "go run ./cmd/perpetuity-bench "+name) {
			t.Errorf("README lacks %q", "go run ./cmd/perpetuity-bench "+name)
		}
	}
	for _, gone := range []string{"perpetuity eval", "perpetuity bench"} {
		if strings.Contains(string(b), gone) {
			t.Errorf("README still names %q, which the server binary no longer has", gone)
		}
	}
}
