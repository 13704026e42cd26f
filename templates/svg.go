package templates

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// Geometry for the server-drawn SVG pictures. Everything is computed here so
// the .templ files only place shapes; colours go into SVG presentation
// attributes (fill, stroke), which a CSP without 'unsafe-inline' allows.

// num formats a coordinate compactly and deterministically (golden files).
func num(f float64) string {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return "0"
	}
	return strconv.FormatFloat(math.Round(f*10)/10, 'f', -1, 64)
}

// HeatMark is a dot on a heat curve: birth or an adopted reheat.
type HeatMark struct {
	X, Y  float64
	Title string
}

// HeatCurve is an item's heat over the clock, ready to draw.
type HeatCurve struct {
	W, H      float64
	Line      string // path: decay curves joined by the jumps of reheats
	Area      string // the same, closed to the baseline, filled faintly
	Marks     []HeatMark
	NowX      float64
	NowY      float64
	NowColor  string
	Baseline  float64
	Current   float64
	Reheats   int
	Tau       float64
	BornClock int64
	Now       int64
}

// NewHeatCurve lays out hh in a w x h box: x is the viewer's clock from the
// item's birth to the end of the history, y is heat (1 = born hot).
func NewHeatCurve(hh HeatHistory, w, h float64) HeatCurve {
	const padX, padTop, padBottom = 4.0, 6.0, 4.0
	segs := hh.Segments
	if len(segs) == 0 {
		segs = []HeatSegment{{}} // no history: drawn as a cold birth
	}
	start := segs[0].Clock
	end := hh.End
	if end <= start {
		end = start + 1
	}
	ymax := 1.0
	for _, s := range segs {
		if s.Peak > ymax && !math.IsInf(s.Peak, 0) {
			ymax = s.Peak
		}
	}
	base := h - padBottom
	xs := func(c float64) float64 { return padX + (c-float64(start))/float64(end-start)*(w-2*padX) }
	ys := func(v float64) float64 {
		if math.IsNaN(v) || v < 0 {
			v = 0
		}
		return base - math.Min(v, ymax)/ymax*(base-padTop)
	}
	var line strings.Builder
	hc := HeatCurve{W: w, H: h, Baseline: base, Current: hh.Current, Reheats: len(segs) - 1, Tau: hh.Tau, BornClock: start, Now: hh.Now}
	for i, s := range segs {
		if i == 0 {
			fmt.Fprintf(&line, "M%s %s", num(xs(float64(s.Clock))), num(ys(s.Peak)))
		} else {
			fmt.Fprintf(&line, " L%s %s", num(xs(float64(s.Clock))), num(ys(s.Peak)))
		}
		for _, p := range s.Samples {
			fmt.Fprintf(&line, " L%s %s", num(xs(p.Clock)), num(ys(p.Heat)))
		}
		title := fmt.Sprintf("born hot at clock %d, heat %.2f", s.Clock, s.Peak)
		if i > 0 {
			title = fmt.Sprintf("reheated at clock %d to %.2f", s.Clock, s.Peak)
		}
		hc.Marks = append(hc.Marks, HeatMark{X: xs(float64(s.Clock)), Y: ys(s.Peak), Title: title})
	}
	hc.Line = line.String()
	hc.Area = hc.Line + fmt.Sprintf(" L%s %s L%s %s Z", num(xs(float64(end))), num(base), num(xs(float64(start))), num(base))
	hc.NowX = xs(float64(hh.Now))
	hc.NowY = ys(hc.Current)
	hc.NowColor = HeatColor(hc.Current)
	return hc
}

// StripCell is one turn in a conversation's heat strip.
type StripCell struct {
	X, W   float64
	Color  string
	Title  string
	Anchor string
}

// NewHeatStrip gives each item an equal cell coloured by its heat now.
func NewHeatStrip(items []Item, w float64) []StripCell {
	if len(items) == 0 {
		return nil
	}
	cw := w / float64(len(items))
	out := make([]StripCell, len(items))
	for i, it := range items {
		hNow := it.Heat.Current
		out[i] = StripCell{
			X:      float64(i) * cw,
			W:      math.Max(cw-1, 1),
			Color:  HeatColor(hNow),
			Title:  fmt.Sprintf("turn %d (%s): heat %.2f", i+1, it.Role, hNow),
			Anchor: "#item-" + strconv.FormatInt(it.ID, 10),
		}
	}
	return out
}

