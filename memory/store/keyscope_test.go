package store_test

import (
	"context"
	"testing"

	"github.com/perpetuity/perpetuity/memory/store"
)

// TestKeyScopes: a tenant's first key and a key made without a scope are
// pinned; a tenant-wide key says so when it resolves; a scope outside the
// two is refused before anything is written; the zero scope counts as
// pinned, so a mistake narrows a key rather than widening it.
func TestKeyScopes(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := openDB(t)
	nt, err := db.CreateTenantWith(ctx, "scope-acme", "alice", store.TenantOptions{Dict: 1})
	if err != nil {
		t.Fatal(err)
	}
	if nt.Scope != store.ScopeUser {
		t.Errorf("first key's scope %q, want user", nt.Scope)
	}
	wt, err := db.CreateTenantScoped(ctx, "scope-wide", "team", store.ScopeTenant)
	if err != nil {
		t.Fatal(err)
	}
	_, pinned, err := db.CreateKey(ctx, nt.TenantID, nt.UserID, "pinned")
	if err != nil {
		t.Fatal(err)
	}
	_, wide, err := db.CreateKeyScoped(ctx, nt.TenantID, nt.UserID, "wide", store.ScopeTenant)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, key string
		pinned    bool
	}{{"first key", nt.Key, true}, {"CreateKey", pinned, true}, {"tenant-wide", wide, false}, {"tenant-wide first key", wt.Key, false}} {
		k, err := db.ResolveKey(ctx, tc.key)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if k.Pinned() != tc.pinned || (k.Scope == store.ScopeTenant) == tc.pinned {
			t.Errorf("%s resolves with scope %q (pinned %v), want pinned %v", tc.name, k.Scope, k.Pinned(), tc.pinned)
		}
	}
	if _, _, err := db.CreateKeyScoped(ctx, nt.TenantID, nt.UserID, "bad", store.KeyScope("everyone")); err == nil {
		t.Error("a key with scope everyone was created")
	}
	if _, err := db.CreateTenantScoped(ctx, "scope-bad", "x", store.KeyScope("pinned")); err == nil {
		t.Error("a tenant was created with the display word as its scope")
	}
	if !(store.KeyIdentity{}).Pinned() {
		t.Error("the zero scope is not pinned")
	}
	for in, want := range map[string]store.KeyScope{"user": store.ScopeUser, "pinned": store.ScopeUser, "tenant": store.ScopeTenant, "tenant-wide": store.ScopeTenant} {
		if got, err := store.ParseKeyScope(in); err != nil || got != want {
			t.Errorf("ParseKeyScope(%q) = %q, %v", in, got, err)
		}
	}
	for _, in := range []string{"", "User", "all", "tenant "} {
		if _, err := store.ParseKeyScope(in); err == nil {
			t.Errorf("ParseKeyScope(%q) accepted", in)
		}
	}
}
