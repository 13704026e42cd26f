package arena

import (
	"math"
	"sync/atomic"
	"unsafe"
)

// The signature of an item is a 512-bit blocked Bloom filter of its terms:
// each term sets sigBits bits inside ONE of the sigWords 64-bit words, so
// testing a query term against an item is one load, one AND, one compare.
// With ~20 distinct terms per chat turn, 2-3 terms share a word and a term
// absent from the item passes with probability ~0.1% (256 bits gave ~1%,
// which with several rare query terms doubled the rescoring work). Longer
// items saturate their signature and pass more often; the bound stays valid.
// Words are stored as columns, so a query reads only the words its terms
// hash to.
const (
	sigWords = 8
	sigBits  = 3
)

// probe is where a term sits in a signature. A term occurring more than once
// in the item also sets the extra bit, so a term whose extra bit is clear
// occurs exactly once, which tightens its bound (most chat-turn terms occur
// once, while a repeated common word would otherwise loosen the bound of every
// term of the item).
type probe struct {
	word  uint8
	mask  uint64
	extra uint64
}

func termProbe(t TermID) probe {
	h := uint64(t) * 0x9E3779B97F4A7C15
	h ^= h >> 29
	h *= 0xBF58476D1CE4E5B9
	h ^= h >> 32
	var m uint64
	for k := range sigBits {
		m |= 1 << ((h >> (8 + 6*k)) & 63)
	}
	return probe{word: uint8(h & (sigWords - 1)), mask: m, extra: 1 << ((h >> (8 + 6*sigBits)) & 63)}
}

func signature(terms []TermID, freqs []uint16) [sigWords]uint64 {
	var sig [sigWords]uint64
	for i, t := range terms {
		p := termProbe(t)
		sig[p.word] |= p.mask
		if freqs[i] > 1 {
			sig[p.word] |= p.extra
		}
	}
	return sig
}

// chunk is a struct-of-arrays block of up to Options.ChunkItems items of one
// user, in arrival order. Chunks are the shards the workers take; once full a
// chunk is trimmed to its exact size so its slack is gone for good. Items
// are never modified in place.
type chunk struct {
	slot  int   // position in Arena.chunks; part of every Hit.Index
	user  int64 // owner of every item in the chunk
	ids   []int64
	seqs  []int64
	convs []int64
	born  []int64
	taus  []float32
	toks  []uint32
	lens  []uint32
	tfmax []uint8            // max term frequency of the item, 255 meaning >= 255
	offs  []uint32           // item i's terms are enc[offs[i]:offs[i+1]]
	enc   []byte             // terms and frequencies, see codec.go
	sig   [sigWords][]uint64 // sig[w][i] is word w of item i's signature
	// dims components per item in dense (item i at dense[i*dims:]), zeros
	// for an item without a vector (dinv 0); empty when the arena holds no
	// vectors (dims 0).
	dims  int
	dense []int8
	dinv  []float32
	// The dense first pass (binary.go): codeWords words of sign bits per
	// item and the estimator's scale (0: no vector).
	code []uint64
	dw   []float32
	// base is the position of the chunk's first item among its user's
	// items, which the dense statistic's sample is taken by (hybrid.go).
	base int
	// idMin, idMax bound the chunk's ids, so a search's excluded ids are
	// tested per item only in the chunks that can hold them.
	idMin, idMax int64
	post         *postings // sealed chunks of an arena with vectors
	df           *chunkDF  // sealed chunks of an arena without vectors (visible.go)
	// open holds the open chunk's document frequencies as far as a search
	// last counted them (visible.go); dropped when the chunk seals.
	open   atomic.Pointer[chunkDF]
	lenSum uint64 // sum of lens: the visible corpus's total length
}

func newChunk(slot int, user int64, dims, base int) *chunk {
	return &chunk{slot: slot, user: user, offs: []uint32{0}, dims: dims, base: base}
}

func (c *chunk) n() int { return len(c.ids) }

