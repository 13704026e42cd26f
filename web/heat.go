package web

import (
	"github.com/perpetuity/perpetuity/memory"
	"github.com/perpetuity/perpetuity/templates"
)

// curveSamples is how many heats are taken along each segment of a heat
// curve: smooth at the sizes the console draws.
const curveSamples = 48

// heatScale is the scale every heat picture is drawn on, from the law's own
// constants: what "warm" means is what the frame renders.
func heatScale() templates.HeatScale {
	return templates.HeatScale{Warm: memory.WarmThreshold, Born: memory.BornPeak, Max: memory.MaxPeak()}
}

// heatHistory samples an item's trajectory by the engine's law for the
// heat curve, from birth to now (or to a reheat logged after now), and
// the decay ahead down to the warm threshold while it is warm.
func heatHistory(t memory.Trajectory) templates.HeatHistory {
	as := t.Activations()
	start := as[0].TLast
	end := max(t.Now, as[len(as)-1].TLast)
	if end <= start {
		end = start + 1
	}
	hh := templates.HeatHistory{Scale: heatScale(), Tau: t.Tau, Now: t.Now, End: end, Current: t.Current(), ColdAt: t.ColdAt()}
	for i, a := range as {
		segEnd := float64(end)
		if i+1 < len(as) {
			segEnd = float64(as[i+1].TLast)
		}
		seg := templates.HeatSegment{Clock: a.TLast, Peak: a.Peak}
		seg.Samples = sample(a, t.Tau, float64(a.TLast), segEnd)
		hh.Segments = append(hh.Segments, seg)
	}
	if last := as[len(as)-1]; hh.ColdAt > end && hh.Current >= memory.WarmThreshold {
		hh.Projection = sample(last, t.Tau, float64(end), float64(hh.ColdAt))
	}
	return hh
}

// sample is the law's heat of a at curveSamples clocks after from, up to to.
func sample(a memory.Activation, tau, from, to float64) []templates.HeatSample {
	span := to - from
	if span <= 0 {
		return nil
	}
	out := make([]templates.HeatSample, 0, curveSamples)
	for k := 1; k <= curveSamples; k++ {
		c := from + span*float64(k)/curveSamples
		out = append(out, templates.HeatSample{Clock: c, Heat: memory.Decay(a.Peak, c-float64(a.TLast), tau)})
	}
	return out
}
