package store_test

import (
	"context"
	"errors"
	"testing"

	"github.com/perpetuity/perpetuity/memory/store"
	"github.com/perpetuity/perpetuity/migrations/dbtest"
)

// TestKeysResolveThroughTheirLookup (issue 21, item 5): every way a key is
// made writes its coordinator lookup row with it, the proxy's key lookup
// finds the key through that row alone (a key without one is not found,
// though its api_keys row is intact), and a tenant's deletion takes its
// lookup rows along.
func TestKeysResolveThroughTheirLookup(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	url := dbtest.Shared(t)
	db, err := store.Open(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(db.Close)
	owner := dbtest.Owner(t, url)
	nt, err := db.CreateTenant(ctx, "lookup-"+t.Name(), "alice")
	if err != nil {
		t.Fatal(err)
	}
	second, secondKey, err := db.CreateKeyScoped(ctx, nt.TenantID, nt.UserID, "second", store.ScopeTenant)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name  string
		key   string
		keyID int64
	}{{"first key", nt.Key, nt.KeyID}, {"created key", secondKey, second}} {
		t.Run(c.name, func(t *testing.T) {
			var tenant, keyID int64
			if err := owner.QueryRow(ctx, `SELECT tenant_id, key_id FROM key_lookup WHERE key_hash = $1`, store.HashKey(c.key)).Scan(&tenant, &keyID); err != nil {
				t.Fatalf("lookup row: %v", err)
			}
			if tenant != nt.TenantID || keyID != c.keyID {
				t.Fatalf("lookup row names tenant %d key %d, want %d and %d", tenant, keyID, nt.TenantID, c.keyID)
			}
			k, err := db.ResolveKey(ctx, c.key)
			if err != nil || k.TenantID != nt.TenantID || k.KeyID != c.keyID {
				t.Fatalf("ResolveKey: %+v, %v", k, err)
			}
		})
	}
	if _, err := owner.Exec(ctx, `DELETE FROM key_lookup WHERE tenant_id = $1 AND key_id = $2`, nt.TenantID, second); err != nil {
		t.Fatal(err)
	}
	if _, err := db.ResolveKey(ctx, secondKey); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("a key without its lookup row resolved (err %v): the lookup is not what finds keys", err)
	}
	if err := db.DeleteTenant(ctx, nt.TenantID); err != nil {
		t.Fatal(err)
	}
	var left int
	if err := owner.QueryRow(ctx, `SELECT count(*) FROM key_lookup WHERE tenant_id = $1`, nt.TenantID).Scan(&left); err != nil || left != 0 {
		t.Fatalf("%d lookup rows left after the tenant's deletion (%v)", left, err)
	}
}
