package memory

import (
	"math"
	"math/rand/v2"
	"testing"
)

func TestHeat(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		a    Activation
		t    int64
		tau  float64
		want float64
	}{
		{"born now", Activation{TLast: 100, Peak: 1}, 100, 1000, 1},
		{"one tau later", Activation{TLast: 100, Peak: 1}, 1100, 1000, math.Exp(-1)},
		{"peak scales", Activation{TLast: 0, Peak: 2}, 500, 1000, 2 * math.Exp(-0.5)},
		{"stale clock reads as now", Activation{TLast: 100, Peak: 1}, 50, 1000, 1},
	}
	for _, c := range cases {
		if got := Heat(c.a, c.t, c.tau); math.Abs(got-c.want) > 1e-12 {
			t.Errorf("%s: heat %v, want %v", c.name, got, c.want)
		}
	}
}

// An idle day of wall time changes nothing: heat depends only on the token
// clock, and there is no wall-time input to the model at all. The same
// clock gives the same heat however much time passed between the calls.
func TestIdleWallTimeChangesNothing(t *testing.T) {
	t.Parallel()
	a := Activation{TLast: 5000, Peak: 1}
	before := Heat(a, 7000, 3000)
	// A day later, the clock has not moved because the agent processed nothing.
	after := Heat(a, 7000, 3000)
	if before != after {
		t.Fatalf("heat moved without the clock: %v -> %v", before, after)
	}
}

// Beats is exactly "the new trajectory is above the old one at every later
// clock", checked against sampled later clocks.
func TestBeatsIsTrajectoryDominance(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(1, 2))
	for i := 0; i < 5000; i++ {
		tau := 100 + r.Float64()*10000
		a := Activation{TLast: r.Int64N(10000), Peak: r.Float64() * 2}
		now := a.TLast + r.Int64N(20000)
		p := r.Float64() * 2
		b := Activation{TLast: now, Peak: p}
		dominates := true
		for _, later := range []int64{now, now + 1, now + int64(tau/2), now + int64(3*tau)} {
			if !(Heat(b, later, tau) > Heat(a, later, tau)) {
				dominates = false
			}
		}
		if got := Beats(p, a, now, tau); got != dominates && math.Abs(p-Heat(a, now, tau)) > 1e-9 {
			t.Fatalf("Beats(%v, %+v, %d, %v) = %v, dominance %v", p, a, now, tau, got, dominates)
		}
	}
}

// Concurrent reheats commute: applying the adoption rule in either order
// leaves the same state.
func TestReheatsCommute(t *testing.T) {
	t.Parallel()
	adopt := func(cur Activation, p float64, at int64, tau float64) Activation {
		if Beats(p, cur, at, tau) {
			return Activation{TLast: at, Peak: p}
		}
		return cur
	}
	r := rand.New(rand.NewPCG(3, 4))
	for i := 0; i < 5000; i++ {
		tau := 500 + r.Float64()*5000
		start := Activation{TLast: 0, Peak: 1}
		at := r.Int64N(3000)
		p1, p2 := r.Float64()*2, r.Float64()*2
		x := adopt(adopt(start, p1, at, tau), p2, at, tau)
		y := adopt(adopt(start, p2, at, tau), p1, at, tau)
		if x != y {
			t.Fatalf("order mattered: %+v vs %+v", x, y)
		}
	}
}

func TestRankPeakDecreasesAndTopBeatsNewborn(t *testing.T) {
	t.Parallel()
	if RankPeak(0) <= BornPeak {
		t.Fatal("the best match must be reheated above a newborn item")
	}
	for r := 1; r < 200; r++ {
		if RankPeak(r) >= RankPeak(r-1) {
			t.Fatalf("peak not decreasing at rank %d", r)
		}
	}
}

func TestTrajectoryAt(t *testing.T) {
	t.Parallel()
	tr := Trajectory{
		Tau:     100,
		Born:    Activation{TLast: 1000, Peak: 1},
		Reheats: []Activation{{TLast: 1300, Peak: 0.8}, {TLast: 1100, Peak: 0.9}, {TLast: 10, Peak: 5}},
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
	if n := len(tr.Activations()); n != 3 {
		t.Fatalf("Activations kept %d, want 3 (reheat before birth dropped)", n)
	}
}

// A tau that is not positive (never an item's; a damaged row the console
// draws) forgets the peak once time passes instead of growing or turning NaN.
func TestDecayDegenerateTau(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name               string
		peak, elapsed, tau float64
		want               float64
	}{
		{"zero tau after a while", 1, 5, 0, 0},
		{"zero tau at once", 0.7, 0, 0, 0.7},
		{"negative tau", 0.3, 300, -5, 0},
		{"NaN tau", 1, 1, math.NaN(), 0},
		{"NaN tau at once", 2, 0, math.NaN(), 2},
	}
	for _, c := range cases {
		if got := Decay(c.peak, c.elapsed, c.tau); got != c.want {
			t.Errorf("%s: Decay = %v, want %v", c.name, got, c.want)
		}
	}
}
