package arena

import "math"

// A hybrid scan needs the exact BM25 score of every visible item that holds
// a query term, not only of the best ones: the fusion standardises the
// lexical side by its mean and deviation over all visible items. Decoding
// every such item's terms cost ~70 ns each, so a question with one common
// word spent most of its time there. A sealed chunk of an arena with vectors
// therefore also keeps its terms inverted (term -> the positions holding it),
// and the lexical side of a hybrid scan walks the query terms' lists only.
// The sums are the forward scorer's, term by term in ascending term order,
// in the same float64 expression, so both give bit-identical scores (the
// reference scorer and TestHybridEqualsReference hold them to it).
//
// Size: 3 bytes per posting (uint16 position, uint8 frequency) and 8 per
// distinct term of the chunk, ~60-80 bytes per chat turn; built once, when a
// chunk fills, by a stable radix sort (the open chunk is decoded forward).
type postings struct {
	terms []TermID // ascending, distinct
	offs  []uint32 // term i's postings are pos[offs[i]:offs[i+1]]
	pos   []uint16 // ascending within a term
	freq  []uint8  // the frequency, 255 meaning >= 255 (read from the item then)
}

func (p *postings) bytes() int {
	if p == nil {
		return 0
	}
	return 4*cap(p.terms) + 4*cap(p.offs) + 3*cap(p.pos) + 48
}

// buildPostings inverts the chunk's terms.
func buildPostings(c *chunk) *postings {
	var terms []TermID
	var freqs []uint16
	type post struct {
		t   TermID
		pos uint16
		f   uint8
	}
	src := make([]post, 0, len(c.enc)/2) // ~2.2 bytes a term
	for i := range c.n() {
		terms, freqs = decodeTerms(c.terms(i), terms[:0], freqs[:0])
		for k, t := range terms {
			src = append(src, post{t, uint16(i), uint8(min(freqs[k], math.MaxUint8))})
		}
	}
	// LSD radix sort on the term, 8 bits a pass: stable, so positions stay
	// ascending within a term.
	dst := make([]post, len(src))
	for shift := uint(0); shift < 32; shift += 8 {
		var count [257]int
		for _, p := range src {
			count[1+int(p.t>>shift&0xff)]++
		}
		if count[1] == len(src) && shift > 0 {
			continue // every key has this byte 0: the pass would copy
		}
		for i := 1; i < len(count); i++ {
			count[i] += count[i-1]
		}
		for _, p := range src {
			b := p.t >> shift & 0xff
			dst[count[b]] = p
			count[b]++
		}
		src, dst = dst, src
	}
	out := &postings{pos: make([]uint16, len(src)), freq: make([]uint8, len(src))}
	for i, p := range src {
		if i == 0 || p.t != src[i-1].t {
			out.terms = append(out.terms, p.t)
			out.offs = append(out.offs, uint32(i))
		}
		out.pos[i], out.freq[i] = p.pos, p.f
	}
	out.offs = append(out.offs, uint32(len(src)))
	out.terms = trim(out.terms)
	out.offs = trim(out.offs)
	return out
}

// find returns term t's postings range.
func (p *postings) find(t TermID) (lo, hi uint32, ok bool) {
	i, j := 0, len(p.terms)
	for i < j {
		h := int(uint(i+j) >> 1)
		if p.terms[h] < t {
			i = h + 1
		} else {
			j = h
		}
	}
	if i == len(p.terms) || p.terms[i] != t {
		return 0, 0, false
	}
	return p.offs[i], p.offs[i+1], true
}

// lexicalInverted writes into b the exact score of every item of c (0 for an
// item holding no query term), accumulating in acc (len c.n(), zeroed here).
// It returns the number of postings read.
func (s *bm25) lexicalInverted(c *chunk, acc []float64, b []float32) int {
	clear(acc)
	read := 0
	for j, t := range s.terms {
		lo, hi, ok := c.post.find(t)
		if !ok {
			continue
		}
		a := s.a[j]
		for k := lo; k < hi; k++ {
			pos := c.post.pos[k]
			f := float64(c.post.freq[k])
			if c.post.freq[k] == math.MaxUint8 {
				f = float64(c.freqOf(int(pos), t))
			}
			norm := float64(s.c0 + float64(s.c1*float64(c.lens[pos])))
			acc[pos] += float64(a * float64(f*s.k1p1/float64(f+norm)))
		}
		read += int(hi - lo)
	}
	for i, x := range acc {
		b[i] = float32(x)
	}
	return read
}

// freqOf is the frequency of term t in item i (0 if absent).
func (c *chunk) freqOf(i int, t TermID) uint16 {
	terms, freqs := decodeTerms(c.terms(i), nil, nil)
	for k, x := range terms {
		if x == t {
			return freqs[k]
		}
	}
	return 0
}
