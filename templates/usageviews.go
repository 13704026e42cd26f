package templates

import "fmt"

// UsageRow is one line of a usage table, every figure already formatted.
type UsageRow struct {
	ID        string // data-testid suffix: the user's or key's id, or the day
	Label     string
	Sub       string // a key's prefix and memory user; empty elsewhere
	Requests  string
	ErrorRate string // non-2xx share, e.g. "12.5%"; "–" without requests
	TokensIn  string
	Frame     string
	Harness   string
	TokensOut string
}

// Usage is the usage page: tokens per memory user, per key and per day
// over the last Days days.
type Usage struct {
	Days   int
	Ranges []int
	Total  UsageRow
	Users  []UsageRow
	Keys   []UsageRow
	PerDay []UsageRow // newest first
	Chart  UsageChart
}

// UsageDay is one day of the chart: the frame's and the harness's input
// tokens.
type UsageDay struct {
	Label          string // MM-DD
	Frame, Harness float64
}

// UsageChart is the tokens-per-day chart, frame stacked on harness.
type UsageChart struct {
	Days []UsageDay
}

// StackBar is one day's two stacked rectangles.
type StackBar struct {
	X, W               float64
	HarnessY, HarnessH float64
	FrameY, FrameH     float64
	Title              string
}

// StackGeom is the usage chart laid out in a w x h box.
type StackGeom struct {
	W, H, Base  float64
	Bars        []StackBar
	Max         string
	First, Last string
}

// Colours of the usage chart's two parts (presentation attributes, which
// the CSP allows).
const (
	colorFrame   = "#7c3aed"
	colorHarness = "#0891b2"
)

// Layout lays the chart out: one bar per day, the harness's tokens at the
// bottom, the frame's on top, scaled to the busiest day.
func (c UsageChart) Layout(w, h float64) StackGeom {
	const pad = 2.0
	g := StackGeom{W: w, H: h, Base: h - pad}
	if len(c.Days) == 0 {
		g.Max = "0"
		return g
	}
	g.First, g.Last = c.Days[0].Label, c.Days[len(c.Days)-1].Label
	maxV := 0.0
	for _, d := range c.Days {
		maxV = max(maxV, d.Frame+d.Harness)
	}
	g.Max = compact(maxV)
	scale := 0.0
	if maxV > 0 {
		scale = (h - 2*pad) / maxV
	}
	bw := (w - 2*pad) / float64(len(c.Days))
	for i, d := range c.Days {
		hh, fh := d.Harness*scale, d.Frame*scale
		g.Bars = append(g.Bars, StackBar{
			X: pad + float64(i)*bw + bw*0.1, W: bw * 0.8,
			HarnessY: g.Base - hh, HarnessH: hh,
			FrameY: g.Base - hh - fh, FrameH: fh,
			Title: fmt.Sprintf("%s: frame %s, harness %s tokens in", d.Label, Count(int64(d.Frame)), Count(int64(d.Harness))),
		})
	}
	return g
}
