package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// pathShape is a backticked repository path in ARCHITECTURE.md: a folder of
// the tree or a file in it (`memory/store/capture.go`, `proxy/toolloop`).
var pathShape = regexp.MustCompile("`((?:cmd|app|proxy|memory|web|templates|policies|migrations|e2e)(?:/[a-z0-9_.*-]+)*)`")

// TestArchitectureNamesRealPaths: the map a newcomer reads first must not
// name a file or package that moved; a rename that forgets it fails here.
func TestArchitectureNamesRealPaths(t *testing.T) {
	t.Parallel()
	root := filepath.Join("..", "..")
	doc, err := os.ReadFile(filepath.Join(root, "ARCHITECTURE.md"))
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, m := range pathShape.FindAllStringSubmatch(string(doc), -1) {
		p := m[1]
		if seen[p] {
			continue
		}
		seen[p] = true
		if strings.Contains(p, "*") {
			matches, err := filepath.Glob(filepath.Join(root, p))
			if err != nil || len(matches) == 0 {
				t.Errorf("ARCHITECTURE.md names %s, which matches nothing", p)
			}
			continue
		}
		if _, err := os.Stat(filepath.Join(root, p)); err != nil {
			t.Errorf("ARCHITECTURE.md names %s: %v", p, err)
		}
	}
	if len(seen) < 30 {
		t.Fatalf("found only %d paths in ARCHITECTURE.md; the pattern no longer reads it", len(seen))
	}
}
