package arena

import (
	"math"
	"slices"
)

// TermID is a term of the active dictionary (or a hashed unknown word).
type TermID = uint32

// Item is what the arena keeps per stored item. Text stays in the store; the
// arena only needs what scoring and the frame read on the hot path.
type Item struct {
	ID        int64    // global item id; ranking ties go to the smaller ID
	Seq       int64    // tenant log position it was committed at
	User      int64    // owner memory user id
	Conv      int64    // conversation id
	Terms     []TermID // distinct term ids of the item's retrieval row
	Freqs     []uint16 // frequency of each term (nil: all 1)
	Length    uint32   // length in terms, for BM25 length normalisation (0: sum of Freqs)
	BornClock int64    // clock position at birth
	Tau       float32  // decay constant fixed at birth
	Tokens    uint32   // model tokens of the body: the frame prices hits without reading them
	// Dense is the item's unit dense vector as int8 (Options.Dims of them;
	// nil: none), DenseInv the inverse length of that int8 vector, so that
	// dot·DenseInv is a cosine with a unit query (issue 16).
	Dense    []int8
	DenseInv float32
}

// canonical returns terms sorted ascending without duplicates, frequencies
// aligned with them, and the length. Every path (arena, reference scorer,
// digest) goes through it, so an item is scored the same whatever its input
// order. Duplicated terms add their frequencies; a listed term with frequency
// 0 counts once, because it is present in the row. Already canonical input
// (the normal case) is copied without sorting.
func canonical(it Item) ([]TermID, []uint16, uint32) {
	n := len(it.Terms)
	terms := make([]TermID, n)
	freqs := make([]uint16, n)
	copy(terms, it.Terms)
	sorted := true
	for i := range n {
		f := uint16(1)
		if i < len(it.Freqs) && it.Freqs[i] > 0 {
			f = it.Freqs[i]
		}
		freqs[i] = f
		if i > 0 && terms[i] <= terms[i-1] {
			sorted = false
		}
	}
	if !sorted {
		idx := make([]int, n)
		for i := range idx {
			idx[i] = i
		}
		slices.SortStableFunc(idx, func(x, y int) int {
			switch {
			case terms[x] < terms[y]:
				return -1
			case terms[x] > terms[y]:
				return 1
			}
			return 0
		})
		st := make([]TermID, 0, n)
		sf := make([]uint16, 0, n)
		for _, i := range idx {
			if k := len(st); k > 0 && st[k-1] == terms[i] {
				sf[k-1] = satAdd16(sf[k-1], freqs[i])
				continue
			}
			st = append(st, terms[i])
			sf = append(sf, freqs[i])
		}
		terms, freqs = st, sf
	}
	length := it.Length
	if length == 0 {
		var sum uint64
		for _, f := range freqs {
			sum += uint64(f)
		}
		length = uint32(min(sum, math.MaxUint32))
	}
	return terms, freqs, length
}

func satAdd16(a, b uint16) uint16 {
	if s := uint32(a) + uint32(b); s <= math.MaxUint16 {
		return uint16(s)
	}
	return math.MaxUint16
}

// ItemDigest is an order-independent fingerprint of one item as the arena
// holds it (canonical terms). The integrity check sums it over the store's
// rows and compares with Arena.Digest; a sum (not a hash of a sequence) lets
// both sides visit items in any order.
func ItemDigest(it Item) uint64 {
	terms, freqs, length := canonical(it)
	h := uint64(0x84222325cbf29ce4)
	mix := func(v uint64) {
		h ^= v
		h *= 0x100000001b3
		h ^= h >> 31
		h *= 0x9E3779B97F4A7C15
	}
	mix(uint64(it.ID))
	mix(uint64(it.Seq))
	mix(uint64(it.User))
	mix(uint64(it.Conv))
	mix(uint64(length))
	mix(uint64(it.BornClock))
	mix(uint64(math.Float32bits(it.Tau)))
	mix(uint64(len(terms)))
	for i, t := range terms {
		mix(uint64(t)<<16 | uint64(freqs[i]))
	}
	if len(it.Dense) > 0 { // an item without a vector digests as before
		mix(uint64(len(it.Dense)))
		for _, q := range it.Dense {
			mix(uint64(uint8(q)))
		}
		mix(uint64(math.Float32bits(it.DenseInv)))
	}
	return h
}
