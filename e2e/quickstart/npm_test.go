package quickstart

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

// The official Node SDKs, pinned: the quick starts are tested against
// these exact releases. Raising a version re-installs once.
const (
	openaiVersion    = "7.59.0"
	anthropicVersion = "1.14.0"
)

// nodeModules installs the SDKs with npm into a folder of the user cache
// directory named by their versions (once; later runs reuse it) and returns
// its node_modules. Node and npm are required: without them the test fails
// saying so, since a skipped quick-start test would pass untested docs.
func nodeModules(t *testing.T) string {
	t.Helper()
	for _, tool := range []string{"node", "npm"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Fatalf("%s not found: the README's Node quick starts are tested with Node.js (20 or later) and npm; install them (Debian: apt-get install nodejs npm)", tool)
		}
	}
	base, err := os.UserCacheDir()
	if err != nil {
		base = os.TempDir()
	}
	parent := filepath.Join(base, "perpetuity", "quickstart-npm")
	dir := filepath.Join(parent, "openai-"+openaiVersion+"_anthropic-ai-sdk-"+anthropicVersion)
	if installed(dir) {
		return filepath.Join(dir, "node_modules")
	}
	if err := os.MkdirAll(parent, 0o755); err != nil {
		t.Fatal(err)
	}
	// Install beside the final folder and rename it into place, so an
	// interrupted install is never mistaken for a complete one and two
	// test processes cannot mix their files.
	tmp, err := os.MkdirTemp(parent, ".installing-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(tmp)
	if err := os.WriteFile(filepath.Join(tmp, "package.json"), []byte(`{"name": "perpetuity-quickstart", "private": true}`+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "npm", "install", "--no-audit", "--no-fund", "--save-exact", "--loglevel=error",
		"openai@"+openaiVersion, "@anthropic-ai/sdk@"+anthropicVersion)
	cmd.Dir = tmp
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("npm install of the Node SDKs failed (the first run needs the npm registry; later runs use %s): %v\n%s", dir, err, out)
	}
	if !installed(tmp) {
		t.Fatalf("npm install did not install openai@%s and @anthropic-ai/sdk@%s", openaiVersion, anthropicVersion)
	}
	if err := os.Rename(tmp, dir); err != nil && !installed(dir) {
		t.Fatalf("keep the installed SDKs: %v", err)
	}
	return filepath.Join(dir, "node_modules")
}

// installed reports whether dir holds both SDKs at the pinned versions.
func installed(dir string) bool {
	for pkg, want := range map[string]string{"openai": openaiVersion, "@anthropic-ai/sdk": anthropicVersion} {
		b, err := os.ReadFile(filepath.Join(dir, "node_modules", filepath.FromSlash(pkg), "package.json"))
		var meta struct {
			Version string `json:"version"`
		}
		if err != nil || json.Unmarshal(b, &meta) != nil || meta.Version != want {
			return false
		}
	}
	return true
}

// runNode runs one quick start as an ES module beside a link to the SDKs.
func runNode(ctx context.Context, t *testing.T, modules, code string, env []string) (string, error) {
	t.Helper()
	dir := t.TempDir()
	if err := os.Symlink(modules, filepath.Join(dir, "node_modules")); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "quickstart.mjs"), []byte(code), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.CommandContext(ctx, "node", "quickstart.mjs")
	cmd.Dir, cmd.Env = dir, env
	return output(cmd)
}

// output runs cmd and returns its stdout, or an error carrying stderr.
func output(cmd *exec.Cmd) (string, error) {
	out, err := cmd.Output()
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		err = errors.Join(err, errors.New(string(ee.Stderr)))
	}
	return string(out), err
}
