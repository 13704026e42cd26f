package bench

import (
	"fmt"
	"strings"
	"time"
)

// The v3 figures of the report (issue 16): targets and the rows the
// sections add beside v1's.

// PooledResult is the memory path of one tenant holding many users' items,
// each question asked as one user, under v1 and v3 (same items, same
// questions).
type PooledResult struct {
	Users, Items int
	// Visible is the mean number of items the asking user sees (theirs).
	Visible float64
	V1, V3  MemPathResult
}

// memV3Limit is how much the memory path on v3 may add to v1's at 250k.
const memV3Limit = 1500 * time.Microsecond

// memPathTargets hold the memory path at 250k items to issue 20's p50 and
// p99 on the default dictionary (v3, which new tenants get: the v3 rows),
// with v1's figure beside it; without a v3 row, on v1.
func (r *Report) memPathTargets() []Target {
	p, ok := at(r.MemPath, 250_000)
	if !ok {
		return nil
	}
	on, base := p, "v1 p50 "+ms(p.Total.P50)+" ms"
	for _, p3 := range r.MemPathV3 {
		if p3.Items == 250_000 {
			on = p3
		}
	}
	dict := fmt.Sprintf("v%d", on.Dict)
	if on.Dict == 0 {
		dict = "v1"
	}
	return []Target{
		id("mem", durTarget("2", "memory path (capture + retrieve + render, no HTTP) at 250k, "+dict+": p50 <= 5 ms", on.Total.P50, 5*time.Millisecond, base)),
		id("mem99", durTarget("2", "memory path at 250k, "+dict+": p99 <= 12 ms", on.Total.P99, 12*time.Millisecond, "v1 p99 "+ms(p.Total.P99)+" ms")),
	}
}

func (r *Report) memV3Targets() []Target {
	var ts []Target
	for _, p3 := range r.MemPathV3 {
		p1, ok := at(r.MemPath, p3.Items)
		if !ok || p3.Items != 250_000 {
			continue
		}
		ts = append(ts, id("mem-v3", durTarget("2", "memory path on v3 at 250k: p50 <= v1 p50 + 1.5 ms", p3.Total.P50, p1.Total.P50+memV3Limit,
			"v1 p50 "+ms(p1.Total.P50)+" ms")))
	}
	return ts
}

func (r *Report) scanV3Targets() []Target {
	var ts []Target
	var last *ScanResult
	for i, s := range r.Scan {
		if s.V3 == nil {
			continue
		}
		last = &r.Scan[i]
		limit := time.Duration(0)
		switch s.Items {
		case 250_000:
			limit = 2 * time.Millisecond
		case 1_000_000:
			limit = 8 * time.Millisecond
		}
		if limit > 0 {
			ts = append(ts, id("scan-v3", durTarget("4", fmt.Sprintf("v3 hybrid scan p50 at %s items <= %s ms", itemsLabel(s.Items), ms(limit)),
				s.V3.Scan.P50, limit, fmt.Sprintf("v1 p50 %s ms (v3/v1 %.2fx)", ms(s.Scan.P50), s.V3Ratio()))))
		}
	}
	if last != nil {
		ts = append(ts, id("arena-v3", atMostTarget("4", fmt.Sprintf("v3 arena <= 450 bytes per item (at %s)", itemsLabel(last.Items)),
			last.V3.BytesPerItem, 450, "B/item", fmt.Sprintf("v1 %.0f B/item", last.BytesPerItem))))
	}
	return ts
}

// vsV1 is "+0.41 ms (1.05x)": the subject's p50 against the baseline's.
func vsV1(subj, base time.Duration) string {
	d := subj - base
	sign := "+"
	if d < 0 {
		sign, d = "−", -d
	}
	return fmt.Sprintf("%s%s ms (%.2fx)", sign, ms(d), float64(subj)/float64(max(1, base)))
}

func memRow(label string, p MemPathResult) []string {
	return []string{label, ms(p.Capture.P50), ms(p.Capture.P99), ms(p.Alone.P50), ms(p.Frame.P50), ms(p.Frame.P99),
		"**" + ms(p.Total.P50) + "**", ms(p.Total.P99), spread(p.Total.P50Lo, p.Total.P50Hi), ms(p.Scan.P50), ms(p.Render.P50)}
}

func memHead() []string {
	return []string{"", "capture p50", "p99", "capture alone p50", "frame past capture p50", "p99", "memory path p50", "p99", "p50 spread", "frame's scan p50", "render p50"}
}

// pooled writes the pooled tenant's memory path, v1 beside v3.
func (r *Report) pooled(m *mdw) {
	p := r.Pooled
	if p == nil {
		return
	}
	m.p("**Pooled tenant.** %d memory users hold %s items in one tenant (the same synthetic text, its own corpus);", p.Users, itemsLabel(p.Items))
	m.p("each question is asked as the owner of a stored item, who sees their own items only (%.0f on average), so", p.Visible)
	m.p("the tenant-wide statistics cover every user while the scan ranks one user's. The same questions go to")
	m.p("the tenant on v1 and a second tenant with the same items on v3, back to back in turn. Milliseconds.")
	m.p("")
	m.table(append(memHead(), "v3 vs v1 (p50)"), [][]string{
		append(memRow(fmt.Sprintf("%s items, %d users, v1", itemsLabel(p.Items), p.Users), p.V1), "–"),
		append(memRow(fmt.Sprintf("%s items, %d users, v3", itemsLabel(p.Items), p.Users), p.V3), vsV1(p.V3.Total.P50, p.V1.Total.P50)),
	})
}

// denseNotes says what this run's figures tell about a missed v3 target.
func (r *Report) denseNotes(m *mdw) {
	var parts []string
	for _, s := range r.Scan {
		if s.V3 == nil {
			continue
		}
		parts = append(parts, fmt.Sprintf("%s: v3 %s ms against v1 %s ms (%.2fx), CPU per query %s against %s ms, %.0f against %.0f bytes per item",
			itemsLabel(s.Items), ms(s.V3.Scan.P50), ms(s.Scan.P50), s.V3Ratio(), ms(s.V3.CPUPerQuery), ms(s.CPUPerQuery),
			s.V3.BytesPerItem, s.BytesPerItem))
	}
	if len(parts) > 0 {
		m.p("**Dictionary v3 (§4).** %s. The hybrid scan scores every visible item densely as well as lexically", strings.Join(parts, "; "))
		m.p("(memory/arena/hybrid.go), so its cost grows with the visible items, not with the items sharing a query word;")
		m.p("each item also holds its int8 vector.")
	}
	for _, p3 := range r.MemPathV3 {
		if p1, ok := at(r.MemPath, p3.Items); ok && p3.Items == 250_000 {
			m.p("On the memory path at 250k the v3 frame takes %s ms past its capture at p50 against %s ms on v1, capture %s against %s ms.",
				ms(p3.Frame.P50), ms(p1.Frame.P50), ms(p3.Capture.P50), ms(p1.Capture.P50))
		}
	}
	m.p("")
}

// pipelineTarget is the full pipeline at 250k items the target is judged
// on: the default dictionary's (issue 20 §6) when the run measured it,
// else the bench tenant's; label names v3.
func (r *Report) pipelineTarget() (PipelineResult, string, bool) {
	if p, ok := at(r.PipelineV3, 250_000); ok {
		return p, ", v3 (the default)", true
	}
	p, ok := at(r.Pipeline, 250_000)
	return p, "", ok
}
