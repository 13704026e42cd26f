package text

import "math"

// BPE merging as tiktoken does it: repeatedly merge the adjacent pair whose
// concatenation has the lowest rank (leftmost on ties) until no pair is in
// the vocabulary. Only the number of resulting tokens is needed.

// shortPiece is the length up to which the quadratic scan on a stack array
// beats a heap; pre-tokenized pieces are almost always far shorter.
const shortPiece = 64

const noRank = math.MaxInt

func (c *Counter) rank(piece string) int {
	if r, ok := c.ranks.lookup(piece); ok {
		return r
	}
	return noRank
}

// mergeShort is tiktoken's quadratic merge on fixed-size arrays: no
// allocation. bounds[i] is the start of part i, ranks[i] the rank of merging
// parts i and i+1.
func (c *Counter) mergeShort(piece string) int {
	var bounds [shortPiece + 1]int
	var ranks [shortPiece + 1]int
	n := len(piece) + 1
	for i := 0; i < n; i++ {
		bounds[i] = i
		ranks[i] = noRank
	}
	for i := 0; i+2 < n; i++ {
		ranks[i] = c.rank(piece[i : i+2])
	}
	for n > 1 {
		minRank, at := noRank, -1
		for i := 0; i < n-1; i++ {
			if ranks[i] < minRank {
				minRank, at = ranks[i], i
			}
		}
		if at < 0 {
			break
		}
		// Part at+1 disappears; the pairs touching the merged part change.
		copy(bounds[at+1:n-1], bounds[at+2:n])
		copy(ranks[at+1:n-1], ranks[at+2:n])
		n--
		ranks[at] = c.pairRank(piece, bounds[:n], at)
		if at > 0 {
			ranks[at-1] = c.pairRank(piece, bounds[:n], at-1)
		}
	}
	return n - 1
}

// pairRank is the rank of merging part i with part i+1, where bounds holds
// the part starts followed by the end of the piece.
func (c *Counter) pairRank(piece string, bounds []int, i int) int {
	if i+2 >= len(bounds) {
		return noRank
	}
	return c.rank(piece[bounds[i]:bounds[i+2]])
}

// mergeLong does the same merges in O(n log n) with a linked list and a heap
// of candidate pairs ordered by (rank, start), so a hostile megabyte-long
// "word" costs milliseconds, not hours. Stale heap entries are skipped by
// comparing their rank with the pair's current rank.
func (c *Counter) mergeLong(piece string) int {
	n := len(piece)
	next := make([]int32, n) // start of the following part, n at the end
	prev := make([]int32, n)
	alive := make([]bool, n)
	cur := make([]int, n) // current rank of the pair starting at i
	for i := 0; i < n; i++ {
		next[i] = int32(i + 1)
		prev[i] = int32(i - 1)
		alive[i] = true
	}
	pairEnd := func(i int) int { // end of the pair starting at part i, or -1
		j := int(next[i])
		if j >= n {
			return -1
		}
		return int(next[j])
	}
	h := make(pairHeap, 0, n)
	for i := 0; i+1 < n; i++ {
		cur[i] = c.rank(piece[i : i+2])
		if cur[i] != noRank {
			h = append(h, pair{rank: cur[i], start: i})
		}
	}
	h.init()
	parts := n
	for len(h) > 0 {
		top := h.pop()
		i := top.start
		if !alive[i] || cur[i] != top.rank {
			continue
		}
		// Merge part i with its successor j.
		j := int(next[i])
		alive[j] = false
		next[i] = next[j]
		if int(next[j]) < n {
			prev[next[j]] = int32(i)
		}
		parts--
		for _, k := range [2]int{i, int(prev[i])} {
			if k < 0 {
				continue
			}
			if e := pairEnd(k); e >= 0 {
				cur[k] = c.rank(piece[k:e])
			} else {
				cur[k] = noRank
			}
			if cur[k] != noRank {
				h.push(pair{rank: cur[k], start: k})
			}
		}
	}
	return parts
}

type pair struct{ rank, start int }

// pairHeap is a binary min-heap on (rank, start), typed to avoid the boxing
// of container/heap on the hot path of long pieces.
type pairHeap []pair

func (h pairHeap) less(a, b int) bool {
	if h[a].rank != h[b].rank {
		return h[a].rank < h[b].rank
	}
	return h[a].start < h[b].start
}

func (h pairHeap) init() {
	for i := len(h)/2 - 1; i >= 0; i-- {
		h.down(i)
	}
}

func (h *pairHeap) push(x pair) {
	*h = append(*h, x)
	q := *h
	for i := len(q) - 1; i > 0; {
		parent := (i - 1) / 2
		if !q.less(i, parent) {
			break
		}
		q[i], q[parent] = q[parent], q[i]
		i = parent
	}
}

func (h *pairHeap) pop() pair {
	q := *h
	top := q[0]
	last := len(q) - 1
	q[0] = q[last]
	*h = q[:last]
	h.down(0)
	return top
}

func (h pairHeap) down(i int) {
	for {
		l := 2*i + 1
		if l >= len(h) {
			return
		}
		m := l
		if r := l + 1; r < len(h) && h.less(r, l) {
			m = r
		}
		if !h.less(m, i) {
			return
		}
		h[i], h[m] = h[m], h[i]
		i = m
	}
}
