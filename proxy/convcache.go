package proxy

import "sync"

// convCacheMax bounds the cache; past it the cache starts over.
const convCacheMax = 100_000

// convCache saves the per-request conversation lookup (a round trip, and a
// transaction, on every request that stores or recalls): a conversation's
// id never changes while it exists, and only a purge of its user removes
// it. An entry holds the engine's count of the tenant's erasures (purges
// and redactions) this process had applied when its lookup began
// (Memory.Erasures); once that count moves, as the catch-up of this
// process's arena applies a purge from the tenant log, whoever made it,
// the entry is looked up again. A purge not yet applied here is caught by
// the capture it breaks (captureLive): the missing conversation refuses
// the whole transaction, the entry goes and the capture is made again.
// Requests that store nothing look up without the cache: they create
// nothing, and their reads must not outlive a purge.
type convCache struct {
	mu sync.Mutex
	m  map[convKey]cachedConv
}

type convKey struct {
	tenant, user int64
	ext          string
}

type cachedConv struct {
	id      int64
	erasure uint64
}

func newConvCache() *convCache { return &convCache{m: map[convKey]cachedConv{}} }

// get is the cached id of k, if it was looked up since the tenant's last
// erasure this process applied (erasures: its count now).
func (c *convCache) get(k convKey, erasures uint64) (int64, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.m[k]
	if !ok || e.erasure != erasures {
		return 0, false
	}
	return e.id, true
}

// put keeps id for k, looked up when the tenant's erasure count was
// erasures.
func (c *convCache) put(k convKey, id int64, erasures uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.m) >= convCacheMax {
		c.m = map[convKey]cachedConv{}
	}
	c.m[k] = cachedConv{id: id, erasure: erasures}
}

// forget drops k: its conversation was found gone.
func (c *convCache) forget(k convKey) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.m, k)
}
