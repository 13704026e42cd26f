// Package badinput is issue 9, item 8: (a) every fuzz target of the module,
// found by scanning the test files, is fuzzed (full form: 20 s each; short
// form: its seed corpus replayed), and a failing run is a crash whose input
// go test leaves under the package's testdata/fuzz; (b) the real binary is
// fed malformed, oversized, deeply nested, wrongly typed, invalid UTF-8 and
// empty bodies on both dialects and the import endpoint: it must stay up,
// answer the right 4xx in the caller's dialect, store nothing, and keep its
// memory bounded while a 100 MB body streams in.
package badinput

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/perpetuity/perpetuity/e2e/reliability/figure"
)

func moduleRoot() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..", "..")
}

// target is one fuzz function and the package (as ./dir) it lives in.
type target struct {
	pkg, name string
}

var fuzzFunc = regexp.MustCompile(`(?m)^func (Fuzz\w+)\(\w+ \*testing\.F\)`)

// fuzzTargets finds every fuzz target in the module's test files, so a new
// one is fuzzed without anyone listing it here.
func fuzzTargets(root string) ([]target, error) {
	var out []target
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			switch d.Name() {
			case ".git", ".data", "testdata", "node_modules", "vendor", "bin":
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(p, "_test.go") {
			return nil
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(root, filepath.Dir(p))
		if err != nil {
			return err
		}
		for _, m := range fuzzFunc.FindAllSubmatch(b, -1) {
			out = append(out, target{pkg: "./" + filepath.ToSlash(rel), name: string(m[1])})
		}
		return nil
	})
	sort.Slice(out, func(i, j int) bool {
		if out[i].pkg != out[j].pkg {
			return out[i].pkg < out[j].pkg
		}
		return out[i].name < out[j].name
	})
	return out, err
}

// fuzzOutcome is what one target's run came to.
type fuzzOutcome struct {
	target
	crashed bool   // the fuzz run failed on an input
	flaked  bool   // Go's fuzz coordinator missed its own deadline, no input (twice)
	broken  bool   // the run failed without a failing input (build, setup, timeout)
	input   string // where go test left the failing input, and its start
	output  string
}

var failingInput = regexp.MustCompile(`testdata/fuzz/Fuzz\w+/[0-9a-f]+`)

// coordinatorDeadline is the toolchain race golang/go#75804 (fixed in Go
// 1.27): under CPU starvation a worker misses the coordinator's stop at the
// end of -fuzztime and the run fails with this and no failing input.
func coordinatorDeadline(out string) bool {
	return strings.Contains(out, "context deadline exceeded") && !strings.Contains(out, "Failing input written to")
}

func classify(o *fuzzOutcome, root string, out []byte, err error) {
	o.output = string(out)
	if err == nil {
		return
	}
	switch {
	case coordinatorDeadline(o.output):
		o.flaked = true
	case strings.Contains(o.output, "--- FAIL: Fuzz") || strings.Contains(o.output, "Failing input written to"):
		o.crashed = true
		if m := failingInput.FindString(o.output); m != "" {
			path := filepath.Join(root, o.pkg, m)
			b, _ := os.ReadFile(path)
			if len(b) > 400 {
				b = b[:400]
			}
			o.input = fmt.Sprintf("%s/%s:\n%s", o.pkg, m, b)
		}
	default:
		o.broken = true
		o.output += "\n(" + err.Error() + ")"
	}
}

// fuzzOne fuzzes one target for fuzzTime; a coordinator-deadline failure
// (no input found) is run again once before it counts as a flake.
func fuzzOne(root string, tg target, fuzzTime time.Duration) fuzzOutcome {
	var o fuzzOutcome
	for try := 0; try < 2; try++ {
		// The budget covers building the instrumented test binary, which
		// for packages that pull in the provider SDKs takes minutes.
		ctx, cancel := context.WithTimeout(context.Background(), fuzzTime+20*time.Minute)
		cmd := goCommand(ctx, root, "test", "-run", "^$", "-fuzz", "^"+tg.name+"$",
			"-fuzztime", fuzzTime.String(), "-parallel", "2", tg.pkg)
		out, err := cmd.CombinedOutput()
		cancel()
		o = fuzzOutcome{target: tg}
		classify(&o, root, out, err)
		if !o.flaked {
			return o
		}
	}
	return o
}

func TestFuzzTargets(t *testing.T) {
	root := moduleRoot()
	targets, err := fuzzTargets(root)
	if err != nil {
		t.Fatal(err)
	}
	if len(targets) < 20 {
		t.Fatalf("found %d fuzz targets; the module had 26 when this test was written", len(targets))
	}
	fuzzTime := 20 * time.Second
	var outcomes []fuzzOutcome
	if figure.Full() {
		// One target at a time, each for fuzzTime of new inputs.
		for _, tg := range targets {
			outcomes = append(outcomes, fuzzOne(root, tg, fuzzTime))
		}
	} else {
		outcomes = replaySeeds(t, root, targets)
	}

	crashes, broken, flaked := 0, 0, 0
	var d strings.Builder
	mode := fmt.Sprintf("each fuzzed for %s (go test -fuzz, one target at a time)", fuzzTime)
	if !figure.Full() {
		mode = "seed corpora replayed (short form; make reliability fuzzes each for 20 s)"
	}
	fmt.Fprintf(&d, "%d fuzz targets found by scanning the module's test files, %s. A crash is a failing run that is not Go 1.26's "+
		"fuzz-coordinator deadline race (golang/go#75804: \"context deadline exceeded\" with no input written, run again once).\n\n"+
		"| package | target | result |\n|---|---|---|\n", len(targets), mode)
	for _, o := range outcomes {
		res := "ok"
		switch {
		case o.crashed:
			crashes++
			res = "CRASH: " + strings.ReplaceAll(o.input, "\n", " ")
			t.Errorf("fuzz target %s %s crashed; input %s\n%s", o.pkg, o.name, o.input, tailOf(o.output, 3000))
		case o.flaked:
			flaked++
			res = "coordinator deadline twice, no input (golang/go#75804)"
			t.Logf("fuzz target %s %s: %s", o.pkg, o.name, res)
		case o.broken:
			broken++
			res = "did not run"
			t.Errorf("fuzz target %s %s did not run:\n%s", o.pkg, o.name, tailOf(o.output, 3000))
		}
		fmt.Fprintf(&d, "| %s | %s | %s |\n", o.pkg, o.name, res)
	}
	figure.Record(t, figure.Figure{
		Item:    8,
		Name:    "Fuzz targets",
		Figure:  fmt.Sprintf("%d crashes in %d fuzz targets (%d did not run, %d hit the toolchain's deadline race twice)", crashes, len(targets), broken, flaked),
		Target:  "0 crashes",
		Pass:    crashes == 0 && broken == 0,
		Details: d.String(),
	})
}

