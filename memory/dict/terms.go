package dict

import (
	"math"
	"slices"
	"strings"
)

// HashedBit marks a hashed term id: ids of known terms are below it, ids of
// unknown words have it set.
const HashedBit uint32 = 1 << 31

// HashedID is the term id of a word the dictionary does not know:
// HashedBit | fnv32a(word) & 0x7fffffff. It depends on the word alone, so it
// is the same at capture and at query time, in every process and every
// dictionary version.
//
// Collisions: two distinct unknown words share an id with probability 2^-31
// per pair. A tenant with U distinct unknown words expects about
// U²/2^32 colliding pairs: 0.02 for 10k names and numbers, 2 for 100k. A
// collision never loses an item (both words still match their own items);
// it only lets a query for one rare word also match items holding the
// other, whose shared document frequency keeps both scored as rare. Known
// terms and unknown words never collide: known ids are below HashedBit.
func HashedID(word string) uint32 {
	h := uint32(2166136261) // FNV-1a, 32 bit, inline: no allocation
	for i := 0; i < len(word); i++ {
		h ^= uint32(word[i])
		h *= 16777619
	}
	return HashedBit | h&^HashedBit
}

// Lookup returns the term id of one normalized token, and false for a
// stopword. A possessive "'s" that is not listed itself is stripped first
// ("caroline's" is "caroline", "children's" is "child"), so names keep one
// id whatever their case; an unknown word gets its HashedID.
func (d *Dictionary) Lookup(token string) (uint32, bool) {
	if id, ok := d.ids[token]; ok {
		return id, id != NoTerm
	}
	if stem, ok := strings.CutSuffix(token, "'s"); ok && stem != "" {
		if id, ok := d.ids[stem]; ok {
			return id, id != NoTerm
		}
		token = stem
	}
	return HashedID(token), true
}

// Terms derives a retrieval row from stored tokens: the distinct term ids in
// ascending order, how often each occurs (saturating at 65535), and the
// row's length, the number of tokens that are not stopwords.
func (d *Dictionary) Terms(tokens []string) (ids []uint32, freqs []uint16, length int) {
	all := make([]uint32, 0, len(tokens))
	for _, t := range tokens {
		if id, ok := d.Lookup(t); ok {
			all = append(all, id)
		}
	}
	length = len(all)
	slices.Sort(all)
	for i, id := range all {
		if i > 0 && all[i-1] == id {
			if f := &freqs[len(freqs)-1]; *f < math.MaxUint16 {
				*f++
			}
			continue
		}
		ids = append(ids, id)
		freqs = append(freqs, 1)
	}
	return ids, freqs, length
}

// QueryTerms returns the distinct term ids of a query's tokens in ascending
// order; stopwords are dropped.
func (d *Dictionary) QueryTerms(tokens []string) []uint32 {
	ids, _, _ := d.Terms(tokens)
	return ids
}
