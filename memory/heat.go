package memory

import "math"

// Heat model (DESIGN §6). An item's activation for one viewer is the clock
// of its last activation, the peak reached then, and the decay constant tau
// fixed at the item's birth. Heat at a later clock t is
//
//	heat(t) = peak * exp(-(t - tLast) / tau)
//
// and is always computed, never written: nothing cools an item. Because two
// trajectories with the same tau never cross, a reheat with peak p at clock
// t beats the current trajectory at every later clock exactly when
// p > heat(t); that single comparison is the adoption rule, and concurrent
// reheats commute under it.

// Activation is an item's state for one viewer.
type Activation struct {
	TLast int64
	Peak  float64
}

// Heat is the activation's heat at clock t. The clock never runs backwards;
// a t before tLast (a stale read) is treated as tLast.
func Heat(a Activation, t int64, tau float64) float64 {
	dt := t - a.TLast
	if dt < 0 {
		dt = 0
	}
	return a.Peak * math.Exp(-float64(dt)/tau)
}

// Beats reports whether reheating to peak p at clock t should replace a.
func Beats(p float64, a Activation, t int64, tau float64) bool {
	return p > Heat(a, t, tau)
}

// RankPeak is the peak a retrieval gives the item it ranked r-th (0 = best):
// above a newborn item's peak for every rank, so this turn's own retrieval
// outranks what is merely recent, and falling with rank, so the frame is
// filled in relevance order.
func RankPeak(rank int) float64 {
	return 1 + 1/(1+float64(rank)/8)
}

// BornPeak is the activation every item is born with.
const BornPeak = 1.0

// warmThreshold is the heat below which an item is too cold to render.
const warmThreshold = 0.05

// horizon is how far back (in clock tokens) an item with decay tau and the
// highest possible peak can still be warm: older activations need not be read.
func horizon(tau float64) int64 {
	return int64(tau * math.Log(RankPeak(0)/warmThreshold))
}
