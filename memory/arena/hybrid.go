package arena

import (
	"maps"
	"math"
	"slices"
	"sync"
	"sync/atomic"
)

// The hybrid scan (issue 16). When the query carries a dense vector and the
// arena holds vectors, every visible item is scored lexically and densely and
// the two are fused as
//
//	fused = LexicalWeight·z(bm25) + DenseWeight·z(cosine)
//
// z standardising each side by its mean and standard deviation over the
// visible items of the query (a constant side contributes 0). The law:
//
//   - bm25 is exact for every visible item (an item passing no query term's
//     signature scores 0 without being read: a Bloom filter has no false
//     negatives; sealed chunks are read through their inverted terms,
//     postings.go), so the lexical statistic is over every visible item;
//   - the cosine's statistic is over a fixed sample of the visible items:
//     every stride-th item of each visible user in arrival order, stride =
//     ceil(visible / DenseSample), so every item up to DenseSample items and
//     about DenseSample beyond (a deviation of 1024 cosines is within ~2% of
//     the full one, and costs 1024 dot products instead of all of them);
//   - items with a positive fused score are hits; a lexical match below the
//     mean still is one, at LexicalFloor, so a question never loses the turn
//     that shares its words.
//
// Sums run per chunk in item order, then over chunks in the order of the
// visible users' chunks, never in the order workers finish: the fused score
// of an item and the ranking (score desc, id asc) are the same whatever the
// number of workers.
//
// Two stages. Up to DenseExact visible items every cosine is computed
// exactly. Beyond, a first pass fuses each item's exact bm25 with its
// cosine as estimated from a 2-bit code (binary.go, 32 bytes an item
// instead of 100), keeps the best denseBudget(K, visible) items (growing
// with the square root of the corpus: 832 of 4,804, 6,000 of 250,000)
// and computes their cosines exactly; the hits are ranked by the exact
// fused score. The estimate is not a bound, so this equals exhaustive exact
// scoring only when the true top K is among the candidates:
// TestHybridTwoStageEqualsExhaustive holds it to that on synthetic
// sentence-like vectors and memory/dict's TestTwoStageOnShippedVectors on
// the shipped vectors of the development set; Query.ExactDense scores
// exhaustively.

// Fusion weights, measured on the development set: offline (memory/dict's
// TestVectorsLoCoMo) 0.4/0.6 and 0.3/0.7 within 0.005 of each other; in
// the product (eval locomo --dict 3, server frame, all-evidence) 0.3/0.7
// 0.833, 0.4/0.6 0.846, 0.5/0.5 0.846 but open-domain below v1.
const (
	LexicalWeight = 0.4
	DenseWeight   = 0.6
	// LexicalFloor is the score of a lexical match whose fused score is not
	// positive: below every positive one, above nothing.
	LexicalFloor = float32(1e-6)
	// DenseSample is about the most items the cosine's statistic is taken
	// over (see above).
	DenseSample = 1024
	// DenseExact is the most visible items for which every cosine is
	// computed exactly (0.2 ms of dot products); beyond, two stages.
	DenseExact = 4096
)

// Dims is the length of the dense vectors the arena holds (0: none).
func (a *Arena) Dims() int { return a.opts.Dims }

// chunkScores is one chunk's exact lexical scores and the sums.
type chunkScores struct {
	b   []float32 // per item; b < 0 marks an excluded item
	sum [4]float64
	n   int // items in the lexical statistic
	ns  int // items in the dense sample
}

// Score buffers are pooled like candidate buffers: a query over 250k items
// would otherwise allocate megabytes.
func (a *Arena) getScores(n int) []float32 {
	if p, ok := a.scores.Get().(*[]float32); ok && cap(*p) >= n {
		return (*p)[:n]
	}
	return make([]float32, n)
}

func (a *Arena) putScores(s []float32) { a.scores.Put(&s) }

// getHits is an empty candidate buffer of capacity n at least.
func (a *Arena) getHits(n int) []Hit {
	if p, ok := a.hitBufs.Get().(*[]Hit); ok && cap(*p) >= n {
		return (*p)[:0]
	}
	return make([]Hit, 0, n)
}

func (a *Arena) putHits(h []Hit) { a.hitBufs.Put(&h) }

func (a *Arena) getAcc(n int) []float64 {
	if p, ok := a.accs.Get().(*[]float64); ok && cap(*p) >= n {
		return (*p)[:n]
	}
	return make([]float64, n)
}

func (a *Arena) putAcc(s []float64) { a.accs.Put(&s) }

