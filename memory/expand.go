package memory

import (
	"math"
	"sort"

	"github.com/perpetuity/perpetuity/memory/arena"
)

// Query expansion by pseudo-relevance feedback: the words that carry the
// best first-pass matches (weighted by how well each matched and how rare
// the word is) join the question with a small weight, and the scan runs
// again. A question rarely uses the words its answer was said in; the
// answer's neighbours in the ranking often do.
type expansion struct {
	docs  int     // top matches that vote
	terms int     // words added
	beta  float32 // weight of the strongest added word (question words weigh 1)
}

// feedbackScan is the scan with feedback: the question's words vote through
// its best x.docs matches, the winners join it, and the scan that ranks is
// the expanded one. The first pass asks only for the voters: an exact
// search's top few are the same whatever K, and a small K proves its top
// cheaper than the full K. Without any winner the question's own full
// ranking is what ranks (the first pass's, when it found fewer than it
// asked for: then it holds every match).
func (e *Engine) feedbackScan(a *arena.Arena, q arena.Query) []arena.Hit {
	x := e.opt.Expansion
	first := q
	// expand wants two matches at least, whatever the voters.
	if voters := max(x.docs, 2); voters < q.K {
		first.K = voters
	}
	hits := a.Search(first)
	q.Terms, q.Weights = x.expand(a, q.Terms, hits)
	if q.Weights == nil && (first.K == q.K || len(hits) < first.K) {
		return hits
	}
	return a.Search(q)
}

func (x expansion) expand(a *arena.Arena, terms []uint32, hits []arena.Hit) ([]uint32, []float32) {
	if len(hits) < 2 || x.terms == 0 {
		return terms, nil
	}
	n := float64(a.Len())
	orig := make(map[uint32]bool, len(terms))
	for _, t := range terms {
		orig[t] = true
	}
	votes := map[uint32]float64{}
	top := float64(hits[0].Score)
	for _, h := range hits[:min(x.docs, len(hits))] {
		it, ok := a.Item(h.Index)
		if !ok || it.ID != h.ID || it.Length == 0 {
			continue // the arena changed under us; skip this vote
		}
		w := float64(h.Score) / top
		for i, t := range it.Terms {
			if orig[t] {
				continue
			}
			df := float64(a.DF(t))
			idf := math.Log(1 + (n-df+0.5)/(df+0.5))
			tf := 1.0
			if i < len(it.Freqs) {
				tf = float64(it.Freqs[i])
			}
			votes[t] += w * tf / float64(it.Length) * idf
		}
	}
	type vote struct {
		t uint32
		v float64
	}
	vs := make([]vote, 0, len(votes))
	for t, v := range votes {
		vs = append(vs, vote{t, v})
	}
	sort.Slice(vs, func(i, j int) bool {
		if vs[i].v != vs[j].v {
			return vs[i].v > vs[j].v
		}
		return vs[i].t < vs[j].t
	})
	if len(vs) > x.terms {
		vs = vs[:x.terms]
	}
	if len(vs) == 0 {
		return terms, nil
	}
	out := append([]uint32(nil), terms...)
	ws := make([]float32, len(terms), len(terms)+len(vs))
	for i := range ws {
		ws[i] = 1
	}
	for _, v := range vs {
		out = append(out, v.t)
		ws = append(ws, x.beta*float32(v.v/vs[0].v))
	}
	return out, ws
}
