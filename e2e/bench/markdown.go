package bench

import (
	"bufio"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/perpetuity/perpetuity/memory/store"
)

// mdw writes markdown, keeping the first write error.
type mdw struct {
	w   *bufio.Writer
	err error
}

func (m *mdw) p(format string, args ...any) {
	if m.err == nil {
		_, m.err = fmt.Fprintf(m.w, format+"\n", args...)
	}
}

// table writes a table whose first column is text and the others figures;
// columns named in left are text too.
func (m *mdw) table(head []string, rows [][]string, left ...int) {
	m.p("| %s |", strings.Join(head, " | "))
	seps := make([]string, len(head))
	for i := range seps {
		seps[i] = "--:"
		if i == 0 || slices.Contains(left, i) {
			seps[i] = "---"
		}
	}
	m.p("|%s|", strings.Join(seps, "|"))
	for _, r := range rows {
		m.p("| %s |", strings.Join(r, " | "))
	}
	m.p("")
}

func verdict(t Target) string {
	if t.Met {
		return "met"
	}
	return "**" + t.Miss + "**"
}

func spread(lo, hi time.Duration) string { return ms(lo) + " … " + ms(hi) }

// WriteMarkdown renders the report as BENCHMARKS.md.
func (r *Report) WriteMarkdown(w io.Writer) error {
	m := &mdw{w: bufio.NewWriter(w)}
	c := r.Config
	m.p("# Perpetuity benchmarks")
	m.p("")
	m.p("Written by `make bench` (`go run ./cmd/perpetuity-bench bench all`, %s mode) on %s; the run took %s.",
		c.Mode, r.Machine.Date.Format("2006-01-02 15:04 MST"), r.Took.Round(time.Second))
	m.p("Regenerate with `make bench` (minutes) or `BENCH_QUICK=1 make bench` (a smoke run, under a minute).")
	m.p("")
	m.p("Every figure is measured against a baseline in the same run. Repeated measurements run in %d rounds;", c.Rounds)
	m.p("a figure is the median over the rounds of that round's percentile (nearest rank), and \"spread\" is the")
	m.p("smallest and largest round. Where both sides are HTTP requests they are sent in pairs, back to back in")
	m.p("random order, by the same Go client, so a noisy neighbour slows both alike. The fake provider")
	m.p("(e2e/fakeprovider) answers both sides with the same reply and no delay of its own (streams are paced")
	m.p("at %s per event), so its latency is the same on both sides and cancels in the difference.", c.ChunkDelay)
	m.p("Perpetuity runs in-process (the real `serve`), against a fresh migrated PostgreSQL database.")
	m.p("")
	r.machine(m)
	r.targets(m)
	r.pass(m)
	r.pipeline(m)
	r.costCurve(m)
	r.capture(m)
	r.scan(m)
	r.cold(m)
	r.throughput(m)
	r.recall(m)
	r.chain(m)
	r.loads(m)
	r.notes(m)
	if m.err != nil {
		return m.err
	}
	return m.w.Flush()
}

func (r *Report) machine(m *mdw) {
	mc := r.Machine
	m.p("## Machine")
	m.p("")
	pg := mc.PostgreSQL
	if mc.PGSettings != "" {
		pg += " (" + mc.PGSettings + ")"
	}
	m.table([]string{"", ""}, [][]string{
		{"CPU", fmt.Sprintf("%s, %d logical CPUs, GOMAXPROCS %d", mc.CPU, mc.Cores, mc.GOMAXPROCS)},
		{"Memory", fmt.Sprintf("%.1f GiB", mc.MemoryGiB)},
		{"Go", mc.Go + " " + mc.OS},
		{"PostgreSQL", pg + ", same machine, over TCP loopback"},
		{"Date", mc.Date.Format("2006-01-02 15:04 MST")},
		{"Database", r.Database},
	}, 1)
	m.p("The machine is shared with other work; the load generator, Perpetuity, the fake provider and")
	m.p("PostgreSQL all run on these cores.")
	m.p("")
}

func (r *Report) targets(m *mdw) {
	ts := r.Targets()
	if len(ts) == 0 {
		return
	}
	m.p("## Targets")
	m.p("")
	rows := make([][]string, len(ts))
	for i, t := range ts {
		rows[i] = []string{t.Section, t.What, t.Measured, t.Baseline, verdict(t)}
	}
	m.table([]string{"§", "target", "measured", "baseline (same run)", "verdict"}, rows, 1)
	for _, s := range r.Skipped {
		m.p("- skipped: %s", s)
	}
	if len(r.Skipped) > 0 {
		m.p("")
	}
}

