package sse

import (
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite golden files under testdata/")

type goldenEvent struct {
	Event string  `json:"event,omitempty"`
	ID    string  `json:"id,omitempty"`
	Data  *string `json:"data"`
	Raw   string  `json:"raw"`
}

func renderGolden(evs []Event, endErr error) []byte {
	var b strings.Builder
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	for _, e := range evs {
		g := goldenEvent{Event: e.Event, ID: e.ID, Raw: string(e.Raw)}
		if e.Data != nil {
			d := string(e.Data)
			g.Data = &d
		}
		_ = enc.Encode(g)
	}
	if endErr != nil {
		b.WriteString("end: " + endErr.Error() + "\n")
	} else {
		b.WriteString("end: clean\n")
	}
	return []byte(b.String())
}

// TestGoldenProviderStreams parses captured provider streams (OpenAI chat
// completions, Anthropic messages, CRLF and comment variants) and pins the
// events; every chunking must give the same events.
func TestGoldenProviderStreams(t *testing.T) {
	t.Parallel()
	inputs, err := filepath.Glob("testdata/*.sse")
	if err != nil || len(inputs) == 0 {
		t.Fatalf("no testdata streams: %v", err)
	}
	for _, in := range inputs {
		t.Run(filepath.Base(in), func(t *testing.T) {
			t.Parallel()
			raw, err := os.ReadFile(in)
			if err != nil {
				t.Fatal(err)
			}
			evs, _, endErr := parseChunks(nil, raw)
			got := renderGolden(evs, endErr)
			golden := strings.TrimSuffix(in, ".sse") + ".golden"
			if *update {
				if err := os.WriteFile(golden, got, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (run with -update to create)", err)
			}
			if string(got) != string(want) {
				t.Fatalf("events differ from %s:\n got:\n%s\nwant:\n%s", golden, got, want)
			}
			for i := 0; i <= len(raw); i++ {
				split, _, splitErr := parseChunks(nil, raw[:i], raw[i:])
				if string(renderGolden(split, splitErr)) != string(want) {
					t.Fatalf("split at byte %d changes the events", i)
				}
			}
		})
	}
}
