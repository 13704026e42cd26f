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

// merger does mergeShort's merges in O(n log n) with a linked list and a
// heap of candidate pairs ordered by (rank, start). It is exact for any
// length, but the heap's cache misses make it superlinear in practice (a
// megabyte of random letters cost 0.7 s, four megabytes 3.5 s), so Count
// gives it pieces of up to longPiece bytes and counts longer ones in
// windows (countLong), which reuse its arrays instead of allocating per
// window.
type merger struct {
	next, prev []int32 // the part after and before part i (n and -1 at the ends)
	cur        []int   // current rank of the pair starting at part i; noRank if none, or i is merged away
	heap       pairHeap
}

// merge runs the merges on piece and returns the number of parts; the parts
// then start at 0, next[0], next[next[0]] ... up to len(piece).
func (m *merger) merge(c *Counter, piece string) int {
	n := len(piece)
	m.next = resize(m.next, n)
	m.prev = resize(m.prev, n)
	m.cur = resize(m.cur, n)
	next, prev, cur := m.next, m.prev, m.cur
	for i := 0; i < n; i++ {
		next[i] = int32(i + 1)
		prev[i] = int32(i - 1)
	}
	pairEnd := func(i int) int { // end of the pair starting at part i, or -1
		j := int(next[i])
		if j >= n {
			return -1
		}
		return int(next[j])
	}
	h := m.heap[:0]
	for i := 0; i < n; i++ {
		cur[i] = noRank
		if i+1 < n {
			cur[i] = c.rank(piece[i : i+2])
		}
		if cur[i] != noRank {
			h = append(h, pairKey(cur[i], i))
		}
	}
	h.init()
	parts := n
	for len(h) > 0 {
		top := h.pop()
		i := int(uint32(top))
		if cur[i] != int(top>>32) {
			continue // stale: the pair changed, or part i was merged away
		}
		// Merge part i with its successor j.
		j := int(next[i])
		cur[j] = noRank
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
				h.push(pairKey(cur[k], k))
			}
		}
	}
	m.heap = h
	return parts
}

func resize[T any](s []T, n int) []T {
	if cap(s) < n {
		return make([]T, n)
	}
	return s[:n]
}

// Pieces longer than longPiece bytes are counted in windows, because exact
// BPE on them costs more per byte the longer they are (see merger), and
// a request may hold tens of megabytes without a space. No natural text
// reaches the bound: o200k's longest token is 128 bytes, a word of any
// language is far shorter, and the only pieces this long are runs of one
// script without spaces or punctuation (hashes in lower case, a CJK or Thai
// paragraph with no punctuation at all, a repeated character). Every piece
// of up to longPiece bytes, which is every piece the exactness tests hold to
// tiktoken, keeps its exact count.
//
// Each window is merged exactly; the tokens that end within its first
// windowKeep bytes are taken, and the next window starts where they end.
// A cut at a token boundary of the window, with windowGuard bytes of text
// after it, is where the whole piece's merges put a boundary too unless a
// chain of merges that each change the next reaches across the guard; BPE
// chains are a few tokens long, and without the slack every one of some
// 3,000 seams over random letters, hex, hanzi, Thai, emoji and repeated
// characters counted exactly. BPE gives no proof of it, so seamSlack tokens
// per cut put a seam that does go wrong on the safe side (over): the count
// enforces caps. That costs a token per 1.5 KiB (0.1% on random letters,
// 8% on a run of spaces, which is few tokens), and the work per byte is
// that of one window, whatever the length of the piece.
const (
	longPiece   = 2048
	windowGuard = 512 // four of the longest tokens
	windowKeep  = longPiece - windowGuard
	seamSlack   = 1
)

// countLong counts a piece longer than shortPiece: exactly up to longPiece
// bytes, in windows beyond.
func (c *Counter) countLong(piece string) int {
	var m merger
	n := 0
	for len(piece) > longPiece {
		parts := m.merge(c, piece[:longPiece])
		cut, before := m.cutBefore(windowKeep, longPiece)
		if cut == 0 {
			// No token ends early enough (impossible with tokens of at
			// most 128 bytes, but the vocabulary is data): take it whole.
			cut, before = longPiece, parts
		}
		n += before + seamSlack
		piece = piece[cut:]
	}
	return n + m.merge(c, piece)
}

// cutBefore returns the last part start in (0, keep] of a merged window of
// n bytes, and the number of parts before it; (0, 0) if there is none.
func (m *merger) cutBefore(keep, n int) (cut, before int) {
	for i, k := int(m.next[0]), 1; i < n && i <= keep; i, k = int(m.next[i]), k+1 {
		cut, before = i, k
	}
	return cut, before
}

// pairKey orders heap entries by rank, then start (leftmost on ties), in
// one integer compare: ranks and starts both fit in 32 bits.
func pairKey(rank, start int) uint64 { return uint64(rank)<<32 | uint64(uint32(start)) }

// pairHeap is a binary min-heap of pairKeys, typed to avoid the boxing of
// container/heap on the hot path of long pieces.
type pairHeap []uint64

func (h pairHeap) less(a, b int) bool { return h[a] < h[b] }

func (h pairHeap) init() {
	for i := len(h)/2 - 1; i >= 0; i-- {
		h.down(i)
	}
}

func (h *pairHeap) push(x uint64) {
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

func (h *pairHeap) pop() uint64 {
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
