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

func itoa(n int64) string { return strconv.FormatInt(n, 10) }
