package arena

import (
	"cmp"
	"math/bits"
	"slices"
	"sync"
	"sync/atomic"
)

// scan is one search in flight.
type scan struct {
	a       *Arena
	p       *bm25
	k       int
	work    []*chunk
	exclude map[int64]struct{}
	probes  []probe
	// tables[g][m] is the sum of a_j over the query terms of group g (terms
	// 8g..8g+7) whose bit is set in m: one lookup per 8 query terms.
	tables [][256]float64
	// byWeight lists the probes by a_j descending; cum[k] is (k1+1) times
	// the sum of the k smallest a_j, the largest bound of an item matching
	// only those k terms.
	byWeight []probe
	cum      []float64
}

func (s *scan) prepareTables() {
	nq := len(s.p.terms)
	s.probes = s.p.probes
	s.tables = make([][256]float64, (nq+7)/8)
	for g := range s.tables {
		a := s.p.a[g*8 : min(g*8+8, nq)]
		t := &s.tables[g]
		for m := 1; m < 1<<len(a); m++ {
			t[m] = t[m&(m-1)] + a[bits.TrailingZeros(uint(m))]
		}
	}
	order := make([]int, nq)
	for j := range order {
		order[j] = j
	}
	slices.SortStableFunc(order, func(x, y int) int { return cmp.Compare(s.p.a[y], s.p.a[x]) })
	s.byWeight = make([]probe, nq)
	s.cum = make([]float64, nq+1)
	for k, j := range order {
		s.byWeight[k] = s.probes[j]
	}
	sum := 0.0
	for k := 1; k <= nq; k++ {
		sum += s.p.a[order[nq-k]]
		s.cum[k] = sum * s.p.k1p1
	}
}

// essential is how many of the heaviest query terms an item must match for
// its bound to exceed lim: matching only lighter ones bounds it by lim.
func (s *scan) essential(lim float64) int {
	nq := len(s.byWeight)
	k := 0
	for k < nq && s.cum[k+1] <= lim {
		k++
	}
	return nq - k
}

// parallel runs fn over every chunk of s.work on up to workers goroutines
// that take chunks in turn. Which worker gets which chunk does not matter:
// each stage is exact per chunk and the merge orders by (score, id).
func (s *scan) parallel(workers int, fn func(w int, c *chunk)) {
	var next atomic.Int64
	run := func(w int) {
		for {
			i := int(next.Add(1) - 1)
			if i >= len(s.work) {
				return
			}
			fn(w, s.work[i])
		}
	}
	var wg sync.WaitGroup
	for w := 1; w < workers; w++ {
		wg.Go(func() { run(w) })
	}
	run(0)
	wg.Wait()
}

func b2u(b bool) uint64 {
	var x uint64
	if b {
		x = 1
	}
	return x
}

// boundChunk is the first pass over one chunk, 64 items at a time. lim()
// must never decrease and the caller must reject any item whose bound is <=
// lim(). Items matching none of the essential terms for the current lim are
// skipped after a branch-free test of those terms' signature columns only;
// the others get their bound computed and are passed to emit.
//
// It returns the signature words it tested: at most len(terms) per item for
// the essential test, and len(terms) per emitted item for its sums.
func (s *scan) boundChunk(c *chunk, lim func() float64, emit func(i int, ub float64)) (probes int64) {
	n := c.n()
	for blk := 0; blk < n; blk += 64 {
		ne := s.essential(lim())
		if ne == 0 {
			return probes
		}
		end := min(blk+64, n)
		var hit uint64
		for _, p := range s.byWeight[:ne] {
			col := c.sig[p.word&(sigWords-1)][blk:end]
			for i, x := range col {
				hit |= b2u(x&p.mask == p.mask) << i
			}
		}
		probes += int64(ne * (end - blk))
		for hit != 0 {
			i := blk + bits.TrailingZeros64(hit)
			hit &= hit - 1
			once, many := s.sums(c, i)
			probes += int64(len(s.probes))
			emit(i, s.itemBound(c, i, once, many))
		}
	}
	return probes
}

// sums adds a_j over the query terms passing item i's signature test, split
// by whether the term's extra bit (repeated term) is set.
func (s *scan) sums(c *chunk, i int) (once, many float64) {
	probes := s.probes
	for g := range s.tables {
		pr := probes[g*8 : min(g*8+8, len(probes))]
		var m, d uint
		for j, p := range pr {
			x := c.sig[p.word&(sigWords-1)][i]
			if x&p.mask == p.mask {
				m |= 1 << j
				if x&p.extra != 0 {
					d |= 1 << j
				}
			}
		}
		t := &s.tables[g]
		once += t[(m&^d)&255]
		many += t[d&255]
	}
	return once, many
}

// itemBound is UB for item i of c given its signature sums: terms seen once
// saturate at r(1, L), the others at r(F, L).
func (s *scan) itemBound(c *chunk, i int, once, many float64) float64 {
	norm := s.p.c0 + s.p.c1*float64(c.lens[i])
	ub := once * (s.p.k1p1 / (1 + norm))
	if many > 0 {
		f := float64(c.tfmax[i])
		if c.tfmax[i] == 255 {
			f = 65535
		}
		ub += many * (f * s.p.k1p1 / (f + norm))
	}
	return ub
}