func pairedRow(label string, p Paired) []string {
	return []string{label, ms(p.Base.P50), ms(p.Base.P99), ms(p.Subj.P50), ms(p.Subj.P99),
		"**" + ms(p.Added50) + "**", "**" + ms(p.Added99) + "**", spread(p.Added50Lo, p.Added50Hi), strconv.Itoa(p.PerSide)}
}

func pairedHead() []string {
	return []string{"", "direct p50", "direct p99", "via Perpetuity p50", "p99", "added p50", "added p99", "added p50 spread", "pairs/round"}
}

func (r *Report) pass(m *mdw) {
	p := r.Pass
	if p == nil {
		return
	}
	m.p("## 1. Pass-through overhead")
	m.p("")
	m.p("Perpetuity with `X-Perpetuity-Recall: off` and `X-Perpetuity-Capture: off` against the fake provider")
	m.p("called directly; an OpenAI chat request (system prompt, one exchange, the live question; ~0.6 kB).")
	m.p("Streams are %d text chunks (%d SSE events with the role chunk, the finish chunk and `[DONE]`), one every %s,",
		p.Chunks, p.Events, p.ChunkDelay)
	m.p("%d streams at a time; the per-event gap is the time between consecutive events as the client reads them.", p.StreamConcurrency)
	m.p("Milliseconds.")
	m.p("")
	m.table(pairedHead(), [][]string{
		pairedRow("non-streaming, concurrency 1", p.C1),
		pairedRow(fmt.Sprintf("non-streaming, concurrency %d", p.Concurrency), p.CMany),
		pairedRow("streaming: time to first event", p.TTFB),
		pairedRow("streaming: gap between events", p.Gap),
		pairedRow("*plain Go proxy*, non-streaming, concurrency 1", p.Hop),
		pairedRow("*plain Go proxy*, streaming: time to first event", p.HopTTFB),
		pairedRow("*plain Go proxy*, streaming: gap between events", p.HopGap),
	})
	m.p("The last three rows put the plainest Go proxy where Perpetuity is (e2e/bench/hop.go: net/http in and out,")
	m.p("the body copied as it arrives and flushed after every read): what one more HTTP hop costs on this")
	m.p("machine, whatever the proxy does besides.")
	m.p("")
	m.p("Added time per event over the whole stream ((stream time via Perpetuity - direct) / gaps): %s µs; through the plain Go proxy %s µs.",
		us(p.GapMeanAdded), us(p.HopGapMeanAdded))
	if l := streamTailLine(p.TTFBTail); l != "" {
		m.p("")
		m.p("%s", l)
	}
	if l := chunkTailLine(p.GapTail); l != "" {
		m.p("")
		m.p("%s", l)
	}
	if p.Failed > 0 {
		m.p("%d pairs were dropped because a request failed (at most one in a hundred is tolerated).", p.Failed)
	}
	m.p("")
	if len(p.Breakdown) > 0 {
		m.p("What a pass-through request costs in the database: each statement timed alone, in the same rounds")
		m.p("(right after each round's concurrency-1 pairs), through the store's own functions (so with their")
		m.p("transaction and `set_config`):")
		m.p("")
		rows := make([][]string, len(p.Breakdown))
		for i, b := range p.Breakdown {
			rows[i] = []string{b.Name, ms(b.P50), ms(b.P99), b.Where}
		}
		m.table([]string{"statement", "p50", "p99", "where"}, rows, 3)
	}
	r.passPeer(m, p)
}

