package arena

import (
	"cmp"
	"math"
	"slices"
)

// Query asks for the K best items by BM25 among the items of the visible users.
type Query struct {
	Terms   []TermID
	Weights []float32 // per-term weight multiplying its contribution; nil or a missing entry is 1, <= 0 drops the term
	// Users whose items are visible, normally exactly the asking user. The
	// arena keeps each user's items together, so visibility is decided per
	// user before the scan and costs nothing per item.
	Users    []int64
	AllUsers bool    // every user of the tenant is visible (Users ignored)
	Exclude  []int64 // item ids never returned (already shown, forbidden)
	K        int
	// Dense, when the arena holds vectors of the same length, makes the
	// search hybrid (hybrid.go): the query's unit vector as int8, DenseInv
	// the inverse length of that int8 vector.
	Dense    []int8
	DenseInv float32
	// Workers caps the goroutines this search runs on (0: Options.Workers);
	// the result does not depend on it.
	Workers int
	// ExactDense makes a hybrid search compute every visible item's cosine
	// exactly instead of only its candidates' (hybrid.go): the exhaustive
	// scoring the two-stage scan is tested against.
	ExactDense bool
}

// Hit is one ranked item. Index addresses it in the arena (Arena.Item) until
// the next RemoveUser or Reset.
type Hit struct {
	ID    int64
	Score float32
	Index int
	// DenseOnly: a hybrid hit that shares no query term, there by meaning
	// alone (hybrid.go); always false for a lexical search.
	DenseOnly bool
}

// bm25 holds a query prepared against one corpus statistic. The same value
// scores the arena's layout and the reference scorer's Items, through score.
type bm25 struct {
	terms  []TermID  // ascending, distinct, present in the corpus, positive weight
	a      []float64 // idf * weight, aligned with terms
	w      []float64 // the query's weight of each term
	probes []probe   // signature position of each term
	k1p1   float64
	c0     float64 // k1*(1-b): the length norm of an item is c0 + c1*length
	c1     float64 // k1*b/avgdl
	capped int     // terms present in the tenant that the caps left out
	unseen int     // terms the tenant holds, the cap kept, and the visible items lack
}

// prepare canonicalises q: duplicate query terms add their weights; of the
// terms the tenant holds, at most maxTerms are kept (capTerms) by the
// tenant's statistic, since a scan's work grows with the number of query
// terms and the question's author chooses it. The kept terms are then scored
// against the visible corpus (visible.go) when visible is not nil, and
// dropped if it holds none of them.
func prepare(q Query, tenant corpus, visible func([]TermID) corpus, k1, b float64, maxTerms int) bm25 {
	p := bm25{k1p1: k1 + 1}
	if tenant.n == 0 || len(q.Terms) == 0 {
		return p
	}
	type tw struct {
		t TermID
		w float64
	}
	pairs := make([]tw, 0, len(q.Terms))
	for i, t := range q.Terms {
		w := 1.0
		if i < len(q.Weights) {
			w = float64(q.Weights[i])
		}
		pairs = append(pairs, tw{t, w})
	}
	slices.SortStableFunc(pairs, func(x, y tw) int {
		switch {
		case x.t < y.t:
			return -1
		case x.t > y.t:
			return 1
		}
		return 0
	})
	for i := 0; i < len(pairs); {
		t, w := pairs[i].t, pairs[i].w
		j := i + 1
		for ; j < len(pairs) && pairs[j].t == t; j++ {
			w += pairs[j].w
		}
		i = j
		d := tenant.df(t)
		if d <= 0 || !(w > 0) || math.IsInf(w, 0) {
			continue
		}
		p.terms = append(p.terms, t)
		p.w = append(p.w, w)
		p.a = append(p.a, idf(tenant.n, d)*w)
		p.probes = append(p.probes, termProbe(t))
	}
	c := tenant
	if visible == nil {
		p.capTerms(maxTerms)
	} else if len(p.terms) > 0 {
		// The tenant's statistic shortlists (preCap times the cap, so the
		// user's own rare words survive others' rarer ones), the visible
		// one decides.
		p.capTerms(preCap * maxTerms)
		c = visible(p.terms)
		kept := 0
		for j, t := range p.terms {
			d := c.df(t)
			if d <= 0 {
				continue
			}
			p.terms[kept], p.w[kept], p.probes[kept] = t, p.w[j], p.probes[j]
			p.a[kept] = smoothedIDF(c.n, d, tenant.n, tenant.df(t)) * p.w[j]
			kept++
		}
		p.unseen = len(p.terms) - kept
		p.terms, p.w, p.a, p.probes = p.terms[:kept], p.w[:kept], p.a[:kept], p.probes[:kept]
		p.capTerms(maxTerms)
	}
	avgdl := 1.0
	if c.n > 0 && c.totalLen > 0 {
		avgdl = float64(c.totalLen) / float64(c.n)
	}
	p.c0 = k1 * (1 - b)
	p.c1 = k1 * b / avgdl
	return p
}

// preCap is how many times the term cap the tenant's statistic keeps for
// the visible one to choose from (visible.go).
const preCap = 4

// priorItems is the weight, in items, of the tenant's statistic in a
// visible one (visible.go).
const priorItems = 500

func idf(n, d int) float64 { return idfOf(float64(n), float64(d)) }

func idfOf(n, d float64) float64 { return math.Log(1 + (n-d+0.5)/(d+0.5)) }

// smoothedIDF is the idf of a term held by d of the n visible items, with
// the tenant's share of it (dt of nt) counted as priorItems items more.
func smoothedIDF(n, d, nt, dt int) float64 {
	return idfOf(float64(n)+priorItems, float64(d)+priorItems*float64(dt)/float64(nt))
}

