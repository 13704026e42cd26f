package translate

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/perpetuity/perpetuity/proxy/sse"
)

var update = flag.Bool("update", false, "rewrite testdata/*.golden from the current output")

// countingIDs makes ids and timestamps deterministic for goldens.
type countingIDs struct{ n atomic.Int64 }

func (c *countingIDs) NewID(prefix string) string {
	return fmt.Sprintf("%stest%03d", prefix, c.n.Add(1))
}

func (c *countingIDs) Now() int64 { return 1700000000 }

// newTestTranslator returns a deterministic Translator and the buffer its
// debug log goes to (without timestamps, so it can be part of a golden).
func newTestTranslator() (*Translator, *bytes.Buffer) {
	var logBuf bytes.Buffer
	h := slog.NewTextHandler(&logBuf, &slog.HandlerOptions{
		Level: slog.LevelDebug,
		ReplaceAttr: func(groups []string, a slog.Attr) slog.Attr {
			if a.Key == slog.TimeKey && len(groups) == 0 {
				return slog.Attr{}
			}
			return a
		},
	})
	return New(slog.New(h), &countingIDs{}), &logBuf
}

// splitSSE is a minimal SSE parser for tests (the real one lives in
// proxy/sse): events end at a blank line; "event:", "data:" (joined by
// "\n") and "id:" fields; comment lines ignored; Raw is the exact text.
func splitSSE(t testing.TB, text string) []sse.Event {
	t.Helper()
	var out []sse.Event
	var cur sse.Event
	var data []string
	var raw strings.Builder
	hasField := false
	for _, line := range strings.SplitAfter(text, "\n") {
		if line == "" {
			continue
		}
		raw.WriteString(line)
		l := strings.TrimRight(line, "\r\n")
		if l == "" {
			if hasField {
				cur.Data = []byte(strings.Join(data, "\n"))
				cur.Raw = []byte(raw.String())
				out = append(out, cur)
			}
			cur, data, hasField = sse.Event{}, nil, false
			raw.Reset()
			continue
		}
		if strings.HasPrefix(l, ":") {
			continue
		}
		name, value, _ := strings.Cut(l, ":")
		value = strings.TrimPrefix(value, " ")
		hasField = true
		switch name {
		case "event":
			cur.Event = value
		case "data":
			data = append(data, value)
		case "id":
			cur.ID = value
		}
	}
	return out
}

// checkGolden compares got with testdata/name.golden, or rewrites it under
// -update.
func checkGolden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name+".golden")
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update to create it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs from golden\n--- got ---\n%s\n--- want ---\n%s", path, got, want)
	}
}

func readInput(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func indentJSON(t *testing.T, b []byte) []byte {
	t.Helper()
	var buf bytes.Buffer
	if err := json.Indent(&buf, b, "", "  "); err != nil {
		t.Fatalf("output is not JSON: %v\n%s", err, b)
	}
	buf.WriteByte('\n')
	return buf.Bytes()
}

// goldenWithLog is body followed by the debug log, so the goldens also pin
// down what was dropped.
func goldenWithLog(body []byte, log *bytes.Buffer) []byte {
	out := append([]byte{}, body...)
	if log.Len() > 0 {
		out = append(out, "--- log ---\n"...)
		out = append(out, log.Bytes()...)
	}
	return out
}