// ChartBar is one bar of a single-series chart.
type ChartBar struct {
	X, Y, W, H float64
	Title      string
}

// ChartLine is one series of a multi-series chart.
type ChartLine struct {
	Name   string
	Color  string
	Points string
}

// ChartGeom is a chart laid out in a w x h box.
type ChartGeom struct {
	W, H  float64
	Bars  []ChartBar
	Color string
	Lines []ChartLine
	Max   string
	First string
	Last  string
	Base  float64
}

// NewChart lays out c: bars for one series, lines for more.
func NewChart(c Chart, w, h float64) ChartGeom {
	const pad = 2.0
	g := ChartGeom{W: w, H: h, Base: h - pad}
	if len(c.Labels) > 0 {
		g.First, g.Last = c.Labels[0], c.Labels[len(c.Labels)-1]
	}
	maxV := 0.0
	n := 0
	for _, s := range c.Series {
		n = max(n, len(s.Values))
		for _, v := range s.Values {
			maxV = math.Max(maxV, v)
		}
	}
	g.Max = compact(maxV)
	if n == 0 {
		return g
	}
	scale := 0.0
	if maxV > 0 {
		scale = (h - 2*pad) / maxV
	}
	if len(c.Series) == 1 {
		s := c.Series[0]
		g.Color = s.Color
		bw := (w - 2*pad) / float64(n)
		for i, v := range s.Values {
			bh := v * scale
			label := ""
			if i < len(c.Labels) {
				label = c.Labels[i]
			}
			g.Bars = append(g.Bars, ChartBar{
				X: pad + float64(i)*bw + bw*0.1, W: bw * 0.8,
				Y: g.Base - bh, H: bh,
				Title: fmt.Sprintf("%s: %s %s", label, compact(v), c.Unit),
			})
		}
		return g
	}
	step := 0.0
	if n > 1 {
		step = (w - 2*pad) / float64(n-1)
	}
	for _, s := range c.Series {
		pts := make([]string, len(s.Values))
		for i, v := range s.Values {
			pts[i] = num(pad+float64(i)*step) + "," + num(g.Base-v*scale)
		}
		g.Lines = append(g.Lines, ChartLine{Name: s.Name, Color: s.Color, Points: strings.Join(pts, " ")})
	}
	return g
}

// compact writes 1234567 as 1.2M, for axis labels.
func compact(v float64) string {
	switch a := math.Abs(v); {
	case a >= 1e9:
		return strconv.FormatFloat(v/1e9, 'f', 1, 64) + "G"
	case a >= 1e6:
		return strconv.FormatFloat(v/1e6, 'f', 1, 64) + "M"
	case a >= 1e4:
		return strconv.FormatFloat(v/1e3, 'f', 0, 64) + "k"
	case a == math.Trunc(a):
		return strconv.FormatFloat(v, 'f', 0, 64)
	default:
		return strconv.FormatFloat(v, 'f', 1, 64)
	}
}

// heatText is a heat value as people read it.
func heatText(h float64) string { return strconv.FormatFloat(h, 'f', 2, 64) }

// heatClass buckets a heat into one of the CSS classes heat-0 .. heat-10.
func heatClass(h float64) string { return "heat-" + strconv.Itoa(heatLevel(h)) }

// heatMeterWidth is the width class of a heat meter bar, in tenths.
func heatMeterClass(h float64) string { return "w-" + strconv.Itoa(heatLevel(h)) }

// heatLevel buckets a heat into 0 (cold) .. 10 (hot) for colour scales;
// heat is clamped to [0, 1], where 1 is a freshly born item.
func heatLevel(h float64) int {
	if math.IsNaN(h) || h <= 0 {
		return 0
	}
	if h >= 1 {
		return 10
	}
	return int(math.Round(h * 10))
}

// HeatColor maps heat to a colour from cold blue through violet and orange
// to hot red (no green on the way, so nothing reads as "fine"), as a
// #rrggbb string for SVG fill attributes. The stylesheet's heat-N classes
// are the same scale at tenths.
func HeatColor(h float64) string {
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

func itoa(n int64) string { return strconv.FormatInt(n, 10) }
