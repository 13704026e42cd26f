package memory

import (
	"cmp"
	"context"
	"math"
	"slices"
	"time"

	"github.com/perpetuity/perpetuity/memory/arena"
	"github.com/perpetuity/perpetuity/memory/store"
)

// cand is an item that may enter the frame.
type cand struct {
	id        int64
	heat      float64 // after this turn's (possibly virtual) reheat, and a named speaker's preference (speaker.go)
	warm      float64 // its heat from earlier turns alone
	rank      int     // retrieval rank, -1 when not retrieved
	placed    int     // the best rank retrieval placed it at, even where its warmth was higher; -1: none
	mandatory bool
	score     float32 // the retrieval score of a match, 0 otherwise
	why       Reason  // every way it came in, for the request inspector
}

// Frame builds what the model sees this turn (DESIGN §6): the items still
// warm enough to render after this turn's retrieval reheated its matches,
// within a budget derived from how the retrieval scores spread, capped on
// the rendered text. Ranking is relevance (and, for a question naming one
// person of the memory, whose turn it is: speaker.go); heat decides what is
// shown.
func (e *Engine) Frame(ctx context.Context, q FrameQuery) (Frame, error) {
	return e.frame(ctx, q, nil)
}

// frame is Frame, beside the live question's capture when lc is not nil
// (beside.go).
func (e *Engine) frame(ctx context.Context, q FrameQuery, lc *liveCapture) (Frame, error) {
	if q.UserID == 0 {
		// No such user (a probe naming a new name creates none): nothing
		// to recall, and the question stands alone.
		return e.render(q, nil, nil, false, e.an.Count, nil), nil
	}
	viewer := viewerKey{q.TenantID, q.UserID}
	rctx, cancelRead := context.WithCancel(ctx)
	defer cancelRead() // an early return also stops the read
	// Held to the end: the hits' neighbours and prices are read from the
	// arena after the scan, and an arena in use is never evicted.
	held := e.res.use(q.TenantID)
	defer e.res.done(held)
	r, inputs, settle, err := e.readFrame(rctx, q, held, lc)
	if err != nil {
		return Frame{}, err
	}
	lc.adopt(&q) // a cold load waited for the capture
	// Read once: every scan of this frame and the speaker preference read it.
	qtext := e.questionText(q.Live)
	if err := lc.waitSending(ctx); err != nil {
		return Frame{}, err
	}
	var aq arena.Query
	var hits []arena.Hit
	for {
		if aq, hits, err = e.retrieve(ctx, q, qtext, r); err != nil {
			return Frame{}, err
		}
		var again bool
		if r, again, err = settle(); err != nil {
			return Frame{}, err
		}
		if !again {
			break
		}
		e.res.rescans.Add(1)
	}
	if lc != nil {
		// The scan ran beside the capture; had the arena taken in the
		// question meanwhile (own.go), it scans again without it.
		if err := lc.waitStored(ctx); err != nil {
			return Frame{}, err
		}
		lc.adopt(&q)
		um := q.unmatched()
		if slices.ContainsFunc(hits, func(h arena.Hit) bool { return slices.Contains(um, h.ID) }) {
			if aq, hits, err = e.retrieve(ctx, q, qtext, r); err != nil {
				return Frame{}, err
			}
		}
	}
	var around map[int64]neighbors
	var joined map[int64]bool
	nbHits := e.opt.Context.Hits
	if aq.Dense != nil {
		hits, around, joined = smoothHits(r.arena, hits, e.opt.Candidates, q.unmatched())
		nbHits = e.opt.Context.DenseHits
	}
	ceiling := q.Ceiling
	if ceiling <= 0 || ceiling > e.opt.Ceiling {
		ceiling = e.opt.Ceiling
	}
	// A forced budget is a wish within the ceiling, never past it: the
	// header once took a frame to 170k tokens (issue 15, finding 11).
	budget := min(q.Budget, ceiling)
	if q.Budget <= 0 {
		budget = Budget(hits, e.opt.Floor, min(e.opt.AutoCeiling, ceiling))
	}
	nbs := neighborsOf(r.arena, hits, nbHits, around)
	chs := e.chainOf(q.TenantID, q.UserID, hits, e.opt.Context.ChainHits, e.opt.Context.ChainPer)
	got := <-inputs
	if got.err != nil {
		return Frame{}, got.err
	}
	in := got.in
	if lc != nil {
		settleLive(&in, lc.got, e.opt.Recent, e.opt.BaseTau)
	}
	cands := e.candidates(q, hits, joined, nbs, chs, in)
	if cands, err = e.preferSpeaker(ctx, q.TenantID, cands, namedIn(qtext, in.Labels), in.Labels); err != nil {
		return Frame{}, err
	}
	var stored []store.ItemText
	if lc != nil {
		// Not committed yet, so not in the store's view: the render
		// takes the live question's items from the capture.
		stored = lc.got.Items
	}
	render := time.Now()
	f, shown, err := e.fit(ctx, q, cands, priceList(r.arena, hits, nbs, chs, in), in.Labels, budget, stored)
	if err != nil {
		return Frame{}, err
	}
	e.observer().Duration("render", time.Since(render))
	e.observer().FrameTokens(f.Tokens)
	f.Retrieved, f.Seq = hitIDs(hits), r.watermark
	for id := range shown {
		f.Shown = append(f.Shown, id)
	}
	if !q.Probe {
		var rs []store.Reheat
		for _, c := range cands {
			if c.rank >= 0 && shown[c.id] {
				rs = append(rs, store.Reheat{ItemID: c.id, Peak: RankPeak(c.rank)})
			}
		}
		write := func(ctx context.Context) error {
			if lc != nil {
				if err := lc.committed(ctx); err != nil {
					if ctx.Err() != nil {
						return ctx.Err()
					}
					return nil // the turn failed: its frame was never shown
				}
			}
			return e.store.ApplyReheats(ctx, q.TenantID, q.UserID, in.Clock, rs)
		}
		if e.opt.DeferReheat && len(rs) > 0 {
			e.pending.start(ctx, viewer, write)
		} else if err := write(ctx); err != nil {
			return Frame{}, err
		}
	}
	return f, nil
}

