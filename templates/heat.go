package templates

import (
	"math"
	"strconv"
)

// HeatScale places heat on every heat picture. It is logarithmic: the law
// is an exponential decay, so on it a decay is a straight line, and heat
// spans two orders of magnitude between a retrieval's peak and the warm
// threshold, which a linear scale capped at 1 squashed into "full". The
// console fills it from memory's constants; the pictures only read it.
type HeatScale struct {
	Warm float64 // below it an item is cold: only retrieval brings it back
	Born float64 // a newborn item's heat
	Max  float64 // the highest peak the law reaches (a retrieval's best match)
}

// floor is the bottom of the scale: heat below it is drawn at the bottom.
// A fifth of the warm threshold leaves the cold zone room to show depth.
func (s HeatScale) floor() float64 { return s.Warm / 5 }

func (s HeatScale) valid() bool { return s.Warm > 0 && s.Max > s.Warm }

// Pos is h's place on the scale, from 0 (the floor or below) to 1 (Max or
// above); a scale that is not set places everything at 0.
func (s HeatScale) Pos(h float64) float64 {
	if !s.valid() || math.IsNaN(h) || h <= s.floor() {
		return 0
	}
	p := math.Log(h/s.floor()) / math.Log(s.Max/s.floor())
	return math.Min(p, 1)
}

// Level buckets h into 0..10 for the stylesheet's heat-N classes.
func (s HeatScale) Level(h float64) int { return int(math.Round(s.Pos(h) * 10)) }

// Class is the heat-N class of h.
func (s HeatScale) Class(h float64) string { return "heat-" + strconv.Itoa(s.Level(h)) }

// Color is h's colour as #rrggbb, for SVG fill attributes.
func (s HeatScale) Color(h float64) string { return s.PosColor(s.Pos(h)) }

// PosColor maps a place on the scale to a colour: deep blue at the floor,
// violet at the warm threshold, orange at a newborn's heat and red at the
// highest peak, with no green on the way so nothing reads as "fine". The
// stylesheet's heat-N classes are PosColor(N/10).
func (s HeatScale) PosColor(p float64) string {
	type stop struct {
		at  float64
		rgb [3]float64
	}
	stops := []stop{
		{0, [3]float64{0x1e, 0x3a, 0x8a}},             // cold: deep blue
		{s.Pos(s.Warm), [3]float64{0x7c, 0x3a, 0xed}}, // the warm line: violet
		{s.Pos(s.Born), [3]float64{0xf9, 0x73, 0x16}}, // newborn: orange
		{1, [3]float64{0xdc, 0x26, 0x26}},             // a retrieval's peak: red
	}
	if math.IsNaN(p) || p < 0 {
		p = 0
	}
	p = math.Min(p, 1)
	i := 0
	for i < len(stops)-2 && p > stops[i+1].at {
		i++
	}
	f := 0.0
	if span := stops[i+1].at - stops[i].at; span > 0 {
		f = math.Min(math.Max((p-stops[i].at)/span, 0), 1)
	}
	const hex = "0123456789abcdef"
	b := []byte{'#', 0, 0, 0, 0, 0, 0}
	for k := range 3 {
		v := int(math.Round(stops[i].rgb[k] + (stops[i+1].rgb[k]-stops[i].rgb[k])*f))
		b[1+2*k] = hex[v>>4]
		b[2+2*k] = hex[v&15]
	}
	return string(b)
}

// Ticks are the heats an axis labels: the highest peak, a newborn's heat,
// two round values between, and the warm threshold.
func (s HeatScale) Ticks() []float64 {
	out := []float64{s.Max, s.Born}
	for _, v := range []float64{0.5, 0.2} {
		if v > s.Warm*1.5 && v < s.Born {
			out = append(out, v)
		}
	}
	return append(out, s.Warm)
}

// HeatTick is one labelled place on an axis.
type HeatTick struct {
	X, Y   float64
	Label  string
	Anchor string // SVG text-anchor
}

