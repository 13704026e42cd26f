package arena

// Why the search is exact.
//
// Bound. For an item of length L, query term j contributes a_j*r(f_j, L),
// with a_j = idf_j*w_j > 0 and r(f, L) = f(k1+1)/(f + k1(1-b+bL/avgdl)),
// which grows with f and stays below k1+1. Every term the item holds passes
// its signature test (a Bloom filter has no false negatives), and a term held
// more than once also has its extra bit set. So, F being the item's largest
// frequency,
//
//	score <= UB = r(1, L)*sum{a_j : j passes, extra bit clear}
//	            + r(F, L)*sum{a_j : j passes, extra bit set}.
//
// False positives only make UB larger. UB is computed in float64 in any
// order and the score is rounded to float32: the rounding stays far inside
// boundSlack, so score <= UB*boundSlack.
//
// Skipping. UB <= (k1+1)*sum{a_j : j passes}, so an item passing none of the
// essential terms for a limit lim (all but the lightest terms whose
// (k1+1)*sum is <= lim) has UB <= lim, and boundChunk drops it after testing
// only the essential terms' signature words.
//
// Lower bound. Once K distinct visible, non-excluded items have exact
// scores >= lb, the final K-th score is >= lb: an item whose
// UB*boundSlack < lb scores strictly below K others and is out, even with
// the id tie-break. The seed, the workers' tops and stage 2 all raise lb.
//
// Stage 1 (each worker, its chunks): items with UB > max(cutoff, lb/slack)
// become candidates. At 2*budget candidates the worker keeps the budget best
// by UB (cutoff := the smallest kept UB, which bounds every dropped one),
// rescores them in decreasing UB until the next UB*boundSlack < lb, and
// forgets the rest, which lb proves out.
//
// Stage 2: the workers' exact tops are merged and their remaining
// candidates rescored in decreasing UB until the next UB*boundSlack is below
// the K-th score. What is left unproven is bounded by the largest remaining
// UB and the largest cutoff; if K hits are held and both are below the K-th
// score (times boundSlack), the answer is proven. Otherwise the budget was
// too small and the fallback rescans every visible item, exact-scoring any
// whose UB*boundSlack reaches the K-th score found so far.
//
// Every item is thus scored exactly or proven to score below K others, so
// the result is exhaustive exact scoring ordered by (score desc, id asc).
// How chunks fall to workers changes which items get scored, never the
// result.

// Work. Every stage reads signatures only for the query's terms, which
// prepare caps at Options.MaxTerms (T): the seed tests each visible item
// against each term once, plus at most seedScores*T^2 tests in all for the
// items it scores; the first pass and the fallback each test an item's
// essential terms (at most T) and, for an item that passes, all T terms once
// more. So a search tests at most ProbeCeiling(V, T) signature words over V
// visible items, and computes at most 2V+seedScores exact scores, each
// reading the item's terms and at most T query terms: the cost of a
// 100,000-word question is that of a T-word one.

// ProbeCeiling is the most signature words a search over visible items with
// terms query terms (after the cap) can test: 5*terms per item, and the
// seed's seedScores*terms^2.
func ProbeCeiling(visible, terms int) int64 {
	return 5*int64(terms)*int64(visible) + seedScores*int64(terms)*int64(terms)
}

// ScanStats tell how a search went, for benchmarks and tests.
type ScanStats struct {
	Visible    int  // items of the visible users
	Terms      int  // query terms scored with: present in the corpus, within the cap
	Capped     int  // query terms present in the tenant that the cap left out
	Unseen     int  // query terms the tenant holds but no visible item does
	Workers    int  // goroutines the scan ran on
	Bounded    int  // items whose bound the first pass computed (matching an essential term)
	Candidates int  // items kept by the first pass
	Rescored   int  // exact scores computed
	Fallback   bool // the budget could not prove the answer; a pruned exhaustive pass did
	// Probes are the signature words tested, the scan's unit of work: at
	// most ProbeCeiling(Visible, Terms).
	Probes int64
}

// Search returns the exact BM25 top K over the visible items, best first
// (score desc, id asc). Only items with a positive score are returned.
func (a *Arena) Search(q Query) []Hit {
	h, _ := a.SearchWithStats(q)
	return h
}

