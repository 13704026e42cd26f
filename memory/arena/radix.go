package arena

import "slices"

// sortTerms sorts terms ascending. A sealing chunk without vectors sorts
// every term of its items (about 100,000 for 4,096 chat turns) to count
// them, and a cold load seals a chunk every 4,096 items: three passes of an
// 11-bit radix sort do that in a fraction of a comparison sort's time.
func sortTerms(terms []TermID) {
	if len(terms) < 1024 {
		slices.Sort(terms)
		return
	}
	const bits, buckets = 11, 1 << 11
	buf := make([]TermID, len(terms))
	src, dst := terms, buf
	for shift := 0; shift < 32; shift += bits {
		var count [buckets + 1]int
		for _, t := range src {
			count[(t>>shift)&(buckets-1)+1]++
		}
		if count[1+(src[0]>>shift)&(buckets-1)] == len(src) {
			continue // one digit throughout: the pass would change nothing
		}
		for d := 1; d <= buckets; d++ {
			count[d] += count[d-1]
		}
		for _, t := range src {
			d := (t >> shift) & (buckets - 1)
			dst[count[d]] = t
			count[d]++
		}
		src, dst = dst, src
	}
	if &src[0] != &terms[0] {
		copy(terms, src)
	}
}
