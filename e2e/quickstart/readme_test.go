package quickstart

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
)

// moduleRoot is the repository root, found from this file.
func moduleRoot() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..")
}

const markerPrefix = "<!-- quickstart:"

// readmeBlocks returns every marked code block of README.md by name: the
// text between the fence that follows the marker and its closing fence.
func readmeBlocks() (map[string]string, error) {
	f, err := os.Open(filepath.Join(moduleRoot(), "README.md"))
	if err != nil {
		return nil, err
	}
	defer f.Close()
	blocks := map[string]string{}
	sc := bufio.NewScanner(f)
	line := 0
	next := func() (string, bool) {
		if !sc.Scan() {
			return "", false
		}
		line++
		return sc.Text(), true
	}
	for {
		l, ok := next()
		if !ok {
			break
		}
		if !strings.HasPrefix(l, markerPrefix) {
			continue
		}
		name := strings.TrimSpace(strings.TrimSuffix(strings.TrimPrefix(l, markerPrefix), "-->"))
		if _, dup := blocks[name]; dup || name == "" {
			return nil, fmt.Errorf("README.md:%d: quick start %q marked twice or unnamed", line, name)
		}
		fence, ok := next()
		if !ok || !strings.HasPrefix(fence, "```") {
			return nil, fmt.Errorf("README.md:%d: quick start %q: the marker must be followed by a fenced block", line, name)
		}
		var body strings.Builder
		closed := false
		for {
			l, ok := next()
			if !ok {
				break
			}
			if strings.HasPrefix(l, "```") {
				closed = true
				break
			}
			body.WriteString(l + "\n")
		}
		if !closed {
			return nil, fmt.Errorf("README.md: quick start %q: unclosed block", name)
		}
		blocks[name] = body.String()
	}
	return blocks, sc.Err()
}