// retrieve scans the view for the question (qtext, its questionText): its
// query in the view's dictionary version, and the matches, best first.
func (e *Engine) retrieve(ctx context.Context, q FrameQuery, qtext string, r view) (arena.Query, []arena.Hit, error) {
	d, err := e.dictionary(ctx, r.dict)
	if err != nil {
		return arena.Query{}, nil, err
	}
	toks := e.an.Normalize(qtext)
	terms := d.QueryTerms(toks)
	aq := arena.Query{Terms: terms, Users: []int64{q.UserID}, Exclude: q.unmatched(), K: e.opt.Candidates}
	if r.space != nil { // dense.go: a hybrid scan under a version with vectors
		denseQueryOf(r.space, e.meaningTokens(qtext, toks), toks, &aq)
	}
	if aq.Dense != nil {
		aq.K = max(aq.K, smoothPool) // smoothHits keeps Candidates of them
	}
	if len(terms) == 0 && aq.Dense == nil {
		return aq, nil, nil
	}
	workers, release, err := e.admit(ctx, q.TenantID)
	if err != nil {
		return aq, nil, err
	}
	defer release()
	scan := time.Now()
	defer func() { e.observer().Duration("scan", time.Since(scan)) }()
	// Under a hybrid scan the words of the top turns add nothing the
	// dense side has not found (development set: all-evidence 0.845
	// without, 0.846 with) and a second scan costs as much as the first.
	aq.Workers = workers
	if e.opt.Expansion.terms > 0 && aq.Dense == nil {
		return aq, e.feedbackScan(r.arena, aq), nil
	}
	return aq, r.arena.Search(aq), nil
}

// datedUnmatched places a dated turn that did not match the question's
// words this many times lower than one that did: a day holds many turns,
// and at a small budget the matching ones are worth more (tuned on the
// development set: 3 and 12 beat 6 and 6 at 500 and 1000 tokens and lose
// nothing above).
const datedUnmatched = 4

// neighbors are a match's conversation neighbours, from the arena.
type neighbors struct {
	id         int64
	prev, next arena.Neighbor
}

// neighborWindow is how far around a match, in its owner's arrival order,
// its conversation neighbours are looked for.
const neighborWindow = 256

