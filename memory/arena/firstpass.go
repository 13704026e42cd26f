package arena

import (
	"math"
	"sync/atomic"
)

// cand is a first-pass candidate: its bound and its Hit.Index.
type cand struct {
	ub float64
	h  int
}

// seedScores caps the exact scores the seed computes.
const seedScores = 256

// seed gives the first pass a lower bound of the final K-th score before it
// starts: it exact-scores the visible items whose signatures match the
// heaviest query term (then the next, while fewer than K were found), at
// most seedScores of them. The answer usually hinges on the rarest terms, so
// this bound is close to the final one, and the first pass can skip from its
// first chunk every item that matches only light terms. The seed's hits are
// dropped: the first pass finds them again.
//
// It returns the exact scores computed and the signature words tested: one
// per item and term, plus, for an item passing a term, at most one per
// heavier term. An item passing a heavier term was scored at the first it
// passed, and the seed stops at seedScores, so those extra tests number at
// most seedScores*len(terms)^2 in all.
func (s *scan) seed(shared *floor) (scored int, probes int64) {
	top := newTopK(s.k)
	for k, p := range s.byWeight {
		for _, c := range s.work {
			for i, x := range c.sig[p.word&(sigWords-1)] {
				probes++
				if x&p.mask != p.mask {
					continue
				}
				m, tested := matchesAny(c, i, s.byWeight[:k])
				probes += int64(tested)
				if m {
					continue // K slots must hold K distinct items
				}
				s.offer(top, handle(c.slot, i))
				if scored++; scored == seedScores {
					break
				}
			}
			if scored == seedScores {
				break
			}
		}
		if top.full() || scored == seedScores {
			break
		}
	}
	if top.full() {
		shared.raise(float64(top.worst().Score))
	}
	return scored, probes
}

// matchesAny tells whether item i passes any of probes, and how many it tested.
func matchesAny(c *chunk, i int, probes []probe) (bool, int) {
	for k, p := range probes {
		if c.sig[p.word&(sigWords-1)][i]&p.mask == p.mask {
			return true, k + 1
		}
	}
	return false, len(probes)
}

// floor is the best lower bound of the final K-th score the workers have
// found: the K-th exact score of one worker's rescored items (K distinct
// items score at least that much). Shared, it lets every worker prune with
// the best one.
type floor struct{ bits atomic.Uint64 }

func (f *floor) get() float64 { return math.Float64frombits(f.bits.Load()) }

func (f *floor) raise(v float64) {
	for {
		old := f.bits.Load()
		if v <= math.Float64frombits(old) || f.bits.CompareAndSwap(old, math.Float64bits(v)) {
			return
		}
	}
}

// pass1 is one worker's first-pass state: its best candidates so far, the
// cutoff at or below which it has dropped candidates for lack of budget, and
// the exact top of the candidates it has already rescored.
type pass1 struct {
	budget   int
	cands    []cand
	cutoff   float64
	shrunk   bool
	top      *topK
	shared   *floor
	bounded  int
	accepted int
	rescored int
	probes   int64
}

// lb is a lower bound of the final K-th score.
func (f *pass1) lb() float64 {
	lb := f.shared.get()
	if f.top.full() {
		lb = max(lb, float64(f.top.worst().Score))
	}
	return lb
}

// lim is what a bound must exceed to matter: above the budget cutoff, and
// (up to boundSlack) at least lb, since an item scoring below lb is beaten
// by K items already scored.
func (f *pass1) lim() float64 { return max(f.cutoff, f.lb()/(boundSlack*(1+1e-9))) }

func (s *scan) bound(c *chunk, f *pass1) {
	f.probes += s.boundChunk(c, f.lim, func(i int, ub float64) {
		f.bounded++
		if ub <= f.lim() {
			return
		}
		f.accepted++
		f.cands = append(f.cands, cand{ub, handle(c.slot, i)})
		if len(f.cands) >= 2*f.budget {
			s.shrink(f)
		}
	})
}

// shrink keeps the budget best candidates (the cutoff becomes the smallest
// kept bound, so everything dropped now or later is bounded by it), then
// rescores them exactly in decreasing bound until the next bound cannot
// reach the worker's K-th exact score lb; the rest are proven out. Rescored
// candidates are in f.top or beaten by K items that are, so the buffer ends
// empty and lb is as high as this worker's items allow, which is what lets
// the first pass skip most items after testing only their heaviest terms.
func (s *scan) shrink(f *pass1) {
	if len(f.cands) > f.budget {
		selectTop(f.cands, f.budget)
		f.cands = f.cands[:f.budget]
		lo := f.cands[0].ub
		for _, c := range f.cands[1:] {
			lo = min(lo, c.ub)
		}
		f.cutoff = max(f.cutoff, lo) // lo > cutoff already: candidates beat it
		f.shrunk = true
	}
	c := f.cands
	heapifyCands(c)
	for len(c) > 0 && c[0].ub*boundSlack >= f.lb() {
		h := c[0].h
		c = popCand(c)
		s.offer(f.top, h)
		f.rescored++
	}
	if f.top.full() {
		f.shared.raise(float64(f.top.worst().Score))
	}
	f.cands = f.cands[:0]
}
