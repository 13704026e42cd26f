package text

import (
	"fmt"
	"math"
	"math/bits"
)

// Looking every piece up in a map[string]int of 200k entries was about half
// of Count: Go's generic map hashes with aeshash, probes control groups and
// compares through memeqbody. Nearly every piece and every vocabulary entry
// is at most 16 bytes, so rankTable packs such keys into two words and
// keeps them inline in an open-addressing table: one multiply to hash, one
// (usually cached) line to read, two word compares to match. Longer keys,
// 2% of the vocabulary and rarer still in text, stay in a map.

// maxPacked is the longest key packKey takes.
const maxPacked = 16

// pieceKey is a key of at most maxPacked bytes, little-endian and
// zero-padded, with its length: pieces may contain NUL bytes, so the
// padding alone would not tell "a" from "a\x00".
type pieceKey struct {
	lo, hi uint64
	n      uint64
}

// packKey packs s, which must be at most maxPacked bytes long. It reads s
// with overlapping loads that stay inside it, so it costs a few loads
// whatever the length.
func packKey(s string) pieceKey {
	n := len(s)
	var lo, hi uint64
	switch {
	case n > 8:
		lo = le64(s)
		// The last 8 bytes, shifted down past those lo already holds.
		hi = le64(s[n-8:]) >> ((16 - n) * 8 & 63)
	case n >= 4:
		// Two 4-byte loads overlap for n < 8; ORing the shared bytes
		// onto themselves is harmless.
		lo = uint64(le32(s)) | uint64(le32(s[n-4:]))<<((n-4)*8&63)
	case n > 0:
		lo = uint64(s[0]) | uint64(s[n/2])<<(n/2*8) | uint64(s[n-1])<<((n-1)*8&63)
	}
	return pieceKey{lo: lo, hi: hi, n: uint64(n)}
}

// le64 and le32 are written so the compiler combines them into one load.
func le64(s string) uint64 {
	_ = s[7]
	return uint64(s[0]) | uint64(s[1])<<8 | uint64(s[2])<<16 | uint64(s[3])<<24 |
		uint64(s[4])<<32 | uint64(s[5])<<40 | uint64(s[6])<<48 | uint64(s[7])<<56
}

func le32(s string) uint32 {
	_ = s[3]
	return uint32(s[0]) | uint32(s[1])<<8 | uint32(s[2])<<16 | uint32(s[3])<<24
}

// hash mixes the key with one 64x64->128 multiply folded (wyhash's mum).
// It needs no seed: the table's contents are fixed at build time, so no
// input can lengthen a probe beyond the longest cluster the vocabulary
// itself makes.
func (k pieceKey) hash() uint64 {
	h, l := bits.Mul64(k.lo^0x243f6a8885a308d3, k.hi^k.n<<59^0x13198a2e03707344)
	return h ^ l
}

// rankTableBits sizes the table to 2^19 slots (12 MB): a load of 0.37 for
// the ~196k packed keys of o200k_base keeps linear probes short, misses
// included (BPE merging looks up many pairs that are not tokens).
const rankTableBits = 19

const rankTableSize = 1 << rankTableBits

type rankSlot struct {
	lo, hi uint64
	n      uint32 // key length; 0 marks an empty slot (no key is empty)
	rank   uint32
}

type rankTable struct {
	slots *[rankTableSize]rankSlot // fixed size: masked indexes need no bounds check
	long  map[string]uint32        // keys longer than maxPacked
}

func newRankTable(ranks map[string]int) (*rankTable, error) {
	t := &rankTable{slots: new([rankTableSize]rankSlot), long: make(map[string]uint32)}
	packed := 0
	for key, rank := range ranks {
		if rank < 0 || int64(rank) > math.MaxUint32 || key == "" {
			return nil, fmt.Errorf("vocabulary entry %q has rank %d", key, rank)
		}
		if len(key) > maxPacked {
			t.long[key] = uint32(rank)
			continue
		}
		// Keep the table at most half full, so probes end quickly.
		if packed++; packed > rankTableSize/2 {
			return nil, fmt.Errorf("vocabulary too large for the rank table (%d entries)", len(ranks))
		}
		k := packKey(key)
		i := k.hash() & (rankTableSize - 1)
		for t.slots[i].n != 0 {
			i = (i + 1) & (rankTableSize - 1)
		}
		t.slots[i] = rankSlot{lo: k.lo, hi: k.hi, n: uint32(k.n), rank: uint32(rank)}
	}
	return t, nil
}

// lookupPacked finds the rank of a packed key whose hash is h.
func (t *rankTable) lookupPacked(k pieceKey, h uint64) (int, bool) {
	for i := h & (rankTableSize - 1); ; i = (i + 1) & (rankTableSize - 1) {
		s := &t.slots[i]
		if s.n == 0 { // first, or an empty key would match an empty slot
			return 0, false
		}
		if s.lo == k.lo && s.hi == k.hi && uint64(s.n) == k.n {
			return int(s.rank), true
		}
	}
}

// lookup finds the rank of a piece of any length.
func (t *rankTable) lookup(piece string) (int, bool) {
	if len(piece) > maxPacked {
		r, ok := t.long[piece]
		return int(r), ok
	}
	k := packKey(piece)
	return t.lookupPacked(k, k.hash())
}