// SearchWithStats is Search, also reporting what the scan did.
func (a *Arena) SearchWithStats(q Query) ([]Hit, ScanStats) {
	a.mu.RLock()
	defer a.mu.RUnlock()
	var st ScanStats
	if q.K <= 0 || a.n == 0 {
		return nil, st
	}
	work := a.visibleChunks(q)
	for _, c := range work {
		st.Visible += c.n()
	}
	if st.Visible == 0 {
		return nil, st
	}
	p := prepare(q, corpus{a.n, a.totalLen, a.df}, func(terms []TermID) corpus {
		return visibleCorpus(work, terms)
	}, float64(a.opts.K1), float64(a.opts.B), a.opts.MaxTerms)
	st.Terms, st.Capped, st.Unseen = len(p.terms), p.capped, p.unseen
	hybrid := a.opts.Dims > 0 && len(q.Dense) == a.opts.Dims
	if len(p.terms) == 0 && !hybrid {
		return nil, st
	}
	if hybrid {
		hits, hst := a.hybrid(q, &p, work, st.Visible)
		hst.Terms, hst.Capped, hst.Unseen = st.Terms, st.Capped, st.Unseen
		return hits, hst
	}
	s := &scan{a: a, p: &p, k: q.K, work: work, exclude: excludeSet(q.Exclude)}
	s.prepareTables()
	workers := a.opts.Workers
	if q.Workers > 0 {
		workers = q.Workers
	}
	workers = min(workers, len(work))
	st.Workers = workers
	// The budget is shared out: each worker keeps its part of it, so the
	// total does not grow with the number of workers.
	budget := (min(a.opts.candidateBudget(q.K, st.Visible), st.Visible) + workers - 1) / workers

	// Stage 1: bounds from signatures, best candidates per worker.
	firsts := make([]pass1, workers)
	shared := new(floor)
	seeded, probes := s.seed(shared)
	st.Rescored += seeded
	st.Probes += probes
	for w := range firsts {
		firsts[w] = pass1{budget: budget, top: newTopK(q.K), shared: shared, cands: a.getCands(2 * budget)}
	}
	s.parallel(workers, func(w int, c *chunk) { s.bound(c, &firsts[w]) })
	cands := firsts[0].cands
	defer func() {
		for w := range firsts {
			a.putCands(firsts[w].cands)
		}
	}()
	dropped := 0.0
	top := newTopK(q.K)
	for w := range firsts {
		f := &firsts[w]
		st.Bounded += f.bounded
		st.Candidates += f.accepted
		st.Rescored += f.rescored
		st.Probes += f.probes
		if w > 0 {
			cands = append(cands, f.cands...)
		}
		if f.shrunk {
			dropped = max(dropped, f.cutoff)
		}
		for _, h := range f.top.hits {
			top.offer(h)
		}
	}

	firsts[0].cands = cands // grown, handed back to the pool

	// Stage 2: exact rescore in decreasing bound.
	heapifyCands(cands)
	for len(cands) > 0 {
		c := cands[0]
		if top.full() && c.ub*boundSlack < float64(top.worst().Score) {
			break
		}
		cands = popCand(cands)
		st.Rescored++
		s.offer(top, c.h)
	}
	rest := dropped
	if len(cands) > 0 {
		rest = max(rest, cands[0].ub)
	}
	if rest > 0 && !(top.full() && rest*boundSlack < float64(top.worst().Score)) {
		st.Fallback = true
		top = s.exhaustive(workers, top, shared.get(), &st)
	}
	return top.sorted(), st
}

// Candidate buffers are pooled: a search would otherwise allocate tens to
// hundreds of kilobytes and make the collector run for nothing.
func (a *Arena) getCands(n int) []cand {
	if b, ok := a.cands.Get().(*[]cand); ok && cap(*b) >= n {
		return (*b)[:0]
	}
	return make([]cand, 0, n)
}

func (a *Arena) putCands(c []cand) { a.cands.Put(&c) }

func (a *Arena) visibleChunks(q Query) []*chunk {
	var work []*chunk
	if q.AllUsers {
		for _, c := range a.chunks {
			if c != nil {
				work = append(work, c)
			}
		}
		return work
	}
	seen := make(map[int64]bool, len(q.Users))
	for _, u := range q.Users {
		if !seen[u] {
			seen[u] = true
			work = append(work, a.users[u]...)
		}
	}
	return work
}

func excludeSet(ids []int64) map[int64]struct{} {
	if len(ids) == 0 {
		return nil
	}
	m := make(map[int64]struct{}, len(ids))
	for _, id := range ids {
		m[id] = struct{}{}
	}
	return m
}

// offer scores item h exactly and offers it to top.
func (s *scan) offer(top *topK, h int) {
	slot, pos := unhandle(h)
	c := s.a.chunks[slot]
	id := c.ids[pos]
	if s.exclude != nil {
		if _, ok := s.exclude[id]; ok {
			return
		}
	}
	if sc := s.p.score(c.terms(pos), c.lens[pos]); sc > 0 {
		top.offer(Hit{ID: id, Score: sc, Index: h})
	}
}

// exhaustive is the fallback: every visible item is bounded again and scored
// exactly unless its bound proves it cannot reach the best lower bound of the
// K-th score (stage 2's K-th score, the workers' lb, or the worker's own top
// here). The union of the per-worker tops and stage 2's top holds the
// answer; duplicates (items scored twice) are adjacent once sorted.
func (s *scan) exhaustive(workers int, top *topK, lb float64, st *ScanStats) *topK {
	floor := lb
	if top.full() {
		floor = max(floor, float64(top.worst().Score))
	}
	locals := make([]*topK, workers)
	rescored := make([]int, workers)
	probes := make([]int64, workers)
	for w := range locals {
		locals[w] = newTopK(s.k)
	}
	s.parallel(workers, func(w int, c *chunk) {
		local := locals[w]
		thr := func() float64 {
			if local.full() {
				return max(floor, float64(local.worst().Score))
			}
			return floor
		}
		// Any bound <= lim has bound*boundSlack < thr: safe to skip.
		lim := func() float64 { return thr() / (boundSlack * (1 + 1e-9)) }
		probes[w] += s.boundChunk(c, lim, func(i int, ub float64) {
			if ub*boundSlack < thr() {
				return
			}
			rescored[w]++
			s.offer(local, handle(c.slot, i))
		})
	})
	all := top.hits
	for w, l := range locals {
		all = append(all, l.hits...)
		st.Rescored += rescored[w]
		st.Probes += probes[w]
	}
	sortHits(all)
	out := newTopK(s.k)
	for i, h := range all {
		if i > 0 && h.Index == all[i-1].Index {
			continue
		}
		if out.full() {
			break
		}
		out.hits = append(out.hits, h)
	}
	// out.hits is sorted best first, which is not heap order; sorted() copes.
	out.ordered = true
	return out
}