// neighborsOf finds the neighbours of the best n matches (in known when
// already looked up).
func neighborsOf(a *arena.Arena, hits []arena.Hit, n int, known map[int64]neighbors) []neighbors {
	n = min(n, len(hits))
	if n <= 0 {
		return nil
	}
	out := make([]neighbors, 0, n)
	for _, h := range hits[:n] {
		if nb, ok := known[h.ID]; ok {
			out = append(out, nb)
		} else if p, nx, ok := a.Neighbors(h.Index, h.ID, neighborWindow); ok {
			out = append(out, neighbors{id: h.ID, prev: p, next: nx})
		}
	}
	return out
}

// smoothing is how much of its best conversation neighbour's score a turn
// of a hybrid scan gains, when that neighbour matched. A turn rarely says
// all of what it is about; the exchange around it does ("we went camping" /
// "the kids loved the marshmallows"), and a turn whose neighbour also
// matches is likelier part of what the question asks about than one that
// stands alone. Tuned offline on the development set (0.2, 0.3, 0.5: 0.3
// best at 2000 and 4000 tokens on each sample); with unmatched neighbours
// joining (smoothPool), 0.5 moved the samples both ways.
const smoothing = 0.3

// smoothPool is how many of the scan's best matches smoothing reads. The
// turn that answers is often unmatched itself ("I bought it a year ago in
// Paris", after "where did you get your snake?") and next to one that
// matched well; the frame's candidates are ranked from these matches and
// their unmatched neighbours, which score by their neighbour alone. A pool
// wider than the candidates lets a match just below the cut rise by its
// neighbour (development set, server frame all-evidence: 120 0.872, 200
// 0.876, 300 and 600 the same as 200; the pool costs a 250k-item frame
// about 0.1 ms, BenchmarkSmoothHits).
const smoothPool = 200

// smoothHits adds to each of hits (a hybrid scan's, best first) smoothing
// times the better positive score of its conversation neighbours among
// hits; an unmatched neighbour of a match joins with that share of its
// score alone. It reranks (score desc, id asc), keeps the best keep, and
// returns the neighbours it looked up and which of the kept joined so.
// Only matches are read: their scores come with the scan, the arena's
// conversation order with Neighbors. The excluded items (the live message,
// which the scan left out) never join.
func smoothHits(a *arena.Arena, hits []arena.Hit, keep int, exclude []int64) ([]arena.Hit, map[int64]neighbors, map[int64]bool) {
	// out holds the hits, then the unmatched neighbours as they join; gain
	// is the better positive score of an entry's matched neighbours.
	out := make([]arena.Hit, len(hits), 2*len(hits))
	copy(out, hits)
	gain := make([]float32, len(hits), 2*len(hits))
	at := make(map[int64]int, 2*len(hits))
	for i, h := range hits {
		at[h.ID] = i
	}
	around := make(map[int64]neighbors, len(hits))
	for _, h := range hits {
		p, nx, ok := a.Neighbors(h.Index, h.ID, neighborWindow)
		if !ok {
			continue
		}
		around[h.ID] = neighbors{id: h.ID, prev: p, next: nx}
		if !(h.Score > 0) {
			continue
		}
		for _, x := range [2]arena.Neighbor{p, nx} {
			if x.ID == 0 {
				continue
			}
			k, ok := at[x.ID]
			if !ok {
				if slices.Contains(exclude, x.ID) {
					continue
				}
				k = len(out)
				at[x.ID] = k
				out = append(out, arena.Hit{ID: x.ID, Index: x.Index})
				gain = append(gain, 0)
			}
			gain[k] = max(gain[k], h.Score)
		}
	}
	for k := range out {
		out[k].Score += smoothing * gain[k]
	}
	slices.SortFunc(out, func(x, y arena.Hit) int {
		if c := cmp.Compare(y.Score, x.Score); c != 0 {
			return c
		}
		return cmp.Compare(x.ID, y.ID)
	})
	if len(out) > keep {
		out = out[:keep]
	}
	joined := map[int64]bool{}
	for _, h := range out {
		if at[h.ID] >= len(hits) {
			joined[h.ID] = true
		}
	}
	return out, around, joined
}

// frameInputs is the frame's store read, as it comes back from its goroutine.
type frameInputs struct {
	in  store.FrameInputs
	err error
}

