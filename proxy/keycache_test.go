package proxy

import (
	"context"
	"testing"
	"time"

	"github.com/perpetuity/perpetuity/memory/store"
)

func TestKeyCache(t *testing.T) {
	t.Parallel()
	lookups := 0
	revoked := false
	lookup := func(_ context.Context, key string) (store.KeyIdentity, error) {
		lookups++
		if revoked || key != "ppk_good" {
			return store.KeyIdentity{}, store.ErrNotFound
		}
		return store.KeyIdentity{TenantID: 7, KeyID: 1}, nil
	}
	c := newKeyCache(50*time.Millisecond, func(f func()) { f() })
	ctx := context.Background()
	for i := 0; i < 3; i++ {
		if k, err := c.resolve(ctx, "ppk_good", lookup); err != nil || k.TenantID != 7 {
			t.Fatalf("resolve: %+v %v", k, err)
		}
	}
	if lookups != 1 {
		t.Fatalf("%d lookups for one key within the TTL", lookups)
	}
	for i := 0; i < 3; i++ {
		if _, err := c.resolve(ctx, "ppk_bad", lookup); err != store.ErrNotFound {
			t.Fatalf("a wrong key resolved: %v", err)
		}
	}
	if lookups != 4 {
		t.Fatalf("wrong keys must not be cached: %d lookups", lookups)
	}
	// Entries are keyed by the key's hash, never by the key itself.
	if _, ok := c.c.Peek("ppk_good"); ok {
		t.Fatal("the cache holds a raw key")
	}
	if _, ok := c.c.Peek(string(store.HashKey("ppk_good"))); !ok {
		t.Fatal("the resolved key is not cached under its hash")
	}
	if _, ok := c.c.Peek(string(store.HashKey("ppk_bad"))); ok {
		t.Fatal("a wrong key was cached")
	}
	revoked = true
	time.Sleep(60 * time.Millisecond)
	if _, err := c.resolve(ctx, "ppk_good", lookup); err != store.ErrNotFound {
		t.Fatalf("a revoked key still resolves after the TTL: %v", err)
	}
}