func (r *Report) pipeline(m *mdw) {
	if len(r.Pipeline) == 0 {
		r.memPath(m)
		return
	}
	m.p("## 2. Full pipeline overhead")
	m.p("")
	m.p("Capture and recall on, against the same request sent to the provider directly. The tenant holds the")
	m.p("given number of synthetic items (10 users, chat-turn lengths, a Zipfian vocabulary of dictionary words,")
	m.p("each user's own names; memory/arena/synth), loaded straight into PostgreSQL. Each question is asked by")
	m.p("the owner of a stored item with some of its words, through that user's key, in one live conversation")
	m.p("per user; every request stores the question and, after the reply, the answer. Concurrency 1; milliseconds.")
	m.p("")
	var rows [][]string
	for _, lp := range r.pipelineRows() {
		p := lp.PipelineResult
		rows = append(rows, append(pairedRow(lp.label, p.Paired), strconv.Itoa(p.FrameItems), strconv.Itoa(p.FrameTokens), ms(p.First)))
	}
	m.table(append(pairedHead(), "frame items", "frame tokens", "first request"), rows)
	m.p("\"first request\" is the first request after the tenant grew: the server's resident arena catches up on")
	m.p("the new items inside it (section 5 measures that alone).")
	if len(r.PipelineV3) > 0 {
		m.p("Rows marked v3 are the same items in a second tenant on dictionary v3, the default new tenants start on")
		m.p("(lexical and dense scoring, no feedback scan); the unmarked rows are the v1 bench tenant. Their rounds")
		m.p("alternate in one run, and the target is judged on v3.")
	}
	if len(r.PipelineV3Thinking) > 0 {
		m.p("The row \"provider answers in " + ms(thinkingTime) + " ms\" is the v3 tenant again, its rounds alternating with the others,")
		m.p("with the fake provider waiting that long before it answers, on both sides (the wait cancels in the difference),")
		m.p("asking the other half of the questions: asked again in the same conversation, a question is a repeat or a retry, not a plain turn.")
		m.p("The other rows' provider answers at once, so what the server writes while a provider answers (the frame's")
		m.p("reheat, the chain writer's catch-up) runs beside the client's next request; a real provider takes at")
		m.p("least this long, and that work is done before the next request comes. The reply's capture and the request")
		m.p("record run after each response, so they still run beside the next request in this row.")
	}
	r.pipelineSplits(m)
	m.p("")
	r.memPath(m)
}

func (r *Report) memPath(m *mdw) {
	if len(r.MemPath) == 0 {
		return
	}
	if len(r.Pipeline) == 0 {
		m.p("## 2. Memory path")
		m.p("")
	}
	m.p("The memory path alone, without HTTP or an upstream: `memory.Engine.FrameBeside` as serving calls it,")
	m.p("`Capture` of the live question with the frame (catch-up check, scan, warm activations, render) built")
	m.p("beside it, its read and scan running while the capture's statements do, the rest of it (candidates, render) while")
	m.p("the capture's COMMIT flushes; the turn ends when both have. \"capture\" is the")
	m.p("capture's own time, \"frame past capture\" what the turn takes beyond it; \"capture alone\" the same capture")
	m.p("with no frame beside it, %d more questions per round in the same rounds; \"frame's scan\" and \"render\" two of", r.Config.aloneTurns())
	m.p("the frame's stages in the same turns, as the engine times them (`memory.Observer`): its scan (both of a v1")
	m.p("frame's) and its render (reading the texts the item cache lacks, counting, rendering). The frame's reheat is written")
	m.p("after it returns, as serving does, and finishes before the next turn starts (in serving it runs while the")
	m.p("provider answers); its statement is in the breakdown below but not in the turn's time. The pipeline's")
	m.p("added time above is this plus the HTTP hop, the key lookup and the conversation upsert.")
	if n := r.MemPath[0].Total.N; n > 0 {
		m.p("Each tenant answers %d questions per round, none asked twice, so a round's p99 is its %s turn.", n, slowest(n))
	}
	m.p("")
	dense := len(r.MemPathV3) > 0
	var rows [][]string
	for _, p := range r.MemPath {
		row := append(memRow(itemsLabel(p.Items)+" items", p), ms(p.Count.P50))
		if dense {
			row = append(row, "–")
		}
		rows = append(rows, row)
		if p3, ok := at(r.MemPathV3, p.Items); ok {
			rows = append(rows, append(memRow(itemsLabel(p.Items)+" items, v3", p3), ms(p3.Count.P50), vsV1(p3.Total.P50, p.Total.P50)))
		}
	}
	head := append(memHead(), fmt.Sprintf("BPE count of %d bodies", r.MemPath[0].CountBodies))
	if dense {
		head = append(head, "v3 vs v1 (p50)")
	}
	m.table(head, rows)
	m.p("The last column counts the model tokens of %d stored bodies with the embedded BPE counter, the work a", r.MemPath[0].CountBodies)
	m.p("frame does to price up to that many candidates (memory/frame.go `fit`, `itemCost`), timed alone.")
	if dense {
		m.p("Rows marked v3 are a second tenant holding the same items on dictionary v3 (word vectors, the hybrid")
		m.p("scan; created on v3, so its dense space uses the dictionary's common component), with its own engine,")
		m.p("asked the same questions as the v1 tenant back to back in turn; \"v3 vs v1\" compares the two p50s.")
	}
	m.p("")
	m.p("Where a turn's database time goes (capture and frame statements, mean ms per turn as the client sees")
	m.p("them, pgx tracer):")
	m.p("")
	for _, p := range r.MemPath {
		m.p("- %s items: %s.", itemsLabel(p.Items), stmtList(p.Statements))
		if p3, ok := at(r.MemPathV3, p.Items); ok {
			m.p("- %s items, v3: %s.", itemsLabel(p.Items), stmtList(p3.Statements))
		}
	}
	m.p("")
	m.p("Where the slowest turns' time goes: each turn keeps the statements it had out (the same tracer), and the")
	m.p("turns at or beyond each round's p99 are set beside the round's middle turns (45th to 55th percentile);")
	m.p("means over the rounds, milliseconds:")
	m.p("")
	for _, p := range r.MemPath {
		if l := tailLine(p.Tail, 3); l != "" {
			m.p("- %s items: %s.", itemsLabel(p.Items), l)
		}
		if p3, ok := at(r.MemPathV3, p.Items); ok {
			if l := tailLine(p3.Tail, 3); l != "" {
				m.p("- %s items, v3: %s.", itemsLabel(p.Items), l)
			}
		}
	}
	m.p("")
	r.pooled(m)
}