// maxTauFactor bounds how much longer than BaseTau an item's decay may be
// (novel items decay slower), so the warm read can stop at a horizon.
const maxTauFactor = 2

// candidates merges the three ways into the frame: the most recent stretch
// of this conversation (mandatory), this turn's retrieval (reheated by rank;
// the best few mandatory; joined are there as a match's neighbour), and
// whatever else is still warm.
func (e *Engine) candidates(q FrameQuery, hits []arena.Hit, joined map[int64]bool, nbs []neighbors, chs []chained, in store.FrameInputs) []cand {
	by := map[int64]*cand{}
	get := func(id int64) *cand {
		c := by[id]
		if c == nil {
			c = &cand{id: id, rank: -1, placed: -1}
			by[id] = c
		}
		return c
	}
	for _, w := range in.Warm {
		h := Heat(Activation{TLast: w.TLast, Peak: w.Peak}, in.Clock, w.Tau)
		if h >= WarmThreshold {
			c := get(w.ItemID)
			c.heat, c.warm = h, h
			c.why |= ReasonWarm
		}
	}
	rankOf := make(map[int64]int, len(hits))
	for i, h := range hits {
		rankOf[h.ID] = i
		c := get(h.ID)
		c.rank, c.placed = i, i
		c.score = h.Score
		if joined[h.ID] {
			c.why |= ReasonNeighbour
		} else {
			c.why |= ReasonMatch
		}
		if p := RankPeak(i); p > c.heat {
			c.heat = p
		}
		if i < mandatoryHits {
			c.mandatory = true
			c.why |= ReasonMandatory
		}
	}
	// A match's conversation and chain neighbours come in r places below
	// it, unless they rank better already. The live question is none: it
	// is in the frame as the question (and retrieved by nothing), whether
	// or not the arena took it in before the frame read its neighbours.
	um := q.unmatched()
	bring := func(id int64, r int, why Reason) {
		if slices.Contains(um, id) {
			return
		}
		c := get(id)
		c.why |= why
		c.place(r)
		if p := RankPeak(r); p > c.heat {
			c.heat = p
			if c.rank < 0 || c.rank > r {
				c.rank = r
			}
		}
	}
	for _, nb := range nbs {
		r := rankOf[nb.id] + e.opt.Context.Lag
		if nb.next.ID != 0 {
			bring(nb.next.ID, r, ReasonNeighbour)
		}
		if e.opt.Context.Prev && nb.prev.ID != 0 {
			bring(nb.prev.ID, r, ReasonNeighbour)
		}
	}
	for _, ch := range chs {
		r := rankOf[ch.id] + e.opt.Context.ChainLag
		for _, l := range ch.links {
			bring(l.ID, r, ReasonChain)
		}
	}
	// A turn of a date the question names ranks with the good matches even
	// when its words did not match the question, and above them when they
	// did; a dated turn keeps the better of its ranks. Overlapping ranges
	// (a day inside a named month) list a turn twice: it counts once.
	lift := func(id int64, r int) {
		c := get(id)
		c.why |= ReasonDate
		c.place(r)
		if c.rank < 0 || c.rank > r {
			c.rank = r
			if p := RankPeak(r); p > c.heat {
				c.heat = p
			}
		}
	}
	dated := make(map[int64]bool, len(in.Dated))
	for _, id := range in.Dated {
		if dated[id] || slices.Contains(um, id) {
			continue
		}
		dated[id] = true
		r := e.opt.DatedRank
		if _, matched := rankOf[id]; !matched {
			r *= datedUnmatched
		}
		lift(id, r)
	}
	// In a named range too long to bring whole, only the matches are lifted.
	for _, id := range in.InRanges {
		if _, matched := rankOf[id]; matched && !dated[id] {
			dated[id] = true
			lift(id, e.opt.DatedRank)
		}
	}
	for _, id := range in.Recent {
		c := get(id)
		c.mandatory = true
		c.why |= ReasonRecent
		if c.heat < BornPeak {
			c.heat = BornPeak
		}
	}
	for _, id := range q.LiveItems {
		c := get(id)
		c.mandatory = true
		c.why |= ReasonLive
	}
	for _, id := range q.SentAfter {
		delete(by, id) // however it came in: the request holds it
	}
	out := make([]cand, 0, len(by))
	for _, c := range by {
		out = append(out, *c)
	}
	sortCands(out)
	return out
}