// HeatMark is a dot on a heat curve: birth or an adopted reheat.
type HeatMark struct {
	X, Y  float64
	Title string
}

// HeatCurve is an item's heat over the token clock, ready to draw: the
// past solid, the decay ahead (if nothing reheats it) dashed down to the
// warm line, heat on the log scale with its ticks, now marked and labelled.
type HeatCurve struct {
	W, H                     float64
	Left, Right, Top, Bottom float64 // the plot's box
	Past                     string  // path: decay curves joined by the jumps of reheats, up to now
	Area                     string  // the past, closed to the bottom
	Future                   string  // path: the decay from now to where it turns cold
	Marks                    []HeatMark
	YTicks                   []HeatTick
	XTicks                   []HeatTick
	WarmY                    float64
	NowX, NowY               float64
	NowColor                 string
	NowLabel                 HeatTick // heat now, beside the now dot
	Current                  float64
	Reheats                  int
	Warm                     bool // heat now is at or above the warm threshold
}

// heatCurveMargins leave room for the heat labels on the left and the
// clock labels below.
const (
	curveLeft, curveRight, curveTop, curveBottom = 30.0, 8.0, 10.0, 22.0
	clockLabelGap                                = 62.0 // closer x labels would overlap
	// curveInset keeps the clock clear of the heat axis, so marks at birth
	// do not sit on it.
	curveInset = 6.0
)

// NewHeatCurve lays out hh in a w x h box: x is the owner's token clock
// from the item's birth to where it turns cold (or now, if later), y is
// heat on hh.Scale.
func NewHeatCurve(hh HeatHistory, w, h float64) HeatCurve {
	segs := hh.Segments
	if len(segs) == 0 {
		segs = []HeatSegment{{}} // no history: drawn as a cold birth
	}
	start := segs[0].Clock
	end := max(hh.End, hh.Now)
	if n := len(hh.Projection); n > 0 {
		end = max(end, int64(math.Ceil(hh.Projection[n-1].Clock)))
	}
	if end <= start {
		end = start + 1
	}
	c := HeatCurve{W: w, H: h, Left: curveLeft, Right: w - curveRight, Top: curveTop, Bottom: h - curveBottom,
		Current: hh.Current, Reheats: len(segs) - 1, Warm: hh.Scale.valid() && hh.Current >= hh.Scale.Warm}
	xs := func(clock float64) float64 {
		return c.Left + curveInset + (clock-float64(start))/float64(end-start)*(c.Right-c.Left-curveInset)
	}
	ys := func(v float64) float64 { return c.Bottom - hh.Scale.Pos(v)*(c.Bottom-c.Top) }
	var past, future pathBuilder
	for i, s := range segs {
		past.to(xs(float64(s.Clock)), ys(s.Peak))
		for _, p := range s.Samples {
			past.to(xs(p.Clock), ys(p.Heat))
		}
		title := "born at clock " + Count(s.Clock) + ", heat " + heatText(s.Peak)
		if i > 0 {
			title = "reheated by a retrieval at clock " + Count(s.Clock) + " to " + heatText(s.Peak)
		}
		c.Marks = append(c.Marks, HeatMark{X: xs(float64(s.Clock)), Y: ys(s.Peak), Title: title})
	}
	c.Past = past.String()
	c.Area = c.Past + " L" + num(past.x) + " " + num(c.Bottom) + " L" + num(xs(float64(start))) + " " + num(c.Bottom) + " Z"
	if len(hh.Projection) > 0 {
		future.to(xs(float64(hh.Now)), ys(hh.Current))
		for _, p := range hh.Projection {
			future.to(xs(p.Clock), ys(p.Heat))
		}
		c.Future = future.String()
	}
	for _, v := range hh.Scale.Ticks() {
		c.YTicks = append(c.YTicks, HeatTick{X: c.Left - 4, Y: ys(v), Label: tickText(v), Anchor: "end"})
	}
	c.WarmY = ys(hh.Scale.Warm)
	c.NowX, c.NowY = xs(float64(hh.Now)), ys(hh.Current)
	c.NowColor = hh.Scale.Color(hh.Current)
	c.NowLabel = HeatTick{X: c.NowX + 6, Y: math.Max(c.NowY-5, c.Top+8), Label: heatText(hh.Current), Anchor: "start"}
	if c.NowX > c.Right-34 {
		c.NowLabel.X, c.NowLabel.Anchor = c.NowX-6, "end"
	}
	c.XTicks = clockTicks(c, xs, start, hh)
	return c
}

