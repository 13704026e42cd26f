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