// add appends one item whose terms are canonical. probes is scratch.
func (c *chunk) add(it *Item, terms []TermID, freqs []uint16, length uint32, rot *rotation) {
	if len(c.ids) == 0 || it.ID < c.idMin {
		c.idMin = it.ID
	}
	if len(c.ids) == 0 || it.ID > c.idMax {
		c.idMax = it.ID
	}
	c.ids = append(c.ids, it.ID)
	c.seqs = append(c.seqs, it.Seq)
	c.convs = append(c.convs, it.Conv)
	c.born = append(c.born, it.BornClock)
	c.taus = append(c.taus, it.Tau)
	c.toks = append(c.toks, it.Tokens)
	c.lens = append(c.lens, length)
	c.lenSum += uint64(length)
	sig := signature(terms, freqs)
	tf := uint16(0)
	for _, f := range freqs {
		tf = max(tf, f)
	}
	c.tfmax = append(c.tfmax, uint8(min(tf, math.MaxUint8)))
	for w, x := range sig {
		c.sig[w] = append(c.sig[w], x)
	}
	c.enc = appendTerms(c.enc, terms, freqs)
	c.offs = append(c.offs, uint32(len(c.enc)))
	if c.dims > 0 {
		if len(it.Dense) == c.dims && it.DenseInv > 0 {
			c.dense = append(c.dense, it.Dense...)
			c.dinv = append(c.dinv, it.DenseInv)
		} else {
			c.dense = append(c.dense, make([]int8, c.dims)...)
			c.dinv = append(c.dinv, 0)
		}
		var w float32
		c.code, w = appendCode(c.code, rot, c.dense[len(c.dense)-c.dims:], c.dinv[len(c.dinv)-1])
		c.dw = append(c.dw, w)
	}
}

// seal drops the append slack of a full chunk.
func (c *chunk) seal() {
	c.ids = trim(c.ids)
	c.seqs = trim(c.seqs)
	c.convs = trim(c.convs)
	c.born = trim(c.born)
	c.taus = trim(c.taus)
	c.toks = trim(c.toks)
	c.lens = trim(c.lens)
	c.tfmax = trim(c.tfmax)
	c.offs = trim(c.offs)
	c.enc = trim(c.enc)
	c.dense = trim(c.dense)
	c.dinv = trim(c.dinv)
	c.code = trim(c.code)
	c.dw = trim(c.dw)
	for w := range c.sig {
		c.sig[w] = trim(c.sig[w])
	}
	if c.dims > 0 {
		c.post = buildPostings(c)
	} else {
		c.df = c.open.Load().extend(c)
	}
	c.open.Store(nil)
}

func trim[T any](s []T) []T {
	if cap(s) == len(s) {
		return s
	}
	out := make([]T, len(s))
	copy(out, s)
	return out
}

func (c *chunk) terms(i int) []byte { return c.enc[c.offs[i]:c.offs[i+1]] }

// meta reads back item i without its terms.
func (c *chunk) meta(i int) Item {
	it := Item{
		ID: c.ids[i], Seq: c.seqs[i], User: c.user, Conv: c.convs[i],
		Length: c.lens[i], BornClock: c.born[i], Tau: c.taus[i], Tokens: c.toks[i],
	}
	if c.dims > 0 && c.dinv[i] > 0 {
		it.Dense = c.dense[i*c.dims : (i+1)*c.dims : (i+1)*c.dims]
		it.DenseInv = c.dinv[i]
	}
	return it
}

// item reads back item i, decoding its terms into the given buffers (which
// may be nil).
func (c *chunk) item(i int, terms []TermID, freqs []uint16) Item {
	it := c.meta(i)
	it.Terms, it.Freqs = decodeTerms(c.terms(i), terms[:0], freqs[:0])
	return it
}

// bytes is the chunk's resident size, counting capacity, not length.
func (c *chunk) bytes() int {
	return int(unsafe.Sizeof(*c)) +
		8*(cap(c.ids)+cap(c.seqs)+cap(c.convs)+cap(c.born)+sigWords*cap(c.sig[0])) +
		4*(cap(c.taus)+cap(c.toks)+cap(c.lens)+cap(c.offs)) + cap(c.enc) + cap(c.tfmax) +
		cap(c.dense) + 4*cap(c.dinv) + 8*cap(c.code) + 4*cap(c.dw) + c.post.bytes() + c.df.bytes() + c.open.Load().bytes()
}

// Hit.Index packs the chunk slot and the position in the chunk.
const posBits = 16

func handle(slot, pos int) int { return slot<<posBits | pos }

func unhandle(h int) (slot, pos int) { return h >> posBits, h & (1<<posBits - 1) }
