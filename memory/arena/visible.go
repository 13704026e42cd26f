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

// chunkDF is a chunk's document frequencies when it has no postings: a
// sealed chunk of an arena without vectors, or the open chunk of any arena.
// ~6 bytes per distinct term of the chunk, a few per item, so a query reads
// a chunk's df by binary search instead of decoding its items.
type chunkDF struct {
	items  int      // the chunk's first items counted
	terms  []TermID // ascending, distinct
	counts []uint16 // items holding the term, minus one (a chunk holds up to 65536)
}

func (d *chunkDF) bytes() int {
	if d == nil {
		return 0
	}
	return int(unsafe.Sizeof(*d)) + 4*cap(d.terms) + 2*cap(d.counts)
}

// add adds to out[j] the number of counted items holding terms[j].
func (d *chunkDF) add(terms []TermID, out []int) {
	for j, t := range terms {
		if k, ok := slices.BinarySearch(d.terms, t); ok {
			out[j] += int(d.counts[k]) + 1
		}
	}
}

// extend returns d with items [d.items, c.n()) of c counted too (d nil:
// none counted yet). A query extends the open chunk's counts by the items
// captured since the last query, a few, so the open chunk costs a merge of
// its distinct terms, not a decode of every item; a sealing chunk counts
// all of its items at once.
func (d *chunkDF) extend(c *chunk) *chunkDF {
	from := 0
	var oldT []TermID
	var oldC []uint16
	if d != nil {
		from, oldT, oldC = d.items, d.terms, d.counts
	}
	var fresh, terms []TermID
	var freqs []uint16
	for i := from; i < c.n(); i++ {
		terms, freqs = decodeTerms(c.terms(i), terms[:0], freqs[:0])
		fresh = append(fresh, terms...)
	}
	sortTerms(fresh)
	out := &chunkDF{items: c.n(), terms: make([]TermID, 0, len(oldT)+len(fresh)), counts: make([]uint16, 0, len(oldT)+len(fresh))}
	i := 0
	for k := 0; k < len(fresh); {
		t, n := fresh[k], 0
		for ; k < len(fresh) && fresh[k] == t; k++ {
			n++
		}
		for ; i < len(oldT) && oldT[i] < t; i++ {
			out.terms, out.counts = append(out.terms, oldT[i]), append(out.counts, oldC[i])
		}
		if i < len(oldT) && oldT[i] == t {
			n += int(oldC[i]) + 1
			i++
		}
		out.terms, out.counts = append(out.terms, t), append(out.counts, uint16(n-1))
	}
	out.terms, out.counts = append(out.terms, oldT[i:]...), append(out.counts, oldC[i:]...)
	out.terms, out.counts = trim(out.terms), trim(out.counts)
	return out
}

// countTerms adds to out[j] the number of the chunk's items holding terms[j]
// (terms ascending).
func (c *chunk) countTerms(terms []TermID, out []int) {
	switch {
	case c.post != nil:
		for j, t := range terms {
			if k, ok := slices.BinarySearch(c.post.terms, t); ok {
				out[j] += int(c.post.offs[k+1] - c.post.offs[k])
			}
		}
	case c.df != nil:
		c.df.add(terms, out)
	default:
		// The open chunk. Searches run concurrently under the arena's read
		// lock and the chunk does not grow meanwhile, so searches racing to
		// extend the counts compute and store the same value.
		d := c.open.Load()
		if d == nil || d.items < c.n() {
			d = d.extend(c)
			c.open.Store(d)
		}
		d.add(terms, out)
	}
}

// visibleCorpus is the statistic of the items in work, for the given terms
// (ascending).
func visibleCorpus(work []*chunk, terms []TermID) corpus {
	var v corpus
	counts := make([]int, len(terms))
	for _, c := range work {
		v.n += c.n()
		v.totalLen += c.lenSum
		c.countTerms(terms, counts)
	}
	v.df = func(t TermID) int {
		if k, ok := slices.BinarySearch(terms, t); ok {
			return counts[k]
		}
		return 0
	}
	return v
}