// unmatched are the items no scan returns: the live question's (not its
// own best match) and those the request sends after it.
func (q FrameQuery) unmatched() []int64 {
	if len(q.SentAfter) == 0 {
		return q.LiveItems
	}
	return append(slices.Clip(q.LiveItems), q.SentAfter...)
}

// place records that retrieval placed the candidate at rank r.
func (c *cand) place(r int) {
	if c.placed < 0 || r < c.placed {
		c.placed = r
	}
}

// sortCands puts candidates in the order the frame takes them: mandatory
// first, then by heat, the newer first on a tie.
func sortCands(cs []cand) {
	// Sorted by keys of two words, the mandatory apart, rather than by
	// swapping 64-byte cands: 0.6-0.7x the time (BenchmarkSortCands).
	keys := make([]candKey, len(cs))
	m := 0 // the mandatory first
	for i, c := range cs {
		k := candKey{heat: heatOrder(c.heat), id: c.id, at: int32(i)}
		if c.mandatory {
			keys[i], keys[m] = keys[m], k
			m++
		} else {
			keys[i] = k
		}
	}
	byHeat := func(a, b candKey) int {
		if a.heat != b.heat {
			return cmp.Compare(b.heat, a.heat)
		}
		return cmp.Compare(b.id, a.id)
	}
	slices.SortFunc(keys[:m], byHeat)
	slices.SortFunc(keys[m:], byHeat)
	sorted := make([]cand, len(cs))
	for i, k := range keys {
		sorted[i] = cs[k.at]
	}
	copy(cs, sorted)
}

type candKey struct {
	heat uint64 // heatOrder
	id   int64
	at   int32
}

// heatOrder maps a heat to a word that orders as the heat does (its IEEE
// bits made monotonic), -0 equal to 0 as the float comparison has it.
func heatOrder(heat float64) uint64 {
	if heat == 0 {
		return 1 << 63
	}
	b := math.Float64bits(heat)
	if b>>63 != 0 {
		return ^b
	}
	return b | 1<<63
}

// priceList gathers the stored token counts of the candidates, from the
// arena for matches and from the frame's own reads for the rest.
func priceList(a *arena.Arena, hits []arena.Hit, nbs []neighbors, chs []chained, in store.FrameInputs) map[int64]int {
	toks := make(map[int64]int, len(in.Tokens)+3*len(hits))
	for id, t := range in.Tokens {
		toks[id] = t
	}
	for _, h := range hits {
		if it, ok := a.Meta(h.Index); ok && it.ID == h.ID {
			toks[h.ID] = int(it.Tokens)
		}
	}
	for _, nb := range nbs {
		for _, x := range []arena.Neighbor{nb.prev, nb.next} {
			if x.ID != 0 {
				toks[x.ID] = int(x.Tokens)
			}
		}
	}
	for _, ch := range chs {
		for _, l := range ch.links {
			toks[l.ID] = int(l.Tokens)
		}
	}
	return toks
}

// Pricing candidates by their stored token counts before reading any text
// keeps the frame's one text read to about the frame itself rather than
// every candidate (hundreds of bodies and their joins were the largest cost
// of a turn). The label is estimated low and the cut made a little past the
// budget, so the exact pass that follows sees every candidate it would have
// chosen from the full list.
const (
	labelEstimate = 3
	priceMargin   = 1.2
)

// preselect keeps, in priority order, the candidates an estimated pricing
// can fit in budget×priceMargin, every mandatory one, and any it cannot
// price.
func preselect(cands []cand, toks map[int64]int, budget int) []cand {
	limit := int(float64(budget) * priceMargin)
	out := make([]cand, 0, len(cands))
	spent := 0
	for _, c := range cands {
		t, ok := toks[c.id]
		if !ok {
			out = append(out, c)
			continue
		}
		cost := t + labelEstimate
		if !c.mandatory && spent+cost > limit {
			continue
		}
		out = append(out, c)
		spent += cost
	}
	return out
}

