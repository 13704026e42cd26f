package bench

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"time"
)

// notes writes the closing section: for each group of missed targets, what
// this run's own figures say about why.
func (r *Report) notes(m *mdw) {
	missed := map[string]Target{}
	var order []Target
	for _, t := range r.Targets() {
		if !t.Met {
			missed[t.ID] = t
			order = append(order, t)
		}
	}
	if len(order) == 0 {
		return
	}
	m.p("## Why targets are missed")
	m.p("")
	for _, t := range order {
		m.p("- §%s %s: %s.", t.Section, t.What, t.Miss)
	}
	m.p("")
	has := func(ids ...string) bool {
		for _, id := range ids {
			if _, ok := missed[id]; ok {
				return true
			}
		}
		return false
	}
	if p := r.Pass; p != nil && has("pass50", "pass99", "ttfb") {
		key, conv, rec, trip := p.Component("key"), p.Component("conv"), p.Component("record"), p.Component("trip")
		db := key.P50 + conv.P50
		m.p("**Pass-through (§1).** Timed alone, the key lookup costs %s ms at p50 and the conversation lookup %s ms", ms(key.P50), ms(conv.P50))
		m.p("(together %s ms, %.0f%% of the %s ms added). Resolved keys and tenants' limits are trusted for 2 s per",
			ms(db), pct(db, p.C1.Added50), ms(p.C1.Added50))
		m.p("process and read again in the background once they are 1 s old (proxy/fresh), and a request with")
		m.p("capture and recall off asks for no conversation, so none of these sits on a request of a key in steady")
		m.p("use; a plain 2 s cache made the first request of a key every 2 s wait for both reads.")
		m.p("One more HTTP hop through the plainest Go proxy adds %s ms here.", ms(p.Hop.Added50))
		if rest := p.C1.Added50 - p.Hop.Added50; rest > 0 {
			m.p("The remaining %s ms is Perpetuity's own handling (reading the body, parsing and re-encoding it,", ms(rest))
			m.p("routing) and the contention described next.")
		}
		m.p("For a stream the first event arrives %s ms later at p50, against %s ms for the plain hop.",
			ms(p.TTFB.Added50), ms(p.HopTTFB.Added50))
		if streamTailLine(p.TTFBTail) != "" {
			m.p("§1 splits the slowest of them by the proxy's Server-Timing.")
		}
		m.p("The request records of figures alone (one costs %s ms at p50) are written after the replies in batches, one", ms(rec.P50))
		m.p("transaction every 250 ms or 256 records (proxy/records.go), on the same cores and through the same")
		m.p("connection pool (%d connections, the server's default for this machine): a batch falls beside a request", p.PoolConns)
		m.p("now and then, where each record on its own fell beside the next request.")
		m.p("At %d concurrent conversations the client, the server and the fake provider share the two cores", p.Concurrency)
		if t := r.Throughput; t != nil && t.Base.Rate > 0 {
			m.p("(the pass-through path sustains %.0f requests/s, §6), so requests wait in line: %s ms added at p50.", t.Base.Rate, ms(p.CMany.Added50))
		} else {
			m.p("and requests wait in line: %s ms added at p50.", ms(p.CMany.Added50))
		}
		m.p("A bare round trip costs %s ms here.", ms(trip.P50))
		m.p("")
	}
	if p := r.Pass; p != nil && has("chunk") {
		m.p("**Per-chunk delay (§1).** The median added gap between events is %s µs and the added stream time per", us(p.Gap.Added50))
		m.p("event %s µs: the relay reads, inspects and flushes each event on its own. The plain Go proxy, in the", us(p.GapMeanAdded))
		m.p("same rounds, adds %s µs at p50 and %s µs at p99 (%s µs per event over the stream): that much is one more",
			us(p.HopGap.Added50), us(p.HopGap.Added99), us(p.HopGapMeanAdded))
		m.p("hop that reads and flushes each event, whatever it does besides. The p99 of the gaps is")
		m.p("dominated by timer and scheduling jitter on two shared cores: the direct side's own gap p99 is %s ms for", ms(p.Gap.Base.P99))
		m.p("events paced %s apart, and one late wake-up of the relay, or of the client, moves the p99 by hundreds of µs.", p.ChunkDelay)
		if l := chunkTailShares(p.GapTail); l != "" {
			m.p("%s", l)
		}
		m.p("")
	}
	if has("pipe", "mem") {
		var mp *MemPathResult
		if p, ok := at(r.MemPath, 250_000); ok {
			mp = &p
		}
		var pl *PipelineResult
		on := "" // the pipeline target's dictionary, which the memory path here matches
		if p, label, ok := r.pipelineTarget(); ok {
			pl = &p
			if p3, ok := at(r.MemPathV3, 250_000); ok && label != "" {
				mp, on = &p3, " on v3"
			}
		}
		m.p("**Full pipeline and memory path (§2).**")
		if mp != nil {
			m.p("At 250k items%s the memory path alone takes %s ms at p50: capture %s ms, and the frame built beside it %s ms past it.",
				on, ms(mp.Total.P50), ms(mp.Capture.P50), ms(mp.Frame.P50))
			if mp.Scan.N > 0 {
				m.p("Inside the frame, as the engine times its stages, the scan takes %s ms at p50%s, and the render",
					ms(mp.Scan.P50), r.scanAlone(mp))
				m.p("(reading the texts the item cache lacks, counting, rendering) %s ms.", ms(mp.Render.P50))
			}
			m.p("(For scale: counting up to %d candidate bodies with the BPE counter would take %s ms; the first pass",
				mp.CountBodies, ms(mp.Count.P50))
			m.p("prices candidates by their token counts stored at capture, and only the rendered frame is counted.)")
			if top := topStmts(mp.Statements, 3); len(top) > 0 {
				m.p("The database takes %s ms of the turn (traced, mean); the largest pieces are %s. The warm read",
					ms(stmtSum(mp.Statements)), strings.Join(top, ", "))
				m.p("(`select activations+items`) is bounded to the 400 most recently activated items. Each read of the")
				m.p("turn is one pipelined round trip (the tenant setting and its statements in one batch); capture is two: its")
				m.p("statements in one batch, then COMMIT once they all succeeded. The frame's read and its scan go out beside")
				m.p("the capture (memory/beside.go), and the frame takes the stored ids as soon as the statements succeeded, so")
				m.p("its candidates and render run while the COMMIT flushes (nothing goes upstream before it returned); the")
				m.p("frame scans again if its read brought more than the arena held.")
			}
			if l := tailLine(mp.Tail, 3); l != "" {
				m.p("Its p99 is %s ms: %s.", ms(mp.Total.P99), l)
			}
		}
		if s, ok := r.targetSplit(pl, mp); ok {
			m.p("%s", s)
		} else if pl != nil && r.Pass != nil {
			m.p("The pipeline adds %s ms at p50 over calling the provider directly: the memory path, plus what every", ms(pl.Added50))
			m.p("request with memory pays for its conversation lookup (%s ms, §1), the second",
				ms(r.Pass.Component("conv").P50))
			m.p("hop, and the previous reply's capture (a second capture per request, which takes the tenant's head lock")
			m.p("the next live capture waits for) and request record (with the inspector's copy of the frame, written")
			m.p("at once rather than batched, so that a purge finds it: proxy/records.go), all after each response on")
			m.p("the same cores.")
		}
		if mp != nil && mp.Alone.N > 0 {
			m.p("The same capture with no frame beside it takes %s ms at p50 (\"capture alone\", same rounds), against %s ms",
				ms(mp.Alone.P50), ms(mp.Capture.P50))
			m.p("beside the frame: the difference is the frame's work on the same cores (its scan on every core, its read")
			m.p("and render, their database backends) holding the capture's statements and COMMIT back.")
			if c := r.Capture; c != nil {
				grows := "the tenant's size adds little to it"
				if mp.Alone.P50 > 2*c.Capture.P50 {
					grows = "its own cost grows with the tenant"
				}
				m.p("Alone it is %.1fx a capture into the small tenant of §3 (%s ms): %s.",
					float64(mp.Alone.P50)/float64(c.Capture.P50), ms(c.Capture.P50), grows)
			}
		}
		m.p("")
	}
	if c := r.Capture; c != nil && has("capture") {
		over := c.Capture.P50 - c.Floor.P50
		m.p("**Capture (§3).** A capture costs %s ms more than the commit floor at p50.", ms(over))
		// Statements out less than every other capture are not the
		// capture's own (the counts' fold, now and then: statsfold.go).
		var commit, rest, other time.Duration
		n := 0.0
		for _, st := range c.Statements {
			switch {
			case st.Count < 0.5:
				other += st.Each
			case st.Name == "commit":
				commit = st.Each
			default:
				rest += st.Each
				n += st.Count
			}
		}
		if len(c.Statements) > 0 {
			if commit == 0 {
				m.p("Traced (section 3), its COMMIT travels in the last batch, so its flush is part of that batch's time.")
			} else if commit > c.Floor.P50*5/4 {
				m.p("Traced (section 3), its commit takes %s ms against the floor's %s ms: it flushes the whole", ms(commit), ms(c.Floor.P50))
				m.p("capture's WAL and runs the deferred per-item check.")
			} else {
				m.p("Traced (section 3), its commit costs about the floor (%s ms against %s ms).", ms(commit), ms(c.Floor.P50))
			}
			which := "The other"
			if commit == 0 {
				which = "Its"
			}
			if math.Round(n) == 1 { // the statements' one batch
				m.p("%s round trip (its statements, one batch) takes %s ms: a bare round trip (%s ms) plus the work (indexes,", which, ms(rest), ms(c.Trip.P50))
			} else {
				m.p("%s %.0f round trips take %s ms together, each a round trip (%s ms bare) plus its work (indexes,", which, n, ms(rest), ms(c.Trip.P50))
			}
			m.p("the birth-record trigger on items).")
			if other > 0 {
				m.p("The term and corpus counts' fold, now and then, adds %s ms per capture on average.", ms(other))
			}
		}
		if c.Apart.N > 0 {
			m.p("A live question's capture, COMMIT apart, takes %s ms at p50, %s ms more (a bare round trip: %s ms).",
				ms(c.Apart.P50), ms(c.Apart.P50-c.Capture.P50), ms(c.Trip.P50))
		}
		m.p("")
	}
	if has("scan") {
		var parts []string
		for _, s := range r.Scan {
			parts = append(parts, fmt.Sprintf("%s: %s ms, %.1fx its floor, %s ms CPU per query",
				itemsLabel(s.Items), ms(s.Scan.P50), float64(s.Scan.P50)/float64(max(1, s.Floor)), ms(s.CPUPerQuery)))
		}
		m.p("**Scan (§4).** %s. The scan asks for K=%d hits, as the engine does; a larger K keeps more first-pass",
			strings.Join(parts, "; "), ScanK)
		m.p("candidates and rescores more of them. CPU per query above the wall time means both workers were busy.")
		m.p("")
	}
	if has("scan-v3", "arena-v3", "mem-v3") {
		r.denseNotes(m)
	}
	if len(r.Cold) > 0 && has("cold") {
		c := r.Cold[len(r.Cold)-1]
		if c3, ok := at(r.ColdV3, c.Items); ok {
			c = c3
		}
		m.p("**Cold start (§5).** Of the %s ms catch-up at %s items (dictionary v%d), reading from PostgreSQL takes %s ms and",
			ms(c.Took), itemsLabel(c.Items), c.Dict, ms(c.Read))
		larger := "the read (one snapshot, decoded from the wire by hand into shared slabs) is the larger part"
		if c.Build > c.Read {
			larger = "the build (each row's vector projected, then chunks encoded and sealed on every core) is the larger part"
		}
		m.p("building the arena %s ms: %s.", ms(c.Build), larger)
		m.p("")
	}
	if t := r.Throughput; t != nil && t.Recall.Rate == 0 && len(t.Tried) > 0 {
		low := t.Tried[len(t.Tried)-1]
		m.p("**Throughput (§6).** With recall on, not even %.0f request/s kept p99 under %s ms (p99 %s ms there): at",
			low.Rate, ms(t.Bound), ms(low.P99))
		m.p("%s items a single request already takes about that long (§2), so the rate is not the limit; the", itemsLabel(t.Items))
		m.p("memory path's latency is.")
		m.p("")
	}
	if has("arena") {
		m.p("**Arena size (§5).** See memory/arena (codec.go) for the per-item layout.")
		m.p("")
	}
	if has("recall-all", "recall-tokens", "recall-2000") {
		m.p("**Recall (§7).** These are the memory engine's retrieval and frame figures on the development set")
		m.p("(issue 3); the table above shows where they stand against BM25 at the same ceilings.")
		m.p("")
	}
}

