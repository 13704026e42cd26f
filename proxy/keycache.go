package proxy

import (
	"context"
	"sync"
	"time"

	"github.com/perpetuity/perpetuity/memory/store"
)

// keyCacheTTL is how long a resolved key is trusted without asking the
// database again: the longest a revoked key keeps working in one process.
const keyCacheTTL = 2 * time.Second

// keyCacheMax bounds the cache; past it the cache starts over.
const keyCacheMax = 10_000

// keyCache saves the per-request key lookup, which would otherwise be a
// database round trip on every proxied call. Entries are keyed by the
// key's hash, so no key is held in memory longer than its request, and only
// keys that resolved are cached (a flood of wrong keys cannot fill it).
type keyCache struct {
	ttl time.Duration
	mu  sync.Mutex
	m   map[string]cachedKey
}

type cachedKey struct {
	k       store.KeyIdentity
	expires time.Time
}

func newKeyCache(ttl time.Duration) *keyCache { return &keyCache{ttl: ttl, m: map[string]cachedKey{}} }

func (c *keyCache) resolve(ctx context.Context, key string, lookup func(context.Context, string) (store.KeyIdentity, error)) (store.KeyIdentity, error) {
	h := string(store.HashKey(key))
	now := time.Now()
	c.mu.Lock()
	e, ok := c.m[h]
	c.mu.Unlock()
	if ok && now.Before(e.expires) {
		return e.k, nil
	}
	k, err := lookup(ctx, key)
	if err != nil {
		return k, err
	}
	c.mu.Lock()
	if len(c.m) >= keyCacheMax {
		c.m = map[string]cachedKey{}
	}
	c.m[h] = cachedKey{k: k, expires: now.Add(c.ttl)}
	c.mu.Unlock()
	return k, nil
}

// forget drops the cached copies of a key, so a change the console made in
// this process (a revoke, a rotation, new limits) holds on the next
// request; other processes see it within the TTL.
func (c *keyCache) forget(keyID int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for h, e := range c.m {
		if e.k.KeyID == keyID {
			delete(c.m, h)
		}
	}
}