// mandatoryHits is how many of the best matches are never trimmed.
const mandatoryHits = 3

// fetchLimit bounds how many candidates are read from the store per frame.
const fetchLimit = 400

// fit chooses, renders and caps the frame. Pass one picks candidates in
// priority order by their stored token counts until the budget is spent;
// pass two renders the text and, while the rendered tokens exceed the
// budget, drops the lowest-priority non-mandatory item.
func (e *Engine) fit(ctx context.Context, q FrameQuery, cands []cand, toks map[int64]int, labels store.Labels, budget int, stored []store.ItemText) (Frame, map[int64]bool, error) {
	all := len(cands)
	considered := cands
	if len(cands) > fetchLimit {
		cands = cands[:fetchLimit]
	}
	cands = preselect(cands, toks, budget)
	ids := make([]int64, len(cands))
	for i, c := range cands {
		ids[i] = c.id
	}
	byID, err := e.frameItems(ctx, q.TenantID, ids, labels, stored)
	if err != nil {
		return Frame{}, nil, err
	}
	count := e.frameCount()
	var chosen []cand
	costs := map[int64]int{}
	spent, trimmed := 0, false
	for _, c := range cands {
		it, ok := byID[c.id]
		if !ok {
			continue // purged since the arena read it
		}
		// The item's rendered cost, label included, counted as rendered.
		cost := itemCost(count, it)
		if !c.mandatory && spent+cost > budget {
			trimmed = true
			continue
		}
		chosen = append(chosen, c)
		costs[c.id] = cost
		spent += cost
	}
	if len(cands) < all {
		trimmed = true
	}
	// Headers, time labels and the preamble cost a little more than the
	// items alone: render, and while the text is over budget drop the least
	// important items, about as many as the overflow, and render again.
	memo := turnLabels{}
	for {
		f := e.render(q, chosen, byID, trimmed, count, memo)
		over := f.Tokens - budget
		if over <= 0 || !dropLast(&chosen, over, costs) {
			shown := make(map[int64]bool, len(chosen))
			for _, c := range chosen {
				shown[c.id] = true
			}
			if q.Explain {
				f.Considered, f.Left = explain(considered, shown, toks, byID)
			}
			return f, shown, nil
		}
		trimmed = true
	}
}

// frameCount is one frame's counter. Counting is most of a frame's CPU;
// labels repeat and a re-render changes only the turns around what was
// dropped, so each distinct text is counted once per frame, and a text an
// earlier frame counted is not counted again (countcache.go).
func (e *Engine) frameCount() func(string) int {
	counted := map[string]int{}
	return func(s string) int {
		n, ok := counted[s]
		if !ok {
			n = e.counts.count(s, e.an.Count)
			counted[s] = n
		}
		return n
	}
}

// dropLast removes the lowest-priority non-mandatory candidates until their
// costs cover over tokens; false when nothing could be dropped.
func dropLast(cs *[]cand, over int, costs map[int64]int) bool {
	dropped := false
	for i := len(*cs) - 1; i >= 0 && over > 0; i-- {
		if !(*cs)[i].mandatory {
			over -= costs[(*cs)[i].id]
			*cs = append((*cs)[:i], (*cs)[i+1:]...)
			dropped = true
		}
	}
	return dropped
}

// Budget maps the spread of the retrieval scores to a token budget: the
// effective number of matches, exp(entropy) of the top scores normalized to
// a distribution, is ~1 for one dominant match and ~k for a flat spread, and
// is mapped linearly onto [floor, ceiling]. It decides how much is rendered,
// never the order.
func Budget(hits []arena.Hit, floor, ceiling int) int {
	const k = 10
	if floor > ceiling {
		floor = ceiling
	}
	n := len(hits)
	if n > k {
		n = k
	}
	if n == 0 {
		return floor
	}
	var sum float64
	for _, h := range hits[:n] {
		sum += float64(h.Score)
	}
	if sum <= 0 {
		return floor
	}
	var ent float64
	for _, h := range hits[:n] {
		if p := float64(h.Score) / sum; p > 0 {
			ent -= p * math.Log(p)
		}
	}
	eff := math.Exp(ent) // 1..k
	frac := (eff - 1) / (k - 1)
	return floor + int(frac*float64(ceiling-floor))
}
