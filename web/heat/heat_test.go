package heat

import (
	"math"
	"testing"
)

func TestAt(t *testing.T) {
	t.Parallel()
	tr := Trajectory{
		Tau:     100,
		Born:    Point{Clock: 1000, Peak: 1},
		Reheats: []Point{{Clock: 1300, Peak: 0.8}, {Clock: 1100, Peak: 0.9}, {Clock: 10, Peak: 5}},
		Now:     1400,
	}
	cases := []struct {
		name  string
		clock int64
		want  float64
	}{
		{"before birth", 999, 0},
		{"at birth", 1000, 1},
		{"decayed one tau", 1100 - 1, math.Exp(-0.99)},
		{"reheat adopted (out of order input)", 1100, 0.9},
		{"between reheats", 1200, 0.9 * math.Exp(-1)},
		{"second reheat", 1300, 0.8},
		{"now", 1400, 0.8 * math.Exp(-1)},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			if got := tr.At(c.clock); math.Abs(got-c.want) > 1e-12 {
				t.Fatalf("At(%d) = %v, want %v", c.clock, got, c.want)
			}
		})
	}
	if got, want := tr.Current(), 0.8*math.Exp(-1); math.Abs(got-want) > 1e-12 {
		t.Fatalf("Current = %v, want %v", got, want)
	}
	if n := len(tr.Points()); n != 3 {
		t.Fatalf("Points kept %d, want 3 (reheat before birth dropped)", n)
	}
}

func TestLevelAndColor(t *testing.T) {
	t.Parallel()
	cases := []struct {
		h     float64
		level int
		color string
	}{
		{math.NaN(), 0, "#1e3a8a"},
		{-1, 0, "#1e3a8a"},
		{0, 0, "#1e3a8a"},
		{0.5, 5, "#bb5782"},
		{1, 10, "#dc2626"},
		{7, 10, "#dc2626"},
	}
	for _, c := range cases {
		if got := Level(c.h); got != c.level {
			t.Errorf("Level(%v) = %d, want %d", c.h, got, c.level)
		}
		if got := Color(c.h); got != c.color {
			t.Errorf("Color(%v) = %s, want %s", c.h, got, c.color)
		}
	}
}

func TestDecayZeroTau(t *testing.T) {
	t.Parallel()
	if got := Decay(1, 5, 0); got != 0 {
		t.Fatalf("Decay with tau 0 = %v, want 0", got)
	}
	if got := Decay(0.7, 0, 0); got != 0.7 {
		t.Fatalf("Decay at elapsed 0 = %v, want the peak", got)
	}
}