// parallelIdx runs fn over every work index, workers at a time.
func parallelIdx(workers, n int, fn func(w, i int)) {
	var next atomic.Int64
	run := func(w int) {
		for {
			i := int(next.Add(1) - 1)
			if i >= n {
				return
			}
			fn(w, i)
		}
	}
	var wg sync.WaitGroup
	for w := 1; w < workers; w++ {
		wg.Go(func() { run(w) })
	}
	run(0)
	wg.Wait()
}

// hybridScan is one hybrid search's shared state.
type hybridScan struct {
	a       *Arena
	q       Query
	p       *bm25
	work    []*chunk
	per     []chunkScores
	ex      map[int64]struct{}
	exIDs   []int64 // sorted
	qinv    float64
	stride  int
	workers int
	// the statistic
	mb, sb, md, sd float64
}

// hybrid is SearchWithStats for a query with a dense vector.
func (a *Arena) hybrid(q Query, p *bm25, work []*chunk, visible int) ([]Hit, ScanStats) {
	st := ScanStats{Visible: visible, Bounded: visible}
	workers := a.opts.Workers
	if q.Workers > 0 {
		workers = q.Workers // the scan gate's share for this tenant
	}
	workers = max(min(workers, len(work)), 1)
	st.Workers = workers
	h := &hybridScan{a: a, q: q, p: p, work: work, per: make([]chunkScores, len(work)),
		ex: excludeSet(q.Exclude), workers: workers, stride: (visible + DenseSample - 1) / DenseSample}
	if h.ex != nil {
		h.exIDs = slices.Sorted(maps.Keys(h.ex))
	}
	h.qinv = float64(q.DenseInv)
	if !(h.qinv > 0) {
		h.qinv = 1
	}
	defer func() {
		for i := range h.per {
			if h.per[i].b != nil {
				a.putScores(h.per[i].b)
			}
		}
	}()
	probes := make([]int64, workers)
	parallelIdx(workers, len(work), func(w, i int) { probes[w] += h.lexical(i) })
	for _, x := range probes {
		st.Probes += x
	}
	var sum [4]float64
	n, ns := 0, 0
	for i := range h.per {
		for k := range sum {
			sum[k] += h.per[i].sum[k]
		}
		n += h.per[i].n
		ns += h.per[i].ns
	}
	st.Rescored = ns
	if n == 0 {
		return nil, st
	}
	h.mb, h.sb = meanSD(sum[0], sum[1], n)
	h.md, h.sd = meanSD(sum[2], sum[3], ns)
	if q.ExactDense || visible <= DenseExact || a.opts.Dims > codeDims {
		st.Candidates = n
		st.Rescored += n - ns
		return h.exhaustive(), st
	}
	hits, cands := h.twoStage(a.opts.denseBudget(q.K, visible))
	st.Candidates = cands
	st.Rescored += cands
	return hits, st
}

// lexical fills chunk i's exact bm25 scores, marks its excluded items and
// sums the lexical statistic and the dense sample. It returns the signature
// words and postings read.
func (h *hybridScan) lexical(i int) int64 {
	c, cs, p := h.work[i], &h.per[i], h.p
	n := c.n()
	cs.b = h.a.getScores(n)
	var read int64
	switch {
	case len(p.terms) == 0:
		clear(cs.b)
	case c.post != nil:
		acc := h.a.getAcc(n)
		read = int64(p.lexicalInverted(c, acc, cs.b))
		h.a.putAcc(acc)
	default:
		for j := range n {
			b := float32(0)
			for _, pr := range p.probes {
				read++
				if c.sig[pr.word][j]&pr.mask == pr.mask {
					b = p.score(c.terms(j), c.lens[j])
					break
				}
			}
			cs.b[j] = b
		}
	}
	h.markExcluded(c, cs.b)
	for _, b := range cs.b {
		if b < 0 {
			continue
		}
		bb := float64(b)
		cs.sum[0] += bb
		cs.sum[1] += bb * bb
		cs.n++
	}
	for j := (h.stride - c.base%h.stride) % h.stride; j < n; j += h.stride {
		if cs.b[j] < 0 {
			continue
		}
		d := h.cosine(c, j)
		cs.sum[2] += d
		cs.sum[3] += d * d
		cs.ns++
	}
	return read
}

// markExcluded sets b to -1 for the chunk's excluded items, testing ids one
// by one only in a chunk whose id range holds an excluded id.
func (h *hybridScan) markExcluded(c *chunk, b []float32) {
	if len(h.exIDs) == 0 {
		return
	}
	k, _ := slices.BinarySearch(h.exIDs, c.idMin)
	if k == len(h.exIDs) || h.exIDs[k] > c.idMax {
		return
	}
	for j, id := range c.ids {
		if _, skip := h.ex[id]; skip {
			b[j] = -1
		}
	}
}

