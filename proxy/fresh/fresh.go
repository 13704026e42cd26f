// Package fresh keeps values read from the database that a request needs
// before it may be forwarded (what a key resolves to, a tenant's limits),
// trusted for a bounded time.
//
// A plain TTL cache makes one request in every TTL wait for the database:
// at a steady rate that request is the tail (the bench's streaming time to
// first byte had its p99 there). Here a hit past half the TTL also starts
// one background read, so a value in steady use is replaced before it
// expires and no request waits for it. The bound on staleness is unchanged:
// nothing older than the TTL is ever returned.
package fresh

import (
	"context"
	"sync"
	"time"
)

// refreshTimeout bounds a background read; a request that needs the value
// after a failed refresh reads it itself.
const refreshTimeout = 5 * time.Second

// Cache maps K to V for at most ttl after V was read.
type Cache[K comparable, V any] struct {
	max   int
	now   func() time.Time
	spawn func(func())

	mu  sync.Mutex
	ttl time.Duration
	m   map[K]*entry[V]
	// gen counts Forget calls: a read that began before one must not
	// store what it read (it may be the value the caller just changed).
	gen uint64
}

type entry[V any] struct {
	v          V
	at         time.Time
	refreshing bool
}

// New is a cache of at most max entries (past it, it starts over) on the
// clock now; spawn runs a background refresh (the caller's way to track
// goroutines; nil runs it with go).
func New[K comparable, V any](ttl time.Duration, max int, now func() time.Time, spawn func(func())) *Cache[K, V] {
	if spawn == nil {
		spawn = func(f func()) { go f() }
	}
	return &Cache[K, V]{ttl: ttl, max: max, now: now, spawn: spawn, m: map[K]*entry[V]{}}
}

// SetTTL changes how long a value is trusted, for tests that cannot wait
// the default out.
func (c *Cache[K, V]) SetTTL(d time.Duration) {
	c.mu.Lock()
	c.ttl = d
	c.mu.Unlock()
}

// Get is k's value: the cached one while younger than the TTL, else
// load's, which is cached when it succeeds (a failed load is not).
func (c *Cache[K, V]) Get(ctx context.Context, k K, load func(context.Context) (V, error)) (V, error) {
	now := c.now()
	c.mu.Lock()
	e, ok := c.m[k]
	if ok && now.Sub(e.at) < c.ttl {
		due := !e.refreshing && now.Sub(e.at) >= c.ttl/2
		e.refreshing = e.refreshing || due
		v := e.v
		c.mu.Unlock()
		if due {
			c.spawn(func() { c.refresh(k, e, load) })
		}
		return v, nil
	}
	gen := c.gen
	c.mu.Unlock()
	v, err := load(ctx)
	if err != nil {
		return v, err
	}
	c.store(k, v, now, gen, nil)
	return v, nil
}

// Peek is k's cached value whatever its age, for a caller that falls back
// to the last known value when a read fails.
func (c *Cache[K, V]) Peek(k K) (V, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.m[k]
	if !ok {
		var zero V
		return zero, false
	}
	return e.v, true
}

// Forget drops every entry whose value matches, so a change made in this
// process holds on the next request (other processes see it within the
// TTL), and stops reads already under way from storing what they read.
func (c *Cache[K, V]) Forget(match func(V) bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.gen++
	for k, e := range c.m {
		if match(e.v) {
			delete(c.m, k)
		}
	}
}

func (c *Cache[K, V]) refresh(k K, old *entry[V], load func(context.Context) (V, error)) {
	ctx, cancel := context.WithTimeout(context.Background(), refreshTimeout)
	defer cancel()
	c.mu.Lock()
	gen := c.gen
	c.mu.Unlock()
	at := c.now()
	loaded := false
	defer func() {
		if !loaded {
			// load panicked (the spawner may recover it): a failed load,
			// or the entry would not be refreshed again until its TTL ran out.
			c.drop(k, old)
		}
	}()
	v, err := load(ctx)
	loaded = true
	if err != nil {
		// Gone or unreadable: the next request reads it itself and gets
		// the answer (a revoked key's refusal) from the database.
		c.drop(k, old)
		return
	}
	c.store(k, v, at, gen, old)
}

// drop removes k's entry if it is still old.
func (c *Cache[K, V]) drop(k K, old *entry[V]) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m[k] == old {
		delete(c.m, k)
	}
}

// store caches v read at at, unless a Forget came since the read began
// or (for a refresh) the entry it refreshes was replaced meanwhile.
func (c *Cache[K, V]) store(k K, v V, at time.Time, gen uint64, old *entry[V]) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.gen != gen {
		return
	}
	if cur, ok := c.m[k]; old != nil && (!ok || cur != old) {
		return
	}
	if _, ok := c.m[k]; !ok && len(c.m) >= c.max {
		c.m = map[K]*entry[V]{}
	}
	c.m[k] = &entry[V]{v: v, at: at}
}
