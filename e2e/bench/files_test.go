package bench

import (
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// TestWriteFilesReferencesChart writes a report with and without a cost
// curve: with one, the chart lands beside the markdown under the name the
// markdown embeds, and is the chart of the report's figures; without one,
// no chart is written or referenced.
func TestWriteFilesReferencesChart(t *testing.T) {
	t.Parallel()
	embed := regexp.MustCompile(`!\[[^\]]+\]\(([^)]+)\)`)
	for _, tc := range []struct {
		name  string
		cost  *CostCurve
		chart bool
	}{
		{"with a cost curve", fixedCurve([]int{10_000, 50_000}), true},
		{"without", nil, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			cfg, err := ModeConfig("quick")
			if err != nil {
				t.Fatal(err)
			}
			r := &Report{Config: cfg, Machine: Machine{Date: time.Date(2026, 1, 2, 3, 4, 0, 0, time.UTC)}, Cost: tc.cost}
			dir := t.TempDir()
			out := filepath.Join(dir, "BENCHMARKS.md")
			written, err := r.WriteFiles(out)
			if err != nil {
				t.Fatal(err)
			}
			md, err := os.ReadFile(out)
			if err != nil {
				t.Fatal(err)
			}
			refs := embed.FindAllSubmatch(md, -1)
			if !tc.chart {
				if len(refs) != 0 || len(written) != 1 {
					t.Errorf("no cost curve, yet %d images referenced and %d files written", len(refs), len(written))
				}
				return
			}
			if len(refs) != 1 {
				t.Fatalf("want one image in the markdown, got %d", len(refs))
			}
			name := string(refs[0][1])
			if name != "BENCHMARKS-cost.svg" || CostChartName(out) != name {
				t.Errorf("the markdown embeds %q, want BENCHMARKS-cost.svg", name)
			}
			path := filepath.Join(dir, name)
			if len(written) != 2 || written[0] != path || written[1] != out {
				t.Errorf("written %v, want [%s %s]", written, path, out)
			}
			svg, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("the markdown embeds %s, which is not beside it: %v", name, err)
			}
			if !bytes.Equal(svg, r.CostSVG()) {
				t.Error("the chart beside the markdown is not the report's")
			}
			if err := wellFormed(svg); err != nil {
				t.Errorf("%s is not well-formed XML: %v", name, err)
			}
			if !strings.Contains(string(md), "## 2b. Cost curve") {
				t.Error("the markdown lacks the cost curve's section")
			}
			left, _ := filepath.Glob(filepath.Join(dir, ".bench-*"))
			if len(left) > 0 {
				t.Errorf("temporary files left behind: %v", left)
			}
		})
	}
}
