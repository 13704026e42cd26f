package bench

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// CostSVG is the cost curve's chart (nil without a cost curve): the
// memory path's p50 and p99 and the throughput at each concurrency
// against the tenant's size.
func (r *Report) CostSVG() []byte {
	c := r.Cost
	if c == nil || len(c.Points) == 0 {
		return nil
	}
	xs := make([]float64, len(c.Points))
	p50 := chartSeries{Name: "p50", Color: "#1f77b4"}
	p99 := chartSeries{Name: "p99", Color: "#d62728", Dash: "7 4"}
	for i, p := range c.Points {
		xs[i] = float64(p.Items)
		p50.Y = append(p50.Y, msFloat(p.Mem.P50))
		p99.Y = append(p99.Y, msFloat(p.Mem.P99))
	}
	colors := []string{"#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#17becf"}
	dashes := []string{"", "7 4", "2 3", "", "7 4"}
	var rates []chartSeries
	for j, conc := range c.Concurrency {
		s := chartSeries{Name: "c=" + strconv.Itoa(conc), Color: colors[j%len(colors)], Dash: dashes[j%len(dashes)]}
		for _, p := range c.Points {
			v := 0.0
			if j < len(p.Throughput) {
				v = p.Throughput[j].Rate
			}
			s.Y = append(s.Y, v)
		}
		rates = append(rates, s)
	}
	const xl = "items in the tenant (log scale)"
	return renderChart("Cost curve: memory path and throughput by tenant size", []chartPanel{
		{Title: "Memory path (capture + frame, no HTTP)", YLabel: "milliseconds", XLabel: xl, X: xs,
			Series: []chartSeries{p50, p99}, Format: func(v float64) string { return trimFloat(v, decimalsFor(v)) }},
		{Title: "Full pipeline throughput, memory on", YLabel: "requests per second", XLabel: xl, X: xs,
			Series: rates, Format: func(v float64) string { return trimFloat(v, 0) }},
	})
}

func decimalsFor(v float64) int {
	switch {
	case v >= 100:
		return 0
	case v >= 10:
		return 1
	}
	return 2
}

// costCurve is section 2b.
func (r *Report) costCurve(m *mdw) {
	c := r.Cost
	if c == nil || len(c.Points) == 0 {
		return
	}
	sizes := make([]string, len(c.Points))
	for i, p := range c.Points {
		sizes[i] = itemsLabel(p.Items)
	}
	concs := make([]string, len(c.Concurrency))
	for i, k := range c.Concurrency {
		concs[i] = strconv.Itoa(k)
	}
	m.p("## 2b. Cost curve")
	m.p("")
	m.p("What memory costs as the tenant grows: the bench tenant of §2 measured as it grows through %s items", joinAnd(sizes))
	m.p("(the same growth and corpus; at the sizes §2 measures, after §2). At each size: the memory path as in §2")
	m.p("(capture + frame, no HTTP; at the sizes §2 measured it, §2's figures), the resident arena of that path's")
	m.p("engine (`memory.Engine.Resident`, holding the loaded items and what the bench captured before), and the full")
	m.p("pipeline (capture and recall on, through HTTP, as §2's requests) in a closed loop: %s clients, each sending", joinAnd(concs))
	m.p("its next request when its last one returned, for %s per concurrency in each of %d rounds; the rate is the", c.Step, c.Rounds)
	m.p("median over the rounds, the latencies the median of each round's percentile.")
	m.p("")
	if r.CostChart != "" {
		m.p("![Cost curve: memory path p50 and p99, and throughput at concurrency %s, by tenant size](%s)", joinAnd(concs), r.CostChart)
	} else {
		m.p("(The chart is written beside the markdown when the run writes it to a file, `--out FILE`.)")
	}
	m.p("")
	rows := make([][]string, len(c.Points))
	for i, p := range c.Points {
		src := "own"
		if p.FromMemPath {
			src = "§2"
		}
		rows[i] = []string{itemsLabel(p.Items), "**" + ms(p.Mem.P50) + "**", "**" + ms(p.Mem.P99) + "**", spread(p.Mem.P50Lo, p.Mem.P50Hi),
			src, fmt.Sprintf("%.1f", float64(p.ArenaBytes)/(1<<20)), strconv.Itoa(p.ArenaItems), fmt.Sprintf("%.0f", p.BytesPerItem())}
	}
	m.table([]string{"items", "memory path p50 (ms)", "p99", "p50 spread", "measured by", "arena (MiB)", "arena items", "arena B/item"}, rows, 4)
	head := []string{"items"}
	for _, k := range c.Concurrency {
		head = append(head, fmt.Sprintf("c=%d req/s", k), "p50 (ms)", "p99 (ms)")
	}
	var failed []string
	rows = make([][]string, len(c.Points))
	for i, p := range c.Points {
		row := []string{itemsLabel(p.Items)}
		for _, t := range p.Throughput {
			row = append(row, fmt.Sprintf("**%.0f**", t.Rate), ms(t.Latency.P50), ms(t.Latency.P99))
			if t.Failed > 0 {
				failed = append(failed, fmt.Sprintf("%s items at c=%d: %d of %d (first: %s)", itemsLabel(p.Items), t.Concurrency,
					t.Failed, t.Failed+t.Requests, t.FirstError))
			}
		}
		rows[i] = row
	}
	m.table(head, rows)
	if len(failed) > 0 {
		m.p("Failed requests (not in the rates): %s.", strings.Join(failed, "; "))
		m.p("")
	}
}

func msFloat(d time.Duration) float64 { return float64(d) / 1e6 }

// joinAnd is "a, b and c".
func joinAnd(xs []string) string {
	if len(xs) < 2 {
		return strings.Join(xs, "")
	}
	return strings.Join(xs[:len(xs)-1], ", ") + " and " + xs[len(xs)-1]
}
