// Package figure records one reliability figure per test. `make reliability`
// points RELIABILITY_DIR at a folder; each test writes its figure there as
// JSON and the report command assembles RELIABILITY.md from them. Without
// RELIABILITY_DIR (the short form inside `make test`) figures only go to the
// test log.
package figure

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Figure is one measured line of RELIABILITY.md.
type Figure struct {
	Item    int    `json:"item"`    // issue 9's numbered line 1..12, or 100+N for issue 15's finding N (114: key scope)
	Name    string `json:"name"`    // short title of the check
	Figure  string `json:"figure"`  // what was measured, with N
	Target  string `json:"target"`  // what it must be
	Pass    bool   `json:"pass"`    // whether the figure meets the target
	Details string `json:"details"` // how it was measured, what it found
	Short   bool   `json:"short"`   // measured in the short form (small N)
}

// Full reports whether the suite runs in its full form (make reliability);
// the short form runs inside make test with small N.
func Full() bool { return os.Getenv("RELIABILITY") == "full" }

// N picks the full or short count.
func N(full, short int) int {
	if Full() {
		return full
	}
	return short
}

// Record logs f and, when RELIABILITY_DIR is set, writes it for the report.
func Record(t testing.TB, f Figure) {
	t.Helper()
	f.Short = !Full()
	t.Logf("reliability item %d, %s: %s (target %s, pass %v)", f.Item, f.Name, f.Figure, f.Target, f.Pass)
	dir := os.Getenv("RELIABILITY_DIR")
	if dir == "" {
		return
	}
	b, err := json.MarshalIndent(f, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	name := fmt.Sprintf("%02d-%s.json", f.Item, slug(f.Name))
	if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
		t.Fatalf("write figure: %v", err)
	}
}

func slug(s string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(s) {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9':
			b.WriteRune(r)
		default:
			b.WriteByte('-')
		}
	}
	return strings.Trim(b.String(), "-")
}