// cosine is item j's exact cosine with the query, as the fusion reads it.
func (h *hybridScan) cosine(c *chunk, j int) float64 {
	inv := c.dinv[j]
	if !(inv > 0) {
		return 0
	}
	dims := c.dims
	return float64(float32(float64(dot8(h.q.Dense, c.dense[j*dims:(j+1)*dims])) * float64(inv) * h.qinv))
}

// fuse is the fused score of an item and whether it is a hit.
func (h *hybridScan) fuse(b float32, d float64) (float32, bool) {
	f := 0.0
	if h.sb > 0 {
		f += LexicalWeight * (float64(b) - h.mb) / h.sb
	}
	if h.sd > 0 {
		f += DenseWeight * (d - h.md) / h.sd
	}
	score := float32(f)
	if !(score > LexicalFloor) {
		if b <= 0 {
			return 0, false
		}
		score = LexicalFloor
	}
	return score, true
}

// exhaustive scores every visible item's cosine exactly.
func (h *hybridScan) exhaustive() []Hit {
	tops := make([]*topK, h.workers)
	for w := range tops {
		tops[w] = newTopK(h.q.K)
	}
	parallelIdx(h.workers, len(h.work), func(w, i int) {
		c, cs := h.work[i], &h.per[i]
		for j, b := range cs.b {
			if b < 0 {
				continue
			}
			if score, ok := h.fuse(b, h.cosine(c, j)); ok {
				tops[w].offer(Hit{ID: c.ids[j], Score: score, Index: handle(c.slot, j), DenseOnly: b <= 0})
			}
		}
	})
	return mergeTops(tops, h.q.K)
}

// twoStage keeps the budget items best by their estimated fused score and
// ranks them by the exact one. It returns the hits and the candidates.
func (h *hybridScan) twoStage(budget int) ([]Hit, int) {
	tables := newSignTables(h.a.rot, h.q.Dense)
	// The estimate only orders candidates, so it is fused with reciprocals
	// (the exact score divides, in fuse).
	lw, dw := 0.0, 0.0
	if h.sb > 0 {
		lw = LexicalWeight / h.sb
	}
	if h.sd > 0 {
		dw = DenseWeight / h.sd
	}
	base := -lw*h.mb - dw*h.md
	// Each worker keeps its best budget of what it has seen; cutoff is the
	// worst of them once it has dropped some, below which nothing enters.
	bufs := make([][]Hit, h.workers)
	cutoffs := make([]float32, h.workers)
	for w := range bufs {
		bufs[w], cutoffs[w] = h.a.getHits(2*budget), float32(math.Inf(-1))
	}
	parallelIdx(h.workers, len(h.work), func(w, i int) {
		c, cs := h.work[i], &h.per[i]
		buf, cutoff := bufs[w], cutoffs[w]
		var sums [estimateBlock]int32
		for j, b := range cs.b {
			if j%estimateBlock == 0 {
				tables.sums(c, j, sums[:min(estimateBlock, len(cs.b)-j)])
			}
			if b < 0 {
				continue
			}
			score := float32(base + lw*float64(b) + dw*tables.scaled(sums[j%estimateBlock], c.dw[j], h.qinv))
			if !(score > LexicalFloor) {
				if b <= 0 {
					continue
				}
				score = LexicalFloor
			}
			if score < cutoff {
				continue
			}
			// i rides in Index until the rescore: the chunk's place in work.
			buf = append(buf, Hit{ID: c.ids[j], Score: score, Index: i<<posBits | j})
			if len(buf) >= 2*budget {
				buf = selectBest(buf, budget)
				cutoff = buf[budget-1].Score
			}
		}
		bufs[w], cutoffs[w] = buf, cutoff
	})
	cands := bufs[0]
	for _, b := range bufs[1:] {
		cands = append(cands, b...)
		h.a.putHits(b)
	}
	defer func() { h.a.putHits(cands) }()
	cands = selectBest(cands, budget)
	top := newTopK(h.q.K)
	for _, cd := range cands {
		i, j := unhandle(cd.Index)
		c := h.work[i]
		b := h.per[i].b[j]
		if score, ok := h.fuse(b, h.cosine(c, j)); ok {
			top.offer(Hit{ID: cd.ID, Score: score, Index: handle(c.slot, j), DenseOnly: b <= 0})
		}
	}
	return top.sorted(), len(cands)
}

