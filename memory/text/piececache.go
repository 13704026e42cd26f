package text

import (
	"hash/maphash"
	"strings"
	"sync/atomic"
)

// A frame counts the same stored turns on every request, and most of that
// time went to BPE-merging the pieces that are not one token whole (names,
// rare words, numbers): 80% of a frame's counting in the 250k-item memory
// path profile. pieceCache remembers each such piece's token count.
//
// It is lock-free: each slot holds a pointer to an immutable entry, so a
// reader sees a whole entry or none, and a hit costs two loads and a key
// compare instead of a hash, a lock and a map probe. Slots go in pairs, the
// newest entry first; an insert pushes the older one out of the pair. Racing
// inserts can lose an entry, which costs only a recount.
const cacheSlots = 1 << 17 // ~128k pieces, a few MB of entries at most

type pieceCache struct {
	seed  maphash.Seed // hashes the pieces too long to pack
	slots [cacheSlots]atomic.Pointer[cachedPiece]
}

type cachedPiece struct {
	key    pieceKey // the packed piece, or for a longer one just its length
	long   string   // a piece longer than maxPacked
	tokens int
}

func newPieceCache() *pieceCache {
	return &pieceCache{seed: maphash.MakeSeed()}
}

// longKey is the key and hash of a piece longer than maxPacked: its
// length, which no packed key has, with the piece compared separately.
func (pc *pieceCache) longKey(piece string) (pieceKey, uint64) {
	return pieceKey{n: uint64(len(piece))}, maphash.String(pc.seed, piece)
}

// get looks up piece, whose key and hash are k and h (from packKey, or
// longKey when the piece is longer than maxPacked).
func (pc *pieceCache) get(piece string, k pieceKey, h uint64) (int, bool) {
	i := h & (cacheSlots - 2)
	for j := i; j < i+2; j++ {
		if e := pc.slots[j].Load(); e != nil && e.key == k && (k.n <= maxPacked || e.long == piece) {
			return e.tokens, true
		}
	}
	return 0, false
}

func (pc *pieceCache) put(piece string, k pieceKey, h uint64, tokens int) {
	e := &cachedPiece{key: k, tokens: tokens}
	if k.n > maxPacked {
		// Copied: the piece is a slice of a text that must not stay alive.
		e.long = strings.Clone(piece)
	}
	i := h & (cacheSlots - 2)
	if old := pc.slots[i].Swap(e); old != nil {
		pc.slots[i+1].Store(old)
	}
}
