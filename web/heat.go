package web

import (
	"github.com/perpetuity/perpetuity/memory"
	"github.com/perpetuity/perpetuity/templates"
)

// curveSamples is how many heats are taken along each segment of a heat
// curve: smooth at the sizes the console draws.
const curveSamples = 48

// heatHistory samples an item's trajectory by the engine's law for the
// heat curve, from birth to now (or to a reheat logged after now).
func heatHistory(t memory.Trajectory) templates.HeatHistory {
	as := t.Activations()
	start := as[0].TLast
	end := max(t.Now, as[len(as)-1].TLast)
	if end <= start {
		end = start + 1
	}
	hh := templates.HeatHistory{Tau: t.Tau, Now: t.Now, End: end, Current: t.Current()}
	for i, a := range as {
		segEnd := float64(end)
		if i+1 < len(as) {
			segEnd = float64(as[i+1].TLast)
		}
		seg := templates.HeatSegment{Clock: a.TLast, Peak: a.Peak}
		span := segEnd - float64(a.TLast)
		for k := 1; k <= curveSamples && span > 0; k++ {
			c := float64(a.TLast) + span*float64(k)/curveSamples
			seg.Samples = append(seg.Samples, templates.HeatSample{Clock: c, Heat: memory.Decay(a.Peak, c-float64(a.TLast), t.Tau)})
		}
		hh.Segments = append(hh.Segments, seg)
	}
	return hh
}
