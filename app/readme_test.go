package app

import (
	"os"
	"strings"
	"testing"
)

// TestReadmeListsEveryVariable keeps the README's configuration table and
// the code's list of variables in step.
func TestReadmeListsEveryVariable(t *testing.T) {
	t.Parallel()
	b, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	readme := string(b)
	for _, v := range envVars {
		if !strings.Contains(readme, "| `"+v.name+"` |") {
			t.Errorf("README's configuration table lacks %s", v.name)
		}
	}
	for _, cmd := range []string{"make run", "make test"} {
		if !strings.Contains(readme, cmd) {
			t.Errorf("README lacks %q", cmd)
		}
	}
	for name := range commands() {
		if !strings.Contains(readme, "perpetuity "+name) {
			t.Errorf("README's command list lacks %q", name)
		}
	}
}