// replaySeeds runs every target's seed corpus in one go test command (one
// build per package), then reads each package's verdict and each target's.
func replaySeeds(t *testing.T, root string, targets []target) []fuzzOutcome {
	names := map[string]bool{}
	pkgs := map[string]bool{}
	for _, tg := range targets {
		names[tg.name] = true
		pkgs[tg.pkg] = true
	}
	var nameList, pkgList []string
	for n := range names {
		nameList = append(nameList, n)
	}
	for p := range pkgs {
		pkgList = append(pkgList, p)
	}
	sort.Strings(nameList)
	sort.Strings(pkgList)
	args := append([]string{"test", "-count=1", "-vet=off", "-v", "-run", "^(" + strings.Join(nameList, "|") + ")$"}, pkgList...)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	out, err := goCommand(ctx, root, args...).CombinedOutput()
	// go test -v prints "--- PASS: FuzzX" or "--- FAIL: FuzzX" per target,
	// each package's lines together, then "ok  <import path>" or
	// "FAIL <import path>": results are keyed by package and name.
	const module = "github.com/perpetuity/perpetuity"
	passed := map[string]int{}
	failed := map[string]int{}
	var pending [][2]string // verdict, name
	sc := bufio.NewScanner(strings.NewReader(string(out)))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		switch {
		case len(f) >= 3 && f[0] == "---" && (f[1] == "PASS:" || f[1] == "FAIL:"):
			pending = append(pending, [2]string{f[1], f[2]})
		case len(f) >= 2 && (f[0] == "ok" || f[0] == "FAIL") && strings.HasPrefix(f[1], module):
			pkg := "." + strings.TrimPrefix(f[1], module)
			for _, pr := range pending {
				if pr[0] == "PASS:" {
					passed[pkg+" "+pr[1]]++
				} else {
					failed[pkg+" "+pr[1]]++
				}
			}
			pending = nil
		}
	}
	var outcomes []fuzzOutcome
	for _, tg := range targets {
		o := fuzzOutcome{target: tg, output: string(out)}
		switch {
		case failed[tg.pkg+" "+tg.name] > 0:
			o.crashed = true
			o.input = "a seed of " + tg.pkg + " (see the run's output)"
		case passed[tg.pkg+" "+tg.name] == 0:
			o.broken = true
		}
		outcomes = append(outcomes, o)
	}
	if err != nil && len(failed) == 0 {
		t.Logf("go test of the fuzz seeds: %v", err)
	}
	return outcomes
}

// goCommand runs the go tool in its own process group, so that a timeout
// ends the compilers and test binaries it started too, not only itself.
func goCommand(ctx context.Context, dir string, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, "go", args...)
	cmd.Dir = dir
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 10 * time.Second
	return cmd
}

func tailOf(s string, n int) string {
	if len(s) > n {
		return "…" + s[len(s)-n:]
	}
	return s
}

// TestClassifyFuzzRun: what counts as a crash, a toolchain flake, or a run
// that never started, from go test's own output.
func TestClassifyFuzzRun(t *testing.T) {
	t.Parallel()
	failed := errors.New("exit status 1")
	cases := []struct {
		name                   string
		out                    string
		err                    error
		crashed, flaked, broke bool
	}{
		{"pass", "PASS\nok  \tx\t21.0s\n", nil, false, false, false},
		{"failing input", "--- FAIL: FuzzX (3.1s)\n    Failing input written to testdata/fuzz/FuzzX/0123abcd\n", failed, true, false, false},
		{"panic on a seed", "--- FAIL: FuzzX (0.0s)\n    --- FAIL: FuzzX/seed#0\npanic: boom\n", failed, true, false, false},
		{"coordinator deadline", "--- FAIL: FuzzX (21.07s)\n    context deadline exceeded\nFAIL\n", failed, false, true, false},
		{"build failure", "# x\n./a.go:1:1: syntax error\nFAIL\tx [build failed]\n", failed, false, false, true},
	}
	for _, c := range cases {
		o := fuzzOutcome{target: target{pkg: "./x", name: "FuzzX"}}
		classify(&o, t.TempDir(), []byte(c.out), c.err)
		if o.crashed != c.crashed || o.flaked != c.flaked || o.broken != c.broke {
			t.Errorf("%s: crashed=%v flaked=%v broken=%v, want %v %v %v", c.name, o.crashed, o.flaked, o.broken, c.crashed, c.flaked, c.broke)
		}
	}
}