func (r *Report) capture(m *mdw) {
	c := r.Capture
	if c == nil {
		return
	}
	m.p("## 3. Capture cost")
	m.p("")
	m.p("One chat message (%d words, %d model tokens on average) stored through `memory.Engine.Capture`, in", c.Words, c.Tokens)
	m.p("turn with the commit floor (the cheapest transaction that must wait for the WAL flush: one row rewritten")
	m.p("unchanged, then COMMIT) and a bare round trip. %d of each per round; milliseconds.", c.Capture.N)
	m.p("A message's statements and its COMMIT go out as one batch, as a reply's do. A live question's capture (and")
	m.p("an import line's) sends COMMIT as a round trip of its own once its statements succeeded (a request refused")
	m.p("when its capture fails must leave nothing; in serving the frame's candidates and render run while it flushes,")
	m.p("§2): its row, in the same rotation, is not in the target.")
	m.p("")
	rows := [][]string{
		{"round trip (`SELECT 1`)", ms(c.Trip.P50), ms(c.Trip.P99), spread(c.Trip.P50Lo, c.Trip.P50Hi)},
		{"commit floor", ms(c.Floor.P50), ms(c.Floor.P99), spread(c.Floor.P50Lo, c.Floor.P50Hi)},
		{"capture of one message", ms(c.Capture.P50), ms(c.Capture.P99), spread(c.Capture.P50Lo, c.Capture.P50Hi)},
		{"**capture minus floor**", "**" + ms(c.Capture.P50-c.Floor.P50) + "**", ms(c.Capture.P99 - c.Floor.P99), ""},
	}
	if c.Apart.N > 0 {
		rows = append(rows, []string{"live question, COMMIT apart", ms(c.Apart.P50), ms(c.Apart.P99), spread(c.Apart.P50Lo, c.Apart.P50Hi)})
	}
	m.table([]string{"", "p50", "p99", "p50 spread"}, rows)
	if len(c.Statements) > 0 {
		m.p("Where a capture's time goes, per statement as the client sees it (mean ms per capture, pgx tracer):")
		m.p("%s.", stmtList(c.Statements))
		m.p("")
	}
	m.p("Import: %d turns through `memory/importer` (one conversation, captured one message at a time) in %s:",
		c.ImportTurns, c.ImportTook.Round(time.Millisecond))
	m.p("**%.0f items/s**.", c.ImportRate)
	m.p("")
	m.p("The chain graph's writer ran beside every capture and the import, kicked by each as in serve, on a pool of")
	m.p("its own (its statements are not in the breakdown above, but share the cores and the database): it caught up")
	m.p("%s ms after the import's last turn, having written %d edges (%d failed catch-ups, retried).", ms(c.ChainLag), c.ChainEdges, c.ChainFailed)
	m.p("")
}