// clockTicks labels birth, now and the turn to cold on the clock axis,
// dropping birth or cold where they would overlap now's label.
func clockTicks(c HeatCurve, xs func(float64) float64, start int64, hh HeatHistory) []HeatTick {
	y := c.H - 8
	nowAnchor := "middle"
	switch {
	case c.NowX > c.Right-clockLabelGap/2:
		nowAnchor = "end"
	case c.NowX < c.Left+clockLabelGap/2:
		nowAnchor = "start"
	}
	ticks := []HeatTick{{X: c.NowX, Y: y, Label: "now " + Count(hh.Now), Anchor: nowAnchor}}
	if bx := xs(float64(start)); c.NowX-bx >= clockLabelGap*1.5 {
		ticks = append([]HeatTick{{X: bx, Y: y, Label: "born " + Count(start), Anchor: "start"}}, ticks...)
	}
	if hh.ColdAt > hh.Now && len(hh.Projection) > 0 {
		if cx := xs(float64(hh.ColdAt)); cx-c.NowX >= clockLabelGap*1.5 {
			ticks = append(ticks, HeatTick{X: cx, Y: y, Label: "cold " + Count(hh.ColdAt), Anchor: "end"})
		}
	}
	return ticks
}

// pathBuilder writes an SVG path of straight steps.
type pathBuilder struct {
	b    []byte
	x, y float64
}

func (p *pathBuilder) to(x, y float64) {
	if len(p.b) == 0 {
		p.b = append(p.b, 'M')
	} else {
		p.b = append(p.b, " L"...)
	}
	p.b = append(p.b, num(x)+" "+num(y)...)
	p.x, p.y = x, y
}

func (p *pathBuilder) String() string { return string(p.b) }

// StripBar is one turn in a conversation's heat strip.
type StripBar struct {
	X, Y, W, H float64
	Color      string
	Title      string
	Anchor     string
	Label      string // the turn's number, on every turn there is room for
	LabelX     float64
}

// maxStripBar is the widest a turn's bar is drawn.
const maxStripBar = 36.0

// HeatStrip is a conversation's turns side by side, each a bar as high as
// its heat now on the log scale, over the warm line.
type HeatStrip struct {
	W, H                     float64
	Left, Right, Top, Bottom float64
	Bars                     []StripBar
	YTicks                   []HeatTick
	WarmY                    float64
	Warm                     int // turns at or above the warm threshold
}

