package web

import (
	"bytes"
	"context"
	"flag"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/perpetuity/perpetuity/memory"
	"github.com/perpetuity/perpetuity/templates"
)

var update = flag.Bool("update", false, "rewrite golden files under testdata/")

func sampleTrajectory() memory.Trajectory {
	return memory.Trajectory{
		Tau:     800,
		Born:    memory.Activation{TLast: 1000, Peak: 1},
		Reheats: []memory.Activation{{TLast: 2200, Peak: 0.85}, {TLast: 3100, Peak: 0.7}},
		Now:     4200,
	}
}

// renderResults is the memory browser's result list for items, as served.
func renderResults(t *testing.T, items []Item) string {
	t.Helper()
	var b bytes.Buffer
	v := templates.Memory{Items: toView(items, time.Date(2025, 3, 10, 12, 0, 0, 0, time.UTC))}
	if err := templates.MemoryResults(v).Render(context.Background(), &b); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// The heat curve an item card draws, from the engine's law through the
// sampling here to the layout in templates, byte for byte: a warm item
// (past, reheats, the decay ahead down to the warm line) and a cold one.
func TestHeatCurveGolden(t *testing.T) {
	t.Parallel()
	cold := sampleTrajectory()
	cold.Now = 9000
	for name, tr := range map[string]memory.Trajectory{"heat_curve.svg.golden": sampleTrajectory(), "heat_curve_cold.svg.golden": cold} {
		out := renderResults(t, []Item{{ID: 7, Heat: tr}})
		i := strings.Index(out, `<svg viewBox="0 0 320 120" class="heat-curve"`)
		j := strings.Index(out[max(i, 0):], "</svg>")
		if i < 0 || j < 0 {
			t.Fatalf("no heat curve in %s", out)
		}
		got := out[i : i+j+len("</svg>")]
		path := filepath.Join("testdata", name)
		if *update {
			if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		want, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if got != string(want) {
			t.Fatalf("%s differs from the golden file; inspect and rerun with -update if intended.\ngot:\n%s", path, got)
		}
	}
}

// The pictures' scale is the law's: warm is what the frame renders, the
// top is a retrieval's best peak.
func TestHeatScaleIsTheLaws(t *testing.T) {
	t.Parallel()
	s := heatScale()
	if s.Warm != memory.WarmThreshold || s.Max != memory.RankPeak(0) || s.Born != memory.BornPeak {
		t.Fatalf("scale %+v", s)
	}
	// Heats a linear bar drew equally full are apart on it.
	if s.Pos(0.99) >= s.Pos(1.5) || s.Pos(1.5) >= s.Pos(2) {
		t.Fatalf("scale saturates: %v %v %v", s.Pos(0.99), s.Pos(1.5), s.Pos(2))
	}
}

// The decay ahead follows the law from now to where it turns cold.
func TestHeatProjection(t *testing.T) {
	t.Parallel()
	tr := sampleTrajectory()
	hh := heatHistory(tr)
	if hh.ColdAt != tr.ColdAt() || hh.ColdAt <= tr.Now || len(hh.Projection) != curveSamples {
		t.Fatalf("cold at %d, %d projected samples", hh.ColdAt, len(hh.Projection))
	}
	last := hh.Projection[len(hh.Projection)-1]
	if last.Clock != float64(hh.ColdAt) || math.Abs(last.Heat-memory.WarmThreshold) > 1e-3 {
		t.Fatalf("projection ends at %+v, want the warm threshold at %d", last, hh.ColdAt)
	}
	tr.Now = 9000
	if cold := heatHistory(tr); cold.Projection != nil || cold.Current >= memory.WarmThreshold {
		t.Fatalf("a cold item projects %d samples", len(cold.Projection))
	}
}

func TestHeatHistory(t *testing.T) {
	t.Parallel()
	tr := sampleTrajectory()
	hh := heatHistory(tr)
	if len(hh.Segments) != 3 || hh.Current != tr.Current() || hh.End != tr.Now || hh.Tau != tr.Tau {
		t.Fatalf("history %+v", hh)
	}
	for i, s := range hh.Segments {
		a := tr.Activations()[i]
		if s.Clock != a.TLast || s.Peak != a.Peak || len(s.Samples) != curveSamples {
			t.Fatalf("segment %d: %+v from %+v", i, s, a)
		}
		for _, p := range s.Samples {
			if p.Heat != memory.Decay(a.Peak, p.Clock-float64(a.TLast), tr.Tau) {
				t.Fatalf("segment %d: sample %+v off the law", i, p)
			}
		}
	}
	// Each segment runs to the next activation, the last one to now.
	if last := hh.Segments[0].Samples[curveSamples-1].Clock; last != 2200 {
		t.Fatalf("first segment ends at %v, want the reheat at 2200", last)
	}
	if last := hh.Segments[2].Samples[curveSamples-1].Clock; last != 4200 {
		t.Fatalf("last segment ends at %v, want now", last)
	}
}

// Damaged rows (no history, a non-positive or NaN tau, an infinite peak,
// now before birth) still draw a curve with finite coordinates.
func TestHeatHistoryDegenerate(t *testing.T) {
	t.Parallel()
	for _, tr := range []memory.Trajectory{
		{},
		{Tau: 0, Born: memory.Activation{TLast: 5, Peak: 1}, Now: 1},
		{Tau: math.NaN(), Born: memory.Activation{Peak: math.Inf(1)}, Now: 3},
		{Tau: -5, Born: memory.Activation{TLast: 100, Peak: 0.3}, Now: 400},
	} {
		out := renderResults(t, []Item{{ID: 1, Heat: tr}})
		paths := strings.Split(out, ` d="`)[1:]
		if strings.Contains(out, "NaN") || len(paths) != 2 {
			t.Fatalf("degenerate trajectory %+v drew %s", tr, out)
		}
		for _, p := range paths {
			if d, _, _ := strings.Cut(p, `"`); strings.Contains(d, "Inf") {
				t.Fatalf("degenerate trajectory %+v drew the path %s", tr, d)
			}
		}
	}
}