func (r *Report) scan(m *mdw) {
	if len(r.Scan) == 0 {
		return
	}
	s0 := r.Scan[0]
	m.p("## 4. Scan")
	m.p("")
	m.p("The resident arena's exact scan (memory/arena) over the synthetic corpus, in-process, one user's items")
	m.p("visible (a tenth of the corpus), K=%d as the engine asks, %d queries of 3-8 terms per round on %d workers.",
		s0.K, s0.Queries, s0.Workers)
	m.p("v1 is the two-stage BM25 scan; v3 the hybrid scan (BM25 and the dense vectors, fused) of an arena")
	m.p("built from the same text: each item's row derived by capture's code (`memory.DeriveRow`: the v3 lexicon's")
	m.p("terms and the SIF vector of the stored words) and loaded by the catch-up's (`memory.ToArenaItem`), each")
	m.p("question's terms and vector built as a frame builds them. Every question goes to both arenas back to")
	m.p("back, in alternating order. The floor is one sequential read of as many bytes as that arena holds, with")
	m.p("as many goroutines, in the same run: no scan that looks at every item can beat it.")
	m.p("")
	var rows [][]string
	side := func(label, dict string, x ScanSide, ratio string) []string {
		return []string{label, dict, "**" + ms(x.Scan.P50) + "**", ms(x.Scan.P99), spread(x.Scan.P50Lo, x.Scan.P50Hi),
			ms(x.Floor), fmt.Sprintf("%.1fx", float64(x.Scan.P50)/float64(max(1, x.Floor))), ms(x.CPUPerQuery),
			fmt.Sprintf("%.0f", x.BytesPerItem), ratio}
	}
	for _, s := range r.Scan {
		rows = append(rows, side(itemsLabel(s.Items), "v1", ScanSide{Scan: s.Scan, Floor: s.Floor, BytesPerItem: s.BytesPerItem,
			CPUPerQuery: s.CPUPerQuery}, "–"))
		if s.V3 != nil {
			rows = append(rows, side(itemsLabel(s.Items), "v3", *s.V3, fmt.Sprintf("**%.2fx**", s.V3Ratio())))
		}
	}
	m.table([]string{"items", "dictionary", "scan p50 (ms)", "p99", "p50 spread", "bandwidth floor", "p50 / floor", "CPU per query",
		"arena bytes/item", "v3/v1 p50"}, rows, 1)
}

func (r *Report) cold(m *mdw) {
	if len(r.Cold) == 0 {
		return
	}
	m.p("## 5. Cold start")
	m.p("")
	m.p("A process with no arena reading the whole tenant from PostgreSQL (`store.ReadCatchUp` in one snapshot)")
	m.p("and building its arena, as a restarted process's first request of a tenant does: the arena segments an")
	m.p("earlier load wrote (`memory/store/segment.go`, runs of %d rows stored as one value each), then the rows", store.SegmentItems)
	m.p("past them; %d rounds. \"First load\" is the same from rows alone, as a tenant's first load ever reads it", r.Cold[0].Rounds)
	m.p("(median of as many rounds), and \"segments\" what that load's read was cut into and the time to write them,")
	m.p("which serving spends in the background after such a load. \"Engine\" is the same done by a")
	m.p("fresh `memory.Engine`: its first frame (catch-up plus one frame) and a warm frame for comparison.")
	m.p("\"Reload\" is a frame of a tenant evicted under `PERPETUITY_ARENA_BUDGET` (an engine whose budget holds")
	m.p("no arena, after a first frame paid the process's one-time costs) and, in brackets, its load alone;")
	m.p("measured up to %s items.", itemsLabel(reloadMaxItems))
	m.p("Rows are converted by the catch-up's own code (`memory.ToArenaItems`); a v3 row's vector goes through the")
	m.p("tenant's dense space (`dict.Space`) into an arena that holds vectors, as a serving process loads it.")
	if len(r.ColdV3) > 0 {
		m.p("A v3 engine's first frame also loads the v3 lexicon from the database and parses its vectors, once per")
		m.p("process (the bench's engines, like serve's, are built with v1 in memory).")
	}
	m.p("")
	row := func(label string, c ColdResult) []string {
		return []string{label, ms(c.Took), spread(c.TookLo, c.TookHi), ms(c.Read), ms(c.Build),
			fmt.Sprintf("**%.0fk**", c.PerSec/1000),
			fmt.Sprintf("%s (read %s): %.0fk/s", ms(c.First), ms(c.FirstRead), c.FirstPerSec/1000),
			fmt.Sprintf("%d, %.0f MiB, %s ms", c.Segments, float64(c.SegmentBytes)/(1<<20), ms(c.SegmentWrite)),
			fmt.Sprintf("%.0f", c.BytesPerItem), fmt.Sprintf("%.0f", c.HeapPerItem),
			ms(c.EngineFirst), ms(c.EngineWarm), reload(c)}
	}
	var rows [][]string
	for _, c := range r.Cold {
		rows = append(rows, row(itemsLabel(c.Items), c))
		if c3, ok := at(r.ColdV3, c.Items); ok {
			rows = append(rows, row(itemsLabel(c.Items)+", v3", c3))
		}
	}
	m.table([]string{"items", "catch-up (ms)", "spread", "read", "build", "items/s", "first load (ms)", "segments", "arena B/item", "Go heap B/item", "engine first frame", "warm frame", "reload (load)"}, rows)
}

