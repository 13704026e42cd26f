package memory

import (
	"encoding/binary"
	"hash/maphash"
	"sync"
)

// countCache keeps the model token counts of the texts this process's
// frames counted, whole or around a stored turn's seams (around). Counting is most of a frame's render, and consecutive
// frames render mostly the same turns (the conversation's recent stretch,
// warm items, the matches of related questions): at 250k items three
// quarters of the bytes a frame counted had been counted by an earlier one.
//
// It is keyed by a 128-bit hash of the text under two random per-process
// seeds, never by the text: it holds no memory content (a purged turn's
// words do not outlive the purge here), and two texts taken for one another
// would need a 128-bit collision, ~2^-100 for the entries it holds. Two
// generations of at most limit entries each: a hit in the older moves the
// entry to the newer, a full newer generation becomes the older.
type countCache struct {
	seeds     [2]maphash.Seed
	aseeds    [2]maphash.Seed // around's keys: never a text's
	limit     int
	mu        sync.Mutex
	cur, prev map[textHash]int32
}

type textHash [2]uint64

// countCacheMin is the shortest text the cache keeps: a label costs less
// to count than to hash and look up.
const countCacheMin = 64

// countCacheEntries is the entries of one generation (~40 bytes each).
const countCacheEntries = 1 << 16

func newCountCache(limit int) *countCache {
	return &countCache{seeds: [2]maphash.Seed{maphash.MakeSeed(), maphash.MakeSeed()},
		aseeds: [2]maphash.Seed{maphash.MakeSeed(), maphash.MakeSeed()}, limit: limit,
		cur: map[textHash]int32{}, prev: map[textHash]int32{}}
}

// count is count(s), from the cache when s was counted before.
func (c *countCache) count(s string, count func(string) int) int {
	if len(s) < countCacheMin || c.limit <= 0 {
		return count(s)
	}
	h := textHash{maphash.String(c.seeds[0], s), maphash.String(c.seeds[1], s)}
	n, _ := c.through(h, func() (int, bool) { return count(s), true })
	return n
}

// around is pre+mid+post counted from mid's stored count n by countAround
// (text.Counter.CountAround), from the cache when the same four were
// counted before; false, and nothing kept, when countAround cannot. A frame
// renders most of its turns twice (fit renders again after trimming) and
// many again in later frames; counting around a turn's seams validates
// its whole body and counts four texts. Its keys are hashed under seeds of
// their own, so an entry answers only for the same (pre, mid, n, post),
// never for a text counted whole: its result rests on the stored n.
func (c *countCache) around(pre, mid string, n int, post string, countAround func(pre, mid string, n int, post string) (int, bool)) (int, bool) {
	if len(mid) < countCacheMin || c.limit <= 0 {
		return countAround(pre, mid, n, post)
	}
	var h textHash
	var m maphash.Hash
	var lens [24]byte
	binary.LittleEndian.PutUint64(lens[0:], uint64(len(pre)))
	binary.LittleEndian.PutUint64(lens[8:], uint64(len(mid)))
	binary.LittleEndian.PutUint64(lens[16:], uint64(n))
	for i, seed := range c.aseeds {
		m.SetSeed(seed)
		m.Write(lens[:])
		m.WriteString(pre)
		m.WriteString(mid)
		m.WriteString(post)
		h[i] = m.Sum64()
	}
	return c.through(h, func() (int, bool) { return countAround(pre, mid, n, post) })
}

// through is h's count from the cache (a hit in the older generation
// moves to the newer), else from compute, kept unless compute failed.
func (c *countCache) through(h textHash, compute func() (int, bool)) (int, bool) {
	c.mu.Lock()
	n, ok := c.cur[h]
	if !ok {
		if n, ok = c.prev[h]; ok {
			c.put(h, n)
		}
	}
	c.mu.Unlock()
	if ok {
		return int(n), true
	}
	got, ok := compute()
	if ok {
		c.mu.Lock()
		c.put(h, int32(got))
		c.mu.Unlock()
	}
	return got, ok
}

// put adds an entry to the newer generation, turning it into the older
// when full (c.mu held).
func (c *countCache) put(h textHash, n int32) {
	if len(c.cur) >= c.limit {
		c.prev, c.cur = c.cur, make(map[textHash]int32, c.limit)
	}
	c.cur[h] = n
}
