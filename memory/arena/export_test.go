package arena

// ProbeOf exposes a term's signature position to the tests that build
// colliding terms on purpose.
func ProbeOf(t TermID) [2]uint64 {
	p := termProbe(t)
	return [2]uint64{uint64(p.word), p.mask}
}

// KeptTerms are the query terms a search over a scores with, after the
// term cap, in ascending order.
func KeptTerms(a *Arena, q Query) []TermID {
	a.mu.RLock()
	defer a.mu.RUnlock()
	work := a.visibleChunks(q)
	p := prepare(q, corpus{a.n, a.totalLen, a.df}, func(terms []TermID) corpus {
		return visibleCorpus(work, terms)
	}, float64(a.opts.K1), float64(a.opts.B), a.opts.MaxTerms)
	return p.terms
}

// SortHits and SelectBest expose the ranking order's helpers.
func SortHits(h []Hit) { sortHits(h) }

func SelectBest(h []Hit, k int) []Hit { return selectBest(h, k) }