// NewHeatStrip lays out items in a w x h box in conversation order.
func NewHeatStrip(items []Item, scale HeatScale, w, h float64) HeatStrip {
	s := HeatStrip{W: w, H: h, Left: curveLeft, Right: w - 4, Top: 6, Bottom: h - 14}
	ys := func(v float64) float64 { return s.Bottom - scale.Pos(v)*(s.Bottom-s.Top) }
	for _, v := range scale.Ticks() {
		s.YTicks = append(s.YTicks, HeatTick{X: s.Left - 4, Y: ys(v), Label: tickText(v), Anchor: "end"})
	}
	s.WarmY = ys(scale.Warm)
	if len(items) == 0 {
		return s
	}
	// A short conversation keeps narrow bars: width is turns, not heat.
	cw := math.Min((s.Right-s.Left)/float64(len(items)), maxStripBar)
	every := int(math.Ceil(18 / cw)) // a label needs about 18 units
	for i, it := range items {
		hNow := it.Heat.Current
		if scale.valid() && hNow >= scale.Warm {
			s.Warm++
		}
		top := ys(hNow)
		b := StripBar{
			X: s.Left + float64(i)*cw, W: math.Max(cw-1, 0.5), Y: top, H: math.Max(s.Bottom-top, 1),
			Color:  scale.Color(hNow),
			Title:  "turn " + strconv.Itoa(i+1) + " (" + it.Role + "): heat " + heatText(hNow),
			Anchor: "#item-" + strconv.FormatInt(it.ID, 10),
		}
		if b.Y+b.H > s.Bottom {
			b.Y = s.Bottom - b.H
		}
		if i%every == 0 {
			b.Label, b.LabelX = strconv.Itoa(i+1), b.X+b.W/2
		}
		s.Bars = append(s.Bars, b)
	}
	return s
}

// HeatBin is one bar of a user's heat overview: how many of their items
// have a heat above From up to To (the cold bin: below the warm line).
type HeatBin struct {
	Label string
	From  float64
	To    float64
	Count int64
	Cold  bool
}

// HeatOverview is the distribution of one user's items by heat now.
type HeatOverview struct {
	Scale HeatScale
	Bins  []HeatBin
	Total int64
	Warm  int64
}

// NewHeatBins are the empty bins of a user's heat overview: cold, then
// warm ranges split at the scale's ticks, the last one above a newborn's
// heat (only a retrieval takes an item there).
func NewHeatBins(s HeatScale) []HeatBin {
	edges := []float64{s.Warm}
	ticks := s.Ticks()
	for i := len(ticks) - 2; i >= 1; i-- { // ascending, without Max and Warm
		edges = append(edges, ticks[i])
	}
	bins := []HeatBin{{Label: "cold, below " + tickText(s.Warm), From: 0, To: s.Warm, Cold: true}}
	for i, from := range edges {
		to := s.Max
		label := "over " + tickText(from) + ", reheated"
		if i+1 < len(edges) {
			to = edges[i+1]
			label = tickText(from) + " to " + tickText(to)
		}
		bins = append(bins, HeatBin{Label: label, From: from, To: to})
	}
	return bins
}

// Add counts one item of heat h: a newborn's exact heat is in the bin
// below it, so the top bin holds only what a retrieval reheated.
func (o *HeatOverview) Add(h float64) {
	o.Total++
	warm := o.Scale.valid() && h >= o.Scale.Warm
	if warm {
		o.Warm++
	}
	for i := len(o.Bins) - 1; i >= 1 && warm; i-- {
		if h > o.Bins[i].From || i == 1 {
			o.Bins[i].Count++
			return
		}
	}
	if len(o.Bins) > 0 {
		o.Bins[0].Count++
	}
}

// HistRow is one laid-out bar of the heat overview.
type HistRow struct {
	Y, BarW   float64
	Label     string
	Count     string
	Color     string
	CountX    float64
	Cold      bool
	DataCount int64
}

// HeatHistogram is the heat overview laid out: one row per bin, the bar's
// length proportional to the count, coloured by the bin's lower heat.
type HeatHistogram struct {
	W, H      float64
	BarLeft   float64
	Rows      []HistRow
	RowHeight float64
}

