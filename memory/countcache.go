package memory

import (
	"hash/maphash"
	"sync"
)

// countCache keeps the model token counts of the texts this process's
// frames counted. Counting is most of a frame's render, and consecutive
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
	return &countCache{seeds: [2]maphash.Seed{maphash.MakeSeed(), maphash.MakeSeed()}, limit: limit,
		cur: map[textHash]int32{}, prev: map[textHash]int32{}}
}

// count is count(s), from the cache when s was counted before.
func (c *countCache) count(s string, count func(string) int) int {
	if len(s) < countCacheMin || c.limit <= 0 {
		return count(s)
	}
	h := textHash{maphash.String(c.seeds[0], s), maphash.String(c.seeds[1], s)}
	c.mu.Lock()
	n, ok := c.cur[h]
	if !ok {
		if n, ok = c.prev[h]; ok {
			c.put(h, n)
		}
	}
	c.mu.Unlock()
	if ok {
		return int(n)
	}
	got := count(s)
	c.mu.Lock()
	c.put(h, int32(got))
	c.mu.Unlock()
	return got
}

// put adds an entry to the newer generation, turning it into the older
// when full (c.mu held).
func (c *countCache) put(h textHash, n int32) {
	if len(c.cur) >= c.limit {
		c.prev, c.cur = c.cur, make(map[textHash]int32, c.limit)
	}
	c.cur[h] = n
}