// capTerms keeps the maxTerms terms of largest a_j (idf times weight: for
// the question's own words, the rarest), ties to the smaller term id, so the
// kept set depends on the query and the statistic alone. The terms left out
// are the most common ones, which move a ranking least: their idf is the
// smallest, and the items holding them are the many.
func (p *bm25) capTerms(maxTerms int) {
	if maxTerms <= 0 || len(p.terms) <= maxTerms {
		return
	}
	p.capped += len(p.terms) - maxTerms
	order := make([]int, len(p.terms))
	for j := range order {
		order[j] = j
	}
	slices.SortFunc(order, func(x, y int) int {
		if c := cmp.Compare(p.a[y], p.a[x]); c != 0 {
			return c
		}
		return cmp.Compare(p.terms[x], p.terms[y])
	})
	keep := order[:maxTerms]
	slices.Sort(keep) // back to ascending term order, which score needs
	for i, j := range keep {
		p.terms[i], p.w[i], p.a[i], p.probes[i] = p.terms[j], p.w[j], p.a[j], p.probes[j]
	}
	p.terms, p.w, p.a, p.probes = p.terms[:maxTerms], p.w[:maxTerms], p.a[:maxTerms], p.probes[:maxTerms]
}

// score is THE exact score of an item from its encoded terms (codec.go):
// every path calls it, so equal items get bit-identical scores and ties are
// real ties. It walks the item's terms and the query's, both ascending,
// summing contributions in ascending term order in float64 (the explicit
// conversions forbid fused multiply-adds), and rounds once to float32.
func (p *bm25) score(enc []byte, length uint32) float32 {
	qt := p.terms
	if len(qt) == 0 || len(enc) == 0 {
		return 0
	}
	norm := float64(p.c0 + float64(p.c1*float64(length)))
	var s float64
	j := 0
	t := TermID(0)
	for k := 0; k < len(enc); {
		v := uint64(enc[k])
		k++
		if v >= 0x80 {
			v, k = uvarint(enc, k-1)
		}
		t += TermID(v >> 1)
		f := 1.0
		if v&1 != 0 {
			var x uint64
			x, k = uvarint(enc, k)
			f = float64(x + 2)
		}
		for qt[j] < t {
			if j++; j == len(qt) {
				return float32(s)
			}
		}
		if qt[j] == t {
			s += float64(p.a[j] * float64(f*p.k1p1/float64(f+norm)))
			if j++; j == len(qt) {
				break
			}
		}
	}
	return float32(s)
}

// boundSlack covers float rounding between an upper bound computed in float64
// (any summation order) and the float32 exact score: both are within a few
// ulps of float64 of the real values, and rounding to float32 adds at most
// 2^-24 relative. 1e-6 is far above either.
const boundSlack = 1 + 1e-6

// better is the ranking order: higher score, then smaller ID, then (only for
// duplicated ids) smaller index, so the order is total and never depends on
// the number of workers.
func better(a, b Hit) bool {
	if a.Score != b.Score {
		return a.Score > b.Score
	}
	if a.ID != b.ID {
		return a.ID < b.ID
	}
	return a.Index < b.Index
}

func sortHits(h []Hit) {
	slices.SortFunc(h, func(x, y Hit) int {
		if better(x, y) {
			return -1
		}
		if better(y, x) {
			return 1
		}
		return 0
	})
}

// ReferenceSearch is the brute-force scorer the arena must equal: it scores
// every visible item of items with the statistic of the visible items (df,
// N and average length; visible.go), with the query terms opts.MaxTerms keeps
// by the statistic of all of items, and sorts. Hit.Index is the position in items. Only
// items scoring above zero are returned, as Search does.
func ReferenceSearch(items []Item, q Query, opts Options) []Hit {
	opts = opts.withDefaults()
	rows, p, visible := referenceRows(items, q, opts)
	var hits []Hit
	for i, it := range items {
		if !visible(it) {
			continue
		}
		if s := p.score(rows[i].enc, rows[i].length); s > 0 {
			hits = append(hits, Hit{ID: it.ID, Score: s, Index: i})
		}
	}
	sortHits(hits)
	if q.K < len(hits) {
		hits = hits[:max(q.K, 0)]
	}
	return hits
}

// refRow is one item as the reference scorers read it: its encoded terms
// and its length.
type refRow struct {
	enc    []byte
	length uint32
}

// referenceRows prepares the reference scorers (ReferenceSearch,
// ReferenceHybrid): every item's row, the query's BM25 under the pooled
// statistic of the visible items, and which items the query may see.
func referenceRows(items []Item, q Query, opts Options) ([]refRow, bm25, func(Item) bool) {
	rows := make([]refRow, len(items))
	vis := map[int64]bool{}
	for _, u := range q.Users {
		vis[u] = true
	}
	df, vdf := map[TermID]int{}, map[TermID]int{}
	tenant, seen := corpus{n: len(items), df: func(t TermID) int { return df[t] }}, corpus{df: func(t TermID) int { return vdf[t] }}
	for i, it := range items {
		t, f, l := canonical(it)
		rows[i] = refRow{appendTerms(nil, t, f), l}
		tenant.totalLen += uint64(l)
		for _, x := range t {
			df[x]++
		}
		if q.AllUsers || vis[it.User] {
			seen.n++
			seen.totalLen += uint64(l)
			for _, x := range t {
				vdf[x]++
			}
		}
	}
	p := prepare(q, tenant, func([]TermID) corpus { return seen }, float64(opts.K1), float64(opts.B), opts.MaxTerms)
	ex := map[int64]bool{}
	for _, id := range q.Exclude {
		ex[id] = true
	}
	return rows, p, func(it Item) bool { return (q.AllUsers || vis[it.User]) && !ex[it.ID] }
}