// selectBest reorders hits so that the k best (by better, a total order, so
// the set is unique) come first, and returns them, their order unspecified;
// the last of them is the worst kept. Quickselect, median-of-three pivots
// (the order is strict: Index breaks the last ties).
func selectBest(hits []Hit, k int) []Hit {
	if k <= 0 {
		return hits[:0]
	}
	k = min(k, len(hits))
	lo, hi := 0, len(hits)-1
	for lo < hi {
		// Median of three to hi, then a Lomuto partition around it.
		mid := lo + (hi-lo)/2
		if better(hits[mid], hits[lo]) {
			hits[mid], hits[lo] = hits[lo], hits[mid]
		}
		if better(hits[hi], hits[lo]) {
			hits[hi], hits[lo] = hits[lo], hits[hi]
		}
		if better(hits[mid], hits[hi]) {
			hits[hi], hits[mid] = hits[mid], hits[hi]
		}
		pivot := hits[hi]
		store := lo
		for i := lo; i < hi; i++ {
			if better(hits[i], pivot) {
				hits[i], hits[store] = hits[store], hits[i]
				store++
			}
		}
		hits[store], hits[hi] = hits[hi], hits[store]
		switch {
		case store == k-1:
			lo = hi
		case k-1 < store:
			hi = store - 1
		default:
			lo = store + 1
		}
	}
	hits = hits[:k]
	// The worst kept goes last, for the caller's cutoff.
	w := 0
	for x := range hits {
		if better(hits[w], hits[x]) {
			w = x
		}
	}
	hits[w], hits[k-1] = hits[k-1], hits[w]
	return hits
}

// mergeTops is the best k of the workers' tops, best first.
func mergeTops(tops []*topK, k int) []Hit {
	var all []Hit
	for _, t := range tops {
		all = append(all, t.hits...)
	}
	sortHits(all)
	if len(all) > k {
		all = all[:k]
	}
	return all
}

// meanSD is the mean and (population) standard deviation from sums.
func meanSD(s, ss float64, n int) (float64, float64) {
	if n == 0 {
		return 0, 0
	}
	m := s / float64(n)
	v := ss/float64(n) - m*m
	if v <= 1e-12*(m*m+1) { // a constant side, up to rounding
		return m, 0
	}
	return m, math.Sqrt(v)
}

// ReferenceHybrid is the brute-force hybrid scorer the arena must equal:
// every visible item of items scored lexically (the statistic of all of
// items, as ReferenceSearch) and densely, the cosine's statistic over the
// sample of the law above (items in slice order being each user's arrival
// order), fused over the visible items in slice order. Summing in another
// order than the arena's moves the fused scores by rounding only; Hit.Index
// is the position in items.
func ReferenceHybrid(items []Item, q Query, opts Options) []Hit {
	opts = opts.withDefaults()
	refs, p, visible := referenceRows(items, q, opts)
	qinv := float64(q.DenseInv)
	if !(qinv > 0) {
		qinv = 1
	}
	users := map[int64]bool{}
	for _, u := range q.Users {
		users[u] = true
	}
	seen := 0
	for _, it := range items {
		if q.AllUsers || users[it.User] {
			seen++
		}
	}
	stride := (seen + DenseSample - 1) / DenseSample
	type scored struct {
		i    int
		b, d float32
	}
	var rows []scored
	var sum [4]float64
	ns := 0
	index := map[int64]int{} // each user's arrival position
	for i, it := range items {
		k := index[it.User]
		index[it.User] = k + 1
		if !visible(it) {
			continue
		}
		b := p.score(refs[i].enc, refs[i].length)
		d := float32(0)
		if len(it.Dense) == opts.Dims && it.DenseInv > 0 {
			d = float32(float64(dot8(q.Dense, it.Dense)) * float64(it.DenseInv) * qinv)
		}
		rows = append(rows, scored{i, b, d})
		sum[0] += float64(b)
		sum[1] += float64(b) * float64(b)
		if k%stride == 0 {
			sum[2] += float64(d)
			sum[3] += float64(d) * float64(d)
			ns++
		}
	}
	if len(rows) == 0 {
		return nil
	}
	mb, sb := meanSD(sum[0], sum[1], len(rows))
	md, sd := meanSD(sum[2], sum[3], ns)
	var hits []Hit
	for _, r := range rows {
		f := 0.0
		if sb > 0 {
			f += LexicalWeight * (float64(r.b) - mb) / sb
		}
		if sd > 0 {
			f += DenseWeight * (float64(r.d) - md) / sd
		}
		score := float32(f)
		if !(score > LexicalFloor) {
			if r.b <= 0 {
				continue
			}
			score = LexicalFloor
		}
		hits = append(hits, Hit{ID: items[r.i].ID, Score: score, Index: r.i, DenseOnly: r.b <= 0})
	}
	sortHits(hits)
	if q.K < len(hits) {
		hits = hits[:max(q.K, 0)]
	}
	return hits
}