// topStmts names the n statements that take longest, largest first.
func topStmts(ss []Stmt, n int) []string {
	s := slices.Clone(ss)
	slices.SortFunc(s, func(a, b Stmt) int { return int(b.Each - a.Each) })
	var out []string
	for _, st := range s[:min(n, len(s))] {
		name := "`" + st.Name + "`"
		if st.Count > 1.05 {
			name += fmt.Sprintf(" (x%.0f)", st.Count)
		}
		out = append(out, fmt.Sprintf("%s %s ms", name, ms(st.Each)))
	}
	return out
}

func stmtSum(ss []Stmt) time.Duration {
	var sum time.Duration
	for _, st := range ss {
		sum += st.Each
	}
	return sum
}

func pct(part, whole time.Duration) float64 {
	if whole <= 0 {
		return 0
	}
	return 100 * float64(part) / float64(whole)
}

// scanAlone sets the memory path's scan, beside the capture, against
// §4's scan of the same size and dictionary, alone ("" when §4 has none).
func (r *Report) scanAlone(mp *MemPathResult) string {
	s, ok := at(r.Scan, mp.Items)
	if !ok {
		return ""
	}
	alone := s.Scan
	if mp.Dict >= 3 {
		if s.V3 == nil {
			return ""
		}
		alone = s.V3.Scan
	}
	return fmt.Sprintf(" beside the capture's statements and the frame's read (§4's scan alone, with nothing beside it: %s ms)", ms(alone.P50))
}
