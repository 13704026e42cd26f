package memory

import (
	"math"
	"sort"
)

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
	return Decay(a.Peak, float64(t-a.TLast), tau)
}

// Decay is the law itself: peak * exp(-elapsed / tau), the peak while no
// time has passed. An item's tau is positive; a tau that is not (a damaged
// row drawn by the console) keeps no memory of the peak once time passes,
// rather than growing or turning NaN.
func Decay(peak, elapsed, tau float64) float64 {
	if elapsed <= 0 {
		return peak
	}
	if !(tau > 0) {
		return 0
	}
	return peak * math.Exp(-elapsed/tau)
}

// Beats reports whether reheating to peak p at clock t should replace a.
func Beats(p float64, a Activation, t int64, tau float64) bool {
	return p > Heat(a, t, tau)
}

// RankPeak is the peak a retrieval gives the item it ranked r-th (0 = best):
// above a newborn item's peak for every rank, so this turn's own retrieval
// outranks what is merely recent, and falling with rank, so the frame is
// filled in relevance order.
func RankPeak(rank int) float64 { return rankPeakAt(float64(rank)) }

// rankPeakAt is RankPeak of a rank scaled by a preference (speaker.go).
func rankPeakAt(rank float64) float64 {
	return 1 + 1/(1+rank/8)
}

// BornPeak is the activation every item is born with.
const BornPeak = 1.0

// WarmThreshold is the heat below which an item is too cold to render: at
// or above it an item may enter a frame without any retrieval match (the
// console draws it as the line between warm and cold).
const WarmThreshold = 0.05

// MaxPeak is the highest heat the law ever reaches: the peak a retrieval
// gives its best match.
func MaxPeak() float64 { return RankPeak(0) }

// horizon is how far back (in clock tokens) an item with decay tau and the
// highest possible peak can still be warm: older activations need not be read.
func horizon(tau float64) int64 {
	return int64(tau * math.Log(MaxPeak()/WarmThreshold))
}

// Trajectory is an item's heat history for one viewer: born, then every
// reheat that was adopted. A reheat is only recorded when it beat the
// trajectory, so the heat at any clock is that of the latest activation at
// or before it.
type Trajectory struct {
	Tau     float64      // fixed at birth
	Born    Activation   // TLast is the birth clock
	Reheats []Activation // adopted reheats, in any order
	Now     int64        // the viewer's clock now
}

// Activations is birth followed by the reheats in clock order; a reheat
// before birth cannot exist and is dropped rather than drawn backwards.
func (t Trajectory) Activations() []Activation {
	out := make([]Activation, 0, len(t.Reheats)+1)
	out = append(out, t.Born)
	rs := append([]Activation(nil), t.Reheats...)
	sort.SliceStable(rs, func(i, j int) bool { return rs[i].TLast < rs[j].TLast })
	for _, r := range rs {
		if r.TLast >= t.Born.TLast {
			out = append(out, r)
		}
	}
	return out
}

// At is the heat at clock c; zero before birth.
func (t Trajectory) At(c int64) float64 {
	as := t.Activations()
	i := sort.Search(len(as), func(i int) bool { return as[i].TLast > c }) - 1
	if i < 0 {
		return 0
	}
	return Heat(as[i], c, t.Tau)
}

// Current is the heat at the viewer's clock now.
func (t Trajectory) Current() float64 { return t.At(t.Now) }

// ColdAt is the clock from which the heat stays below WarmThreshold unless
// something reheats the item again: the end of its warm stretch, in the
// past or ahead of now.
func (t Trajectory) ColdAt() int64 {
	as := t.Activations()
	a := as[len(as)-1]
	if a.Peak < WarmThreshold || !(t.Tau > 0) {
		return a.TLast
	}
	return a.TLast + int64(math.Ceil(t.Tau*math.Log(a.Peak/WarmThreshold)))
}
