package main

import (
	"errors"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

const module = "github.com/perpetuity/perpetuity"

// goList runs the go command's list in the module root and returns its
// output's lines. go test puts its own GOROOT/bin first on the test's
// PATH, so "go" is the go command running the test.
func goList(t *testing.T, args ...string) []string {
	t.Helper()
	gobin, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("the go command: %v", err)
	}
	gomod, err := exec.Command(gobin, "env", "GOMOD").Output()
	if err != nil {
		t.Fatalf("go env GOMOD: %v", err)
	}
	cmd := exec.Command(gobin, append([]string{"list"}, args...)...)
	cmd.Dir = filepath.Dir(strings.TrimSpace(string(gomod)))
	out, err := cmd.Output()
	if err != nil {
		var stderr string
		if ee := (*exec.ExitError)(nil); errors.As(err, &ee) {
			stderr = string(ee.Stderr)
		}
		t.Fatalf("go list %s in %s: %v\n%s", strings.Join(args, " "), cmd.Dir, err, stderr)
	}
	return strings.Split(strings.TrimSpace(string(out)), "\n")
}

// TestServerLinksNoBenchmark: the server binary links no benchmark, eval
// corpus or fake provider (issue 19); those live in cmd/perpetuity-bench.
// It asks the go command itself, so an import added anywhere below app is
// caught, not only in app.
func TestServerLinksNoBenchmark(t *testing.T) {
	t.Parallel()
	deps := goList(t, "-deps", "./cmd/perpetuity")
	for _, d := range deps {
		if !strings.HasPrefix(d, module+"/") {
			continue
		}
		for _, banned := range []string{"/e2e", "fakeprovider", "/synth", "importer/locomo"} {
			if strings.Contains(d, banned) {
				t.Errorf("the server binary links %s (%q): benchmarks, eval corpora and fake providers belong to cmd/perpetuity-bench", d, banned)
			}
		}
	}
	// The list is the server's, not an empty or wrong one.
	for _, want := range []string{module + "/cmd/perpetuity", module + "/app", module + "/proxy", module + "/memory", module + "/memory/store"} {
		if !slices.Contains(deps, want) {
			t.Errorf("go list -deps ./cmd/perpetuity lacks %s:\n%s", want, strings.Join(deps, "\n"))
		}
	}
}

// TestFakeProviderOnlyInE2E: outside tests, only e2e packages (the
// harnesses, the bench suite and e2e/lab behind cmd/perpetuity-bench)
// import the fake provider, so no product package can start to.
func TestFakeProviderOnlyInE2E(t *testing.T) {
	t.Parallel()
	const fake = module + "/e2e/fakeprovider"
	importers := 0
	for _, line := range goList(t, "-f", "{{.ImportPath}}{{range .Imports}} {{.}}{{end}}", "./...") {
		f := strings.Fields(line)
		if len(f) == 0 || !slices.Contains(f[1:], fake) {
			continue
		}
		importers++
		if !strings.HasPrefix(f[0], module+"/e2e/") {
			t.Errorf("%s imports %s outside its tests", f[0], fake)
		}
	}
	if importers == 0 {
		t.Errorf("no package imports %s: the check looks at the wrong list", fake)
	}
}
