package arena

import "slices"

// parallelAddMin is the batch from which Add builds chunks on several
// cores: a cold load adds a whole tenant (a million items at 1M), and each
// item's encoding, binary code and, at a chunk's end, its postings or
// document frequencies cost as much as reading the item from PostgreSQL.
// A capture's catch-up adds a few items and stays on one goroutine.
const parallelAddMin = 2048

// addParallel is add for a large batch, with the same result: items are
// bound to chunks in order on one goroutine (so chunks are created, and
// numbered, as add would), each chunk then takes its items in order on a
// worker (chunks share nothing), and the arena's statistics are counted
// in order at the end.
func (a *Arena) addParallel(items []Item) {
	type work struct {
		c     *chunk
		items []int
	}
	var jobs []*work
	byChunk := map[*chunk]*work{}
	pending := map[*chunk]int{}
	for i := range items {
		c := a.chunkFor(items[i].User, pending)
		pending[c]++
		w := byChunk[c]
		if w == nil {
			w = &work{c: c}
			byChunk[c] = w
			jobs = append(jobs, w)
		}
		w.items = append(w.items, i)
	}
	type canon struct {
		terms  []TermID
		length uint32
	}
	done := make([]canon, len(items))
	parallelIdx(min(a.opts.Workers, len(jobs)), len(jobs), func(_, j int) {
		w := jobs[j]
		w.c.reserve(len(w.items))
		for _, i := range w.items {
			it := &items[i]
			terms, freqs, length := canonical(*it)
			w.c.add(it, terms, freqs, length, a.rot)
			if w.c.n() == a.opts.ChunkItems {
				w.c.seal()
			}
			done[i] = canon{terms, length}
		}
	})
	for i := range items {
		a.counted(&items[i], done[i].terms, done[i].length)
	}
}

// reserve makes room for n more items in the chunk's columns, so a large
// Add appends without growing them step by step and a sealing chunk whose
// columns are exactly full has nothing to trim. The encoded terms, of
// unknown size, still grow as they go.
func (c *chunk) reserve(n int) {
	c.ids = slices.Grow(c.ids, n)
	c.seqs = slices.Grow(c.seqs, n)
	c.convs = slices.Grow(c.convs, n)
	c.born = slices.Grow(c.born, n)
	c.taus = slices.Grow(c.taus, n)
	c.toks = slices.Grow(c.toks, n)
	c.lens = slices.Grow(c.lens, n)
	c.tfmax = slices.Grow(c.tfmax, n)
	c.offs = slices.Grow(c.offs, n)
	for w := range c.sig {
		c.sig[w] = slices.Grow(c.sig[w], n)
	}
	if c.dims > 0 {
		c.dense = slices.Grow(c.dense, n*c.dims)
		c.dinv = slices.Grow(c.dinv, n)
		c.code = slices.Grow(c.code, n*codeWords)
		c.dw = slices.Grow(c.dw, n)
	}
}