// NewHeatHistogram lays o out w wide.
func NewHeatHistogram(o HeatOverview, w float64) HeatHistogram {
	const rowH, barLeft, countRoom = 22.0, 118.0, 70.0
	g := HeatHistogram{W: w, H: rowH*float64(len(o.Bins)) + 4, BarLeft: barLeft, RowHeight: rowH}
	var most int64
	for _, b := range o.Bins {
		most = max(most, b.Count)
	}
	// Hottest first, as the curves put hot at the top.
	for i := len(o.Bins) - 1; i >= 0; i-- {
		b := o.Bins[i]
		bw := 0.0
		if most > 0 {
			bw = float64(b.Count) / float64(most) * (w - barLeft - countRoom)
		}
		colorAt := b.From
		if b.Cold {
			colorAt = o.Scale.floor()
		}
		row := len(o.Bins) - 1 - i
		g.Rows = append(g.Rows, HistRow{
			Y: float64(row)*rowH + 4, BarW: math.Max(bw, 0), Label: b.Label, Count: Count(b.Count),
			Color: o.Scale.Color(colorAt), CountX: barLeft + math.Max(bw, 0) + 6, Cold: b.Cold, DataCount: b.Count,
		})
	}
	return g
}

// MeterGeom is the heat meter of an item card: a bar as long as heat's
// place on the scale, with the warm threshold ticked.
type MeterGeom struct {
	W, H  float64
	FillW float64
	WarmX float64
	Color string
}

// NewMeter lays out the meter of heat h.
func NewMeter(s HeatScale, h, w float64) MeterGeom {
	return MeterGeom{W: w, H: 10, FillW: math.Max(s.Pos(h)*w, 1), WarmX: s.Pos(s.Warm) * w, Color: s.Color(h)}
}

// HeatWords says in a sentence what an item's heat picture shows.
func HeatWords(hh HeatHistory) string {
	s := "Heat now " + heatText(hh.Current)
	reheats := max(len(hh.Segments)-1, 0)
	born := ""
	if len(hh.Segments) > 0 {
		born = "born at clock " + Count(hh.Segments[0].Clock) + ", "
	}
	times := "reheated " + Count(int64(reheats)) + " times"
	if reheats == 1 {
		times = "reheated once"
	} else if reheats == 0 {
		times = "never reheated"
	}
	switch {
	case !hh.Scale.valid():
		return s + "; " + born + times + "."
	case hh.Current >= hh.Scale.Warm:
		s += " (warm); " + born + times + "; "
		if hh.ColdAt > hh.Now {
			s += "turns cold at clock " + Count(hh.ColdAt) + ", " + Count(hh.ColdAt-hh.Now) + " tokens from now, unless a retrieval reheats it."
		} else {
			s += "turns cold now unless a retrieval reheats it."
		}
		return s
	default:
		return s + " (cold, below " + tickText(hh.Scale.Warm) + "); " + born + times + "; cold since clock " + Count(hh.ColdAt) +
			": only a retrieval match brings it back."
	}
}

// LegendStop is one step of the legend's colour bar.
type LegendStop struct {
	X, W  float64
	Color string
}

// HeatLegendBar is the colour scale laid out w wide, with its ticks.
type HeatLegendBar struct {
	W     float64
	Stops []LegendStop
	Ticks []HeatTick
	WarmX float64
}

// NewHeatLegendBar lays out the colour scale in 40 steps.
func NewHeatLegendBar(s HeatScale, w float64) HeatLegendBar {
	const steps = 40
	g := HeatLegendBar{W: w, WarmX: s.Pos(s.Warm) * w}
	for i := range steps {
		p := (float64(i) + 0.5) / steps
		g.Stops = append(g.Stops, LegendStop{X: float64(i) * w / steps, W: w/steps + 0.2, Color: s.PosColor(p)})
	}
	for _, v := range s.Ticks() {
		t := HeatTick{X: s.Pos(v) * w, Label: tickText(v), Anchor: "middle"}
		switch {
		case t.X < 8:
			t.Anchor = "start"
		case t.X > w-8:
			t.Anchor = "end"
		}
		g.Ticks = append(g.Ticks, t)
	}
	return g
}

// tickText writes an axis heat compactly: 2, 1, 0.5, 0.05.
func tickText(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) }

// heatText is a heat value as people read it.
func heatText(h float64) string { return strconv.FormatFloat(h, 'f', 2, 64) }
