package proxy

import (
	"context"
	"time"

	"github.com/perpetuity/perpetuity/memory/store"
	"github.com/perpetuity/perpetuity/proxy/fresh"
)

// keyCacheTTL is how long a resolved key is trusted without asking the
// database again: the longest a revoked key keeps working in one process.
// A key in use is read again in the background past half of it
// (proxy/fresh), so no request waits for that read.
const keyCacheTTL = 2 * time.Second

// keyCacheMax bounds the cache; past it the cache starts over.
const keyCacheMax = 10_000

// keyCache saves the per-request key lookup, which would otherwise be a
// database round trip on every proxied call. Entries are keyed by the
// key's hash, so the cache itself holds no key (a background refresh holds
// it as long as its one read), and only keys that resolved are cached (a
// flood of wrong keys cannot fill it).
type keyCache struct {
	c *fresh.Cache[string, store.KeyIdentity]
}

// newKeyCache is a cache whose background refreshes run through spawn.
func newKeyCache(ttl time.Duration, spawn func(func())) *keyCache {
	return &keyCache{c: fresh.New[string, store.KeyIdentity](ttl, keyCacheMax, time.Now, spawn)}
}

func (c *keyCache) resolve(ctx context.Context, key string, lookup func(context.Context, string) (store.KeyIdentity, error)) (store.KeyIdentity, error) {
	return c.c.Get(ctx, string(store.HashKey(key)), func(ctx context.Context) (store.KeyIdentity, error) {
		return lookup(ctx, key)
	})
}

// forget drops the cached copies of a key, so a change the console made in
// this process (a revoke, a rotation, new limits) holds on the next
// request; other processes see it within the TTL.
func (c *keyCache) forget(keyID int64) {
	c.c.Forget(func(k store.KeyIdentity) bool { return k.KeyID == keyID })
}
