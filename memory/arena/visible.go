package arena

import (
	"slices"
	"unsafe"
)

// BM25's statistic is the corpus the question is asked of: the visible
// users' items, not the whole tenant. Tenant-wide, a tenant of many users
// skews every user's idf by the others' words: a speaker's name that is
// common in its owner's memory (in half of their turns) is rare across 500
// users, so its idf rises by ~5 and a question naming the speaker lifts half
// of the owner's turns alike, which drowns the words that tell them apart
// (eval --pool measured all-evidence 0.05 lower on a 500-user tenant for
// this reason). Over the visible items, a user's ranking is close to what it
// would be in a tenant of their own, whoever else the tenant holds.
//
// The visible statistic is smoothed by the tenant's: a term's df counts the
// tenant's share of it as priorItems (500) items more (smoothedIDF), so a
// user of a few dozen turns does not rank by idf taken over a few dozen
// items, and a user of thousands ranks by their own. Measured on the
// development set (eval locomo --pool 100, v3): the tenant-wide statistic
// gave all-evidence 0.863 alone and 0.848 pooled; the visible one unsmoothed
// 0.858 in both; smoothed 0.861 alone and 0.863 pooled.
//
// Which query terms are kept (the term cap) is still chosen by the tenant's
// statistic: it is the cheap one, and the cap must be decided before the
// visible counts are taken (a pasted page's thousands of words would cost a
// count each).

// corpus is a statistic a query is scored against: n items, their total
// length, and each term's document frequency.
type corpus struct {
	n        int
	totalLen uint64
	df       func(TermID) int
}

// chunkDF is a sealed chunk's document frequencies without postings (an
// arena without vectors): ~6 bytes per distinct term of the chunk, a few per
// item, so a query reads a chunk's df by binary search instead of counting.
type chunkDF struct {
	terms  []TermID // ascending, distinct
	counts []uint16 // items of the chunk holding the term (at most ChunkItems)
}

func (d *chunkDF) bytes() int {
	if d == nil {
		return 0
	}
	return int(unsafe.Sizeof(*d)) + 4*cap(d.terms) + 2*cap(d.counts)
}

func buildChunkDF(c *chunk) *chunkDF {
	count := map[TermID]uint16{}
	var terms []TermID
	var freqs []uint16
	for i := range c.n() {
		terms, freqs = decodeTerms(c.terms(i), terms[:0], freqs[:0])
		for _, t := range terms {
			count[t]++
		}
	}
	d := &chunkDF{terms: make([]TermID, 0, len(count)), counts: make([]uint16, len(count))}
	for t := range count {
		d.terms = append(d.terms, t)
	}
	slices.Sort(d.terms)
	for i, t := range d.terms {
		d.counts[i] = count[t]
	}
	return d
}

// countTerms adds to out[j] the number of the chunk's items holding terms[j]
// (terms ascending, probes aligned with them).
func (c *chunk) countTerms(terms []TermID, probes []probe, out []int) {
	switch {
	case c.post != nil:
		for j, t := range terms {
			if k, ok := slices.BinarySearch(c.post.terms, t); ok {
				out[j] += int(c.post.offs[k+1] - c.post.offs[k])
			}
		}
	case c.df != nil:
		for j, t := range terms {
			if k, ok := slices.BinarySearch(c.df.terms, t); ok {
				out[j] += int(c.df.counts[k])
			}
		}
	default:
		// The open chunk: the signature rules most items out, the rest are
		// decoded once for all the terms their signature may hold.
		var dec []TermID
		var freqs []uint16
		for i := range c.n() {
			if ok, _ := matchesAny(c, i, probes); !ok {
				continue
			}
			dec, freqs = decodeTerms(c.terms(i), dec[:0], freqs[:0])
			for j, t := range terms {
				if _, ok := slices.BinarySearch(dec, t); ok {
					out[j]++
				}
			}
		}
	}
}

// visibleCorpus is the statistic of the items in work, for the given terms
// (ascending, probes aligned).
func visibleCorpus(work []*chunk, terms []TermID, probes []probe) corpus {
	var v corpus
	counts := make([]int, len(terms))
	for _, c := range work {
		v.n += c.n()
		v.totalLen += c.lenSum
		c.countTerms(terms, probes, counts)
	}
	v.df = func(t TermID) int {
		if k, ok := slices.BinarySearch(terms, t); ok {
			return counts[k]
		}
		return 0
	}
	return v
}
