// Package heat is the console's copy of the heat law, used to draw an item's
// heat over the clock: heat(t) = peak * exp(-(t - t_last) / tau), where
// (t_last, peak) is the latest adopted activation at or before t. Items are
// born hot; a reheat is only ever recorded when it was adopted (it beat the
// trajectory), so the trajectory is simply birth followed by the reheats.
package heat

import (
	"math"
	"sort"
)

// Point is an adopted activation: the clock it happened at and its peak.
type Point struct {
	Clock int64
	Peak  float64
}

// Trajectory is everything needed to know an item's heat at any clock.
type Trajectory struct {
	Tau     float64 // decay constant in tokens, fixed at birth
	Born    Point   // birth: born hot
	Reheats []Point // adopted reheats after birth
	Now     int64   // the viewer's clock now
}

// Points is birth followed by the reheats in clock order; reheats before
// birth cannot exist and are dropped rather than drawn backwards.
func (t Trajectory) Points() []Point {
	out := make([]Point, 0, len(t.Reheats)+1)
	out = append(out, t.Born)
	rs := append([]Point(nil), t.Reheats...)
	sort.SliceStable(rs, func(i, j int) bool { return rs[i].Clock < rs[j].Clock })
	for _, r := range rs {
		if r.Clock >= t.Born.Clock {
			out = append(out, r)
		}
	}
	return out
}

// At is the heat at clock c; zero before birth.
func (t Trajectory) At(c int64) float64 {
	pts := t.Points()
	i := sort.Search(len(pts), func(i int) bool { return pts[i].Clock > c }) - 1
	if i < 0 {
		return 0
	}
	return Decay(pts[i].Peak, float64(c-pts[i].Clock), t.Tau)
}

// Current is the heat at the viewer's clock now.
func (t Trajectory) Current() float64 { return t.At(t.Now) }

// Decay is peak * exp(-elapsed / tau); a non-positive tau means no memory of
// the peak once any time has passed.
func Decay(peak, elapsed, tau float64) float64 {
	if elapsed <= 0 {
		return peak
	}
	if tau <= 0 || math.IsNaN(tau) {
		return 0
	}
	return peak * math.Exp(-elapsed/tau)
}

// Level buckets a heat into 0 (cold) .. 10 (hot) for colour scales; heat
// is clamped to [0, 1], where 1 is a freshly born item.
func Level(h float64) int {
	if math.IsNaN(h) || h <= 0 {
		return 0
	}
	if h >= 1 {
		return 10
	}
	return int(math.Round(h * 10))
}

// Color maps heat to a colour from cold blue through violet and orange to
// hot red (no green on the way, so nothing reads as "fine"), as a #rrggbb
// string for SVG fill attributes.
func Color(h float64) string {
	stops := [...][3]float64{
		{0x1e, 0x3a, 0x8a}, // cold: deep blue
		{0x7c, 0x3a, 0xed}, // cool: violet
		{0xf9, 0x73, 0x16}, // warm: orange
		{0xdc, 0x26, 0x26}, // hot: red
	}
	if math.IsNaN(h) || h < 0 {
		h = 0
	}
	if h > 1 {
		h = 1
	}
	pos := h * float64(len(stops)-1)
	i := int(pos)
	if i >= len(stops)-1 {
		i = len(stops) - 2
	}
	f := pos - float64(i)
	var rgb [3]int
	for k := range rgb {
		rgb[k] = int(math.Round(stops[i][k] + (stops[i+1][k]-stops[i][k])*f))
	}
	const hex = "0123456789abcdef"
	b := []byte{'#', 0, 0, 0, 0, 0, 0}
	for k, v := range rgb {
		b[1+2*k] = hex[v>>4]
		b[2+2*k] = hex[v&15]
	}
	return string(b)
}
