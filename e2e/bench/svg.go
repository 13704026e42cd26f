package bench

import (
	"bytes"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
)

// A small SVG line-chart renderer for the report's charts: panels side by
// side, each with a log-scale x axis (tenant sizes), a linear y axis from
// zero, one line per series with its values written beside the points,
// and a legend, so the chart reads without hovering. The same numbers
// give the same bytes (coordinates are rounded to a tenth of a pixel).

// chartSeries is one line: Y[i] belongs to the panel's X[i].
type chartSeries struct {
	Name  string
	Color string
	Dash  string // stroke-dasharray; "" draws a solid line
	Y     []float64
}

type chartPanel struct {
	Title  string
	YLabel string
	XLabel string
	X      []float64 // increasing, > 0
	Series []chartSeries
	// Format writes a value beside its point.
	Format func(float64) string
}

// Chart geometry, in pixels.
const (
	chartPanelW = 480
	chartPanelH = 380
	chartTitleH = 40
	chartLeft   = 64 // room for the y tick labels and the y label
	chartRight  = 52 // room for the last point's value
	chartTop    = 56 // the panel title and the legend
	chartBottom = 52 // the x tick labels and the x label
)

// renderChart draws panels side by side under a title.
func renderChart(title string, panels []chartPanel) []byte {
	w := chartPanelW * len(panels)
	h := chartTitleH + chartPanelH
	var b bytes.Buffer
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="Helvetica, Arial, sans-serif" font-size="12">`+"\n", w, h, w, h)
	fmt.Fprintf(&b, `<rect x="0" y="0" width="%d" height="%d" fill="#ffffff"/>`+"\n", w, h)
	fmt.Fprintf(&b, `<text x="%d" y="26" text-anchor="middle" font-size="16" font-weight="bold" fill="#222222">%s</text>`+"\n", w/2, xmlText(title))
	for i, p := range panels {
		renderPanel(&b, float64(i*chartPanelW), chartTitleH, p)
	}
	b.WriteString("</svg>\n")
	return b.Bytes()
}

func renderPanel(b *bytes.Buffer, ox, oy float64, p chartPanel) {
	x0, x1 := ox+chartLeft, ox+chartPanelW-chartRight
	y0, y1 := oy+chartPanelH-chartBottom, oy+chartTop // y0 is the bottom
	lo, hi := logRange(p.X)
	xAt := func(v float64) float64 {
		return x0 + (math.Log10(v)-math.Log10(lo))/(math.Log10(hi)-math.Log10(lo))*(x1-x0)
	}
	top, step := yRange(p.Series)
	yAt := func(v float64) float64 { return y0 - v/top*(y0-y1) }

	fmt.Fprintf(b, `<g>`+"\n")
	fmt.Fprintf(b, `<text x="%s" y="%s" text-anchor="middle" font-size="14" font-weight="bold" fill="#222222">%s</text>`+"\n",
		px(ox+chartPanelW/2), px(oy+18), xmlText(p.Title))
	// Horizontal grid and y ticks.
	for v := 0.0; v <= top+step/2; v += step {
		y := yAt(v)
		fmt.Fprintf(b, `<line x1="%s" y1="%s" x2="%s" y2="%s" stroke="#e3e3e3"/>`+"\n", px(x0), px(y), px(x1), px(y))
		fmt.Fprintf(b, `<text x="%s" y="%s" text-anchor="end" fill="#444444">%s</text>`+"\n", px(x0-6), px(y+4), tickLabel(v, step))
	}
	// Vertical grid and x ticks: every power of ten labelled, the steps
	// between drawn short, and 2 and 5 labelled when the range is narrow.
	narrow := math.Log10(hi)-math.Log10(lo) <= 2
	for d := lo; d <= hi*1.0001; d *= 10 {
		for m := 1; m <= 9; m++ {
			v := d * float64(m)
			if v > hi*1.0001 {
				break
			}
			x := xAt(v)
			switch {
			case m == 1:
				fmt.Fprintf(b, `<line x1="%s" y1="%s" x2="%s" y2="%s" stroke="#e3e3e3"/>`+"\n", px(x), px(y1), px(x), px(y0))
				fmt.Fprintf(b, `<line x1="%s" y1="%s" x2="%s" y2="%s" stroke="#444444"/>`+"\n", px(x), px(y0), px(x), px(y0+6))
			default:
				fmt.Fprintf(b, `<line x1="%s" y1="%s" x2="%s" y2="%s" stroke="#888888"/>`+"\n", px(x), px(y0), px(x), px(y0+3))
			}
			if m == 1 || narrow && (m == 2 || m == 5) {
				fmt.Fprintf(b, `<text x="%s" y="%s" text-anchor="middle" fill="#444444">%s</text>`+"\n", px(x), px(y0+18), itemsLabel(int(math.Round(v))))
			}
		}
	}
	// Axes.
	fmt.Fprintf(b, `<line x1="%s" y1="%s" x2="%s" y2="%s" stroke="#444444"/>`+"\n", px(x0), px(y0), px(x1), px(y0))
	fmt.Fprintf(b, `<line x1="%s" y1="%s" x2="%s" y2="%s" stroke="#444444"/>`+"\n", px(x0), px(y0), px(x0), px(y1))
	fmt.Fprintf(b, `<text x="%s" y="%s" text-anchor="middle" fill="#222222">%s</text>`+"\n", px((x0+x1)/2), px(y0+40), xmlText(p.XLabel))
	fmt.Fprintf(b, `<text x="%s" y="%s" text-anchor="middle" fill="#222222" transform="rotate(-90 %s %s)">%s</text>`+"\n",
		px(ox+16), px((y0+y1)/2), px(ox+16), px((y0+y1)/2), xmlText(p.YLabel))
	// Legend, one row under the title.
	lx := x0
	for _, s := range p.Series {
		fmt.Fprintf(b, `<line x1="%s" y1="%s" x2="%s" y2="%s" stroke="%s" stroke-width="2.5"%s/>`+"\n",
			px(lx), px(oy+38), px(lx+22), px(oy+38), s.Color, dashAttr(s.Dash))
		fmt.Fprintf(b, `<text x="%s" y="%s" fill="#222222">%s</text>`+"\n", px(lx+28), px(oy+42), xmlText(s.Name))
		lx += 40 + 7*float64(len(s.Name))
	}
	// Lines and points.
	for _, s := range p.Series {
		pts := make([]string, 0, len(p.X))
		for i, v := range s.Y {
			pts = append(pts, px(xAt(p.X[i]))+","+px(yAt(v)))
		}
		fmt.Fprintf(b, `<polyline points="%s" fill="none" stroke="%s" stroke-width="2.5"%s/>`+"\n", strings.Join(pts, " "), s.Color, dashAttr(s.Dash))
		for i, v := range s.Y {
			fmt.Fprintf(b, `<circle cx="%s" cy="%s" r="3.5" fill="%s"/>`+"\n", px(xAt(p.X[i])), px(yAt(v)), s.Color)
		}
	}
	// Values beside the points, moved apart where two would overlap.
	for i, x := range p.X {
		type label struct {
			y     float64
			text  string
			color string
		}
		ls := make([]label, 0, len(p.Series))
		for _, s := range p.Series {
			ls = append(ls, label{yAt(s.Y[i]) + 4, p.Format(s.Y[i]), s.Color})
		}
		slices.SortStableFunc(ls, func(a, b label) int { return cmpFloat(a.y, b.y) })
		for k := 1; k < len(ls); k++ {
			ls[k].y = max(ls[k].y, ls[k-1].y+13)
		}
		for _, l := range ls {
			fmt.Fprintf(b, `<text x="%s" y="%s" fill="%s" font-weight="bold" stroke="#ffffff" stroke-width="3" paint-order="stroke">%s</text>`+"\n", px(xAt(x)+6), px(l.y-8), l.color, xmlText(l.text))
		}
	}
	b.WriteString("</g>\n")
}

// logRange is the powers of ten around xs (a decade at least).
func logRange(xs []float64) (lo, hi float64) {
	if len(xs) == 0 {
		return 1, 10
	}
	lo = math.Pow(10, math.Floor(math.Log10(slices.Min(xs))+1e-9))
	hi = math.Pow(10, math.Ceil(math.Log10(slices.Max(xs))-1e-9))
	if hi <= lo {
		hi = lo * 10
	}
	return lo, hi
}

// yRange is a round top above every value, with room for the labels, and
// a round tick step that divides it into at most six.
func yRange(ss []chartSeries) (top, step float64) {
	m := 0.0
	for _, s := range ss {
		for _, v := range s.Y {
			m = max(m, v)
		}
	}
	if m <= 0 {
		return 1, 0.2
	}
	raw := m * 1.15 / 5
	mag := math.Pow(10, math.Floor(math.Log10(raw)))
	for _, f := range []float64{1, 2, 2.5, 5, 10} {
		if step = f * mag; step >= raw {
			break
		}
	}
	return math.Ceil(m*1.15/step) * step, step
}

// tickLabel writes v with the fewest decimals that write every multiple
// of step exactly.
func tickLabel(v, step float64) string {
	dec := 0
	for dec < 6 {
		f := step * math.Pow(10, float64(dec))
		if math.Abs(f-math.Round(f)) < 1e-6*max(1, f) {
			break
		}
		dec++
	}
	return strconv.FormatFloat(v, 'f', dec, 64)
}

func px(v float64) string { return strconv.FormatFloat(math.Round(v*10)/10, 'f', -1, 64) }

func dashAttr(d string) string {
	if d == "" {
		return ""
	}
	return ` stroke-dasharray="` + d + `"`
}

func cmpFloat(a, b float64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

func xmlText(s string) string {
	var b strings.Builder
	for _, r := range s {
		switch r {
		case '&':
			b.WriteString("&amp;")
		case '<':
			b.WriteString("&lt;")
		case '>':
			b.WriteString("&gt;")
		case '"':
			b.WriteString("&quot;")
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}
