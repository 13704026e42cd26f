package bench

import (
	"bytes"
	"encoding/xml"
	"errors"
	"flag"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"
)

var update = flag.Bool("update", false, "rewrite golden files under testdata/")

// fixedCurve is a cost curve with made-up figures: the chart's input, not a
// measurement.
func fixedCurve(sizes []int) *CostCurve {
	c := &CostCurve{Step: 2 * time.Second, Rounds: 5, Concurrency: []int{1, 8, 64}}
	for i, n := range sizes {
		f := time.Duration(i + 1)
		p := CostPoint{Items: n, Mem: Rounds{Dist: Dist{N: 60, P50: 900*time.Microsecond + f*700*time.Microsecond,
			P99: 2*time.Millisecond + f*f*1100*time.Microsecond}, Rounds: 5,
			P50Lo: 800 * time.Microsecond * f, P50Hi: 1100 * time.Microsecond * f},
			FromMemPath: i%2 == 0, ArenaBytes: int64(n) * 171, ArenaItems: n + 400}
		for j, k := range c.Concurrency {
			rate := 400/float64(i+1) + 150*float64(j)
			p.Throughput = append(p.Throughput, ConcPoint{Concurrency: k, Rate: rate, RateLo: rate * 0.9, RateHi: rate * 1.1,
				Latency:  Rounds{Dist: Dist{N: 100, P50: time.Duration(k) * time.Millisecond * f, P99: time.Duration(k) * 3 * time.Millisecond * f}, Rounds: 5},
				Requests: int(rate * 10)})
		}
		c.Points = append(c.Points, p)
	}
	return c
}

// wellFormed reads b as XML to the end.
func wellFormed(b []byte) error {
	d := xml.NewDecoder(bytes.NewReader(b))
	for {
		if _, err := d.Token(); err != nil {
			if errors.Is(err, io.EOF) {
				return nil
			}
			return err
		}
	}
}

// TestCostSVGGolden renders the cost curve chart of fixed figures and
// compares it with the golden file (go test -update rewrites it): a
// change of the renderer shows as a diff of the picture's source.
func TestCostSVGGolden(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		sizes []int
	}{
		{"full", []int{10_000, 100_000, 250_000, 1_000_000}},
		{"quick", []int{10_000, 50_000}},
		{"smoke", []int{300, 600}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r := &Report{Cost: fixedCurve(tc.sizes)}
			got := r.CostSVG()
			if !bytes.Equal(got, r.CostSVG()) {
				t.Fatal("two renderings of the same figures differ")
			}
			if err := wellFormed(got); err != nil {
				t.Fatalf("not well-formed XML: %v", err)
			}
			path := filepath.Join("testdata", "cost-"+tc.name+".svg")
			if *update {
				if err := os.WriteFile(path, got, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v (go test -update writes it)", err)
			}
			if !bytes.Equal(got, want) {
				t.Errorf("%s differs from the rendering (go test -update rewrites it)", path)
			}
		})
	}
}

func TestCostSVGNone(t *testing.T) {
	t.Parallel()
	for _, r := range []*Report{{}, {Cost: &CostCurve{Concurrency: []int{1}}}} {
		if b := r.CostSVG(); b != nil {
			t.Errorf("a report without cost points renders a chart of %d bytes", len(b))
		}
	}
}

func TestYRange(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		max, top, step float64
	}{
		{0, 1, 0.2},
		{1, 1.25, 0.25},
		{3.4, 4, 1},
		{9.2, 12.5, 2.5},
		{480, 600, 200},
	} {
		top, step := yRange([]chartSeries{{Y: []float64{tc.max / 2, tc.max}}})
		if top != tc.top || step != tc.step {
			t.Errorf("yRange(max %g) = %g, %g; want %g, %g", tc.max, top, step, tc.top, tc.step)
		}
		if top < tc.max {
			t.Errorf("yRange(max %g): top %g below the values", tc.max, top)
		}
	}
}