// reload is a cold row's reload after eviction, "–" where not measured.
func reload(c ColdResult) string {
	if c.EngineReload == 0 {
		return "–"
	}
	return fmt.Sprintf("%s (%s)", ms(c.EngineReload), ms(c.ReloadLoad))
}

func (r *Report) throughput(m *mdw) {
	t := r.Throughput
	if t == nil {
		return
	}
	m.p("## 6. Throughput")
	m.p("")
	m.p("Open-loop load (requests offered at a fixed rate whatever the server's speed; latency counted from when")
	m.p("each was due) for %s per step: the rate doubles until p99 reaches %s or a request fails, then", t.Step, ms(t.Bound)+" ms")
	m.p("bisects. The tenant holds %s items; the baseline is the pass-through path on the same server.", itemsLabel(t.Items))
	m.p("")
	row := func(label string, p RatePoint) []string {
		if p.Rate == 0 {
			return []string{label, "**none** (not even 1/s)", "–", "–", "–"}
		}
		return []string{label, fmt.Sprintf("**%.0f**", p.Rate), ms(p.P50), ms(p.P99), strconv.Itoa(p.Sent)}
	}
	m.table([]string{"path", "sustained requests/s (p99 < " + ms(t.Bound) + " ms)", "p50", "p99", "requests"}, [][]string{
		row("full pipeline (recall and capture on)", t.Recall),
		row("pass-through (recall and capture off)", t.Base),
	})
	if t.Base.Rate > 0 && t.Recall.Rate > 0 {
		m.p("Ratio: the full pipeline sustains %.0f%% of the pass-through rate.", 100*t.Recall.Rate/t.Base.Rate)
		m.p("")
	}
	var tried []string
	for _, p := range t.Tried {
		s := fmt.Sprintf("%.0f/s: p99 %s ms", p.Rate, ms(p.P99))
		if p.Failed > 0 {
			s += fmt.Sprintf(", %d failed", p.Failed)
		}
		tried = append(tried, s)
	}
	m.p("Steps with recall on: %s.", strings.Join(tried, "; "))
	m.p("")
}

