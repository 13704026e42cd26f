package arena

// topK keeps the k best hits under the ranking order, worst at the root.
type topK struct {
	k       int
	hits    []Hit
	ordered bool // hits already sorted best first (not a heap)
}

func newTopK(k int) *topK { return &topK{k: k, hits: make([]Hit, 0, min(k, 1024))} }

func (t *topK) full() bool { return len(t.hits) >= t.k }

func (t *topK) worst() Hit { return t.hits[0] }

func (t *topK) offer(h Hit) {
	if len(t.hits) < t.k {
		t.hits = append(t.hits, h)
		t.up(len(t.hits) - 1)
		return
	}
	if !better(h, t.hits[0]) {
		return
	}
	t.hits[0] = h
	t.down(0)
}

// worse-first heap: parent is worse than (not better than) its children.
func (t *topK) up(i int) {
	for i > 0 {
		p := (i - 1) / 2
		if !better(t.hits[p], t.hits[i]) {
			return
		}
		t.hits[p], t.hits[i] = t.hits[i], t.hits[p]
		i = p
	}
}

func (t *topK) down(i int) {
	n := len(t.hits)
	for {
		l := 2*i + 1
		if l >= n {
			return
		}
		w := l
		if r := l + 1; r < n && better(t.hits[l], t.hits[r]) {
			w = r
		}
		if !better(t.hits[i], t.hits[w]) {
			return
		}
		t.hits[i], t.hits[w] = t.hits[w], t.hits[i]
		i = w
	}
}

func (t *topK) sorted() []Hit {
	if len(t.hits) == 0 {
		return nil
	}
	out := append([]Hit(nil), t.hits...)
	if !t.ordered {
		sortHits(out)
	}
	return out
}

// Candidates form a max-heap by bound for the rescore, which usually reads
// only a few of them: heapify is linear, each pop logarithmic.
func heapifyCands(c []cand) {
	for i := len(c)/2 - 1; i >= 0; i-- {
		candDown(c, i)
	}
}

func popCand(c []cand) []cand {
	n := len(c) - 1
	c[0] = c[n]
	c = c[:n]
	candDown(c, 0)
	return c
}

func candDown(c []cand, i int) {
	n := len(c)
	for {
		l := 2*i + 1
		if l >= n {
			return
		}
		w := l
		if r := l + 1; r < n && c[r].ub > c[l].ub {
			w = r
		}
		if c[w].ub <= c[i].ub {
			return
		}
		c[i], c[w] = c[w], c[i]
		i = w
	}
}

// selectTop reorders c so its first k entries have the largest bounds
// (quickselect, median-of-three pivot, three-way partition for the many
// equal bounds signatures produce).
func selectTop(c []cand, k int) {
	lo, hi := 0, len(c) // select within c[lo:hi]
	for hi-lo > 1 {
		a, b, d := c[lo].ub, c[lo+(hi-lo)/2].ub, c[hi-1].ub
		pivot := max(min(a, b), min(max(a, b), d))
		// c[lo:gt] > pivot, c[gt:i] == pivot, c[lt:hi] < pivot
		gt, i, lt := lo, lo, hi
		for i < lt {
			switch v := c[i].ub; {
			case v > pivot:
				c[gt], c[i] = c[i], c[gt]
				gt++
				i++
			case v < pivot:
				lt--
				c[lt], c[i] = c[i], c[lt]
			default:
				i++
			}
		}
		switch {
		case k < gt:
			hi = gt
		case k <= lt:
			return
		default:
			lo = lt
		}
	}
}
