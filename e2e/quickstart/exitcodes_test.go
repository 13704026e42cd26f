package quickstart

import (
	"errors"
	"os/exec"
	"strings"
	"testing"

	"github.com/perpetuity/perpetuity/e2e/rig"
)

// TestExitCodes runs the built binary: help is exit status 0 with the usage
// on stdout; a usage mistake is 2 with the usage on stderr and nothing on
// stdout. (app's tests cover every command in-process; this is the
// process's view of the same.)
func TestExitCodes(t *testing.T) {
	t.Parallel()
	bin := rig.Binary(t)
	cases := []struct {
		args   []string
		status int
	}{
		{[]string{"--help"}, 0},
		{[]string{"help", "import"}, 0},
		{[]string{"import", "--help"}, 0},
		{[]string{"dict", "derive", "-h"}, 0},
		{[]string{"tenant", "--help"}, 0},
		{[]string{}, 2},
		{[]string{"nosuch"}, 2},
		{[]string{"import"}, 2},
		{[]string{"export", "--tenant", "x"}, 2},
		{[]string{"serve", "extra"}, 2},
		{[]string{"eval", "locomo", "f.json"}, 2}, // moved to cmd/perpetuity-bench: the usage says so
		{[]string{"bench", "all"}, 2},
	}
	for _, c := range cases {
		t.Run(strings.Join(c.args, " "), func(t *testing.T) {
			t.Parallel()
			cmd := exec.Command(bin, c.args...)
			cmd.Env = clientEnv("DATABASE_URL=postgres://perpetuity@127.0.0.1:1/none?connect_timeout=1")
			var stdout, stderr strings.Builder
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			err := cmd.Run()
			status := 0
			var ee *exec.ExitError
			if errors.As(err, &ee) {
				status = ee.ExitCode()
			} else if err != nil {
				t.Fatal(err)
			}
			if status != c.status {
				t.Fatalf("exit status %d, want %d\nstdout: %s\nstderr: %s", status, c.status, stdout.String(), stderr.String())
			}
			usageOn, quiet := stdout.String(), stderr.String()
			if c.status != 0 {
				usageOn, quiet = quiet, usageOn
			}
			if !strings.Contains(strings.ToLower(usageOn), "usage") || quiet != "" {
				t.Fatalf("usage not where it belongs\nstdout: %s\nstderr: %s", stdout.String(), stderr.String())
			}
		})
	}
}