func (r *Report) recall(m *mdw) {
	rc := r.Recall
	if rc == nil {
		return
	}
	s := rc.Summary
	m.p("## 7. Recall for tokens")
	m.p("")
	m.p("`go run ./cmd/perpetuity-bench eval locomo %s --json` (the LoCoMo development set, categories 1-4, %d questions, no LLM:", rc.File, s.Questions)
	m.p("an evidence turn counts when its text is in what the provider received), beside the baselines of")
	m.p("../shared/bench/README.md, measured there on the same questions. Took %s.", rc.Took.Round(time.Second))
	m.p("")
	head := []string{"method"}
	for _, c := range RecallCeilings() {
		head = append(head, "recall @"+strconv.Itoa(c))
	}
	head = append(head, "all-evidence @2000", "@4000", "server frame: recall", "all-evidence", "tokens mean")
	row := []string{"**Perpetuity**"}
	for _, c := range RecallCeilings() {
		row = append(row, fmt.Sprintf("%.3f", s.Ceilings[strconv.Itoa(c)].Recall))
	}
	row = append(row, fmt.Sprintf("%.3f", s.Ceilings["2000"].AllEvidence), fmt.Sprintf("%.3f", s.Ceilings["4000"].AllEvidence),
		fmt.Sprintf("%.3f", s.Overall.Recall), fmt.Sprintf("%.3f", s.Overall.AllEvidence), fmt.Sprintf("%.0f", s.Overall.TokensMean))
	rows := [][]string{row}
	for _, b := range Baselines() {
		br := []string{b.Name}
		for _, c := range RecallCeilings() {
			br = append(br, fmt.Sprintf("%.3f", b.Recall[c]))
		}
		br = append(br, fmt.Sprintf("%.3f", b.AllAt[2000]), fmt.Sprintf("%.3f", b.AllAt[4000]), "", "", "")
		rows = append(rows, br)
	}
	m.table(head, rows)
	var cats [][]string
	for _, k := range []string{"1", "2", "3", "4", "5"} {
		c, ok := s.ByCategory[k]
		if !ok {
			continue
		}
		n, _ := strconv.Atoi(k)
		cats = append(cats, []string{k + " " + categoryName(n), fmt.Sprintf("%.3f", c.Recall), fmt.Sprintf("%.3f", c.AllEvidence),
			fmt.Sprintf("%.0f", c.TokensMean), strconv.Itoa(c.TokensP95)})
	}
	m.p("Per category, server-chosen frame (5 is unanswerable and not in the overall figures):")
	m.p("")
	m.table([]string{"category", "recall", "all-evidence", "tokens mean", "tokens p95"}, cats)
}

// stmtList is "begin 0.1, insert messages 0.2 (x2), ...; 0.3 ms in all".
func stmtList(ss []Stmt) string {
	parts := make([]string, 0, len(ss))
	for _, st := range ss {
		name := st.Name
		switch {
		case st.Count > 1.05:
			name += fmt.Sprintf(" (x%.1f)", st.Count)
		case st.Count < 0.95:
			name += fmt.Sprintf(" (x%.2g)", st.Count)
		}
		parts = append(parts, name+" "+ms(st.Each))
	}
	return strings.Join(parts, ", ") + "; " + ms(stmtSum(ss)) + " ms in all"
}

func categoryName(c int) string {
	return map[int]string{1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop", 5: "adversarial"}[c]
}

func (r *Report) loads(m *mdw) {
	if len(r.Loads) == 0 {
		return
	}
	var parts, others []string
	for _, l := range r.Loads {
		if l.Tenant != "" {
			others = append(others, fmt.Sprintf("%s +%s to %s in %s", l.Tenant, itemsLabel(l.Added), itemsLabel(l.Items), l.Took.Round(100*time.Millisecond)))
			continue
		}
		parts = append(parts, fmt.Sprintf("+%s to %s in %s (%.0fk items/s)", itemsLabel(l.Added), itemsLabel(l.Items),
			l.Took.Round(100*time.Millisecond), float64(l.Added)/l.Took.Seconds()/1000))
	}
	m.p("## Setup")
	m.p("")
	m.p("The bench tenant was grown with COPY (e2e/bench.Loader; messages, items, retrieval rows under the")
	m.p("tenant's dictionary, born-hot activations, birth records, term and corpus counts, clocks and head in")
	m.p("one transaction per growth, triggers off where the role may): %s. This is setup, not a figure of the", strings.Join(parts, "; "))
	m.p("product: captures (section 3) are how items arrive in production.")
	if len(others) > 0 {
		m.p("The other tenants were loaded the same way, rows under their own dictionary (v3 rows with their")
		m.p("vectors): %s.", strings.Join(others, "; "))
	}
	r.chainSettles(m)
	m.p("")
}

// slowest names the sample that is the p99 (nearest rank) of n: "slowest",
// "2nd slowest"...
func slowest(n int) string {
	k := n - rank(n, 0.99)
	if k <= 1 {
		return "slowest"
	}
	suffix := "th"
	switch {
	case k%100 >= 11 && k%100 <= 13:
	case k%10 == 1:
		suffix = "st"
	case k%10 == 2:
		suffix = "nd"
	case k%10 == 3:
		suffix = "rd"
	}
	return fmt.Sprintf("%d%s slowest", k, suffix)
}
