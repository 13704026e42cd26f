package store_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/perpetuity/perpetuity/memory/store"
)

func intp(n int) *int       { return &n }
func int64p(n int64) *int64 { return &n }

// TestKeyLifecycle: a key's end and own limits come with it when it
// resolves; an ended key still resolves, for the proxy to refuse as
// expired rather than unknown; rotation makes a replacement with the same
// name, user, scope and limits and no end, and ends the old key after the
// grace (never later than its own end); a key is rotated once; limits
// outside the columns are refused; another tenant's key is not found.
func TestKeyLifecycle(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := openDB(t)
	nt, err := db.CreateTenantWith(ctx, "life-acme", "alice", store.TenantOptions{Dict: 1})
	if err != nil {
		t.Fatal(err)
	}
	other, err := db.CreateTenantWith(ctx, "life-other", "bob", store.TenantOptions{Dict: 1})
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	soon, past := now.Add(time.Hour).Truncate(time.Microsecond), now.Add(-time.Minute).Truncate(time.Microsecond)
	limited := store.KeyLimits{RequestsPerMinute: intp(7), TokensPerDay: int64p(5000)}

	for _, tc := range []struct {
		name    string
		o       store.KeyOptions
		expired bool
	}{
		{"never", store.KeyOptions{Name: "never", Scope: store.ScopeUser}, false},
		{"ends soon", store.KeyOptions{Name: "soon", Scope: store.ScopeTenant, ExpiresAt: &soon, Limits: limited}, false},
		{"ended", store.KeyOptions{Name: "ended", Scope: store.ScopeUser, ExpiresAt: &past}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, key, err := db.CreateKeyWith(ctx, nt.TenantID, nt.UserID, tc.o)
			if err != nil {
				t.Fatal(err)
			}
			k, err := db.ResolveKey(ctx, key)
			if err != nil {
				t.Fatalf("resolve: %v", err)
			}
			if (k.ExpiresAt == nil) != (tc.o.ExpiresAt == nil) || (k.ExpiresAt != nil && !k.ExpiresAt.Equal(*tc.o.ExpiresAt)) {
				t.Errorf("end %v, want %v", k.ExpiresAt, tc.o.ExpiresAt)
			}
			if got := k.Expired(time.Now()); got != tc.expired {
				t.Errorf("expired %v, want %v", got, tc.expired)
			}
			if k.Scope != tc.o.Scope || k.Limits.Over(store.Limits{TokensPerMinute: 9}) != tc.o.Limits.Over(store.Limits{TokensPerMinute: 9}) {
				t.Errorf("scope %q limits %+v, want %q %+v", k.Scope, k.Limits, tc.o.Scope, tc.o.Limits)
			}
		})
	}

	// Rotation of a key with limits and an end an hour away, with a day's
	// grace: the old key keeps its own, earlier end.
	oldID, oldKey, err := db.CreateKeyWith(ctx, nt.TenantID, nt.UserID, store.KeyOptions{Name: "rotating", Scope: store.ScopeTenant, ExpiresAt: &soon, Limits: limited})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.RotateKey(ctx, other.TenantID, oldID, time.Hour); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("another tenant rotated the key: %v", err)
	}
	r, err := db.RotateKey(ctx, nt.TenantID, oldID, 24*time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	if !r.OldValidUntil.Equal(soon) {
		t.Errorf("old key's end %v, want its own earlier end %v", r.OldValidUntil, soon)
	}
	nk, err := db.ResolveKey(ctx, r.Key)
	if err != nil {
		t.Fatal(err)
	}
	if nk.KeyID != r.NewID || nk.UserID != nt.UserID || nk.Scope != store.ScopeTenant || nk.ExpiresAt != nil ||
		*nk.Limits.RequestsPerMinute != 7 || *nk.Limits.TokensPerDay != 5000 || nk.Limits.TokensPerMinute != nil || r.Name != "rotating" {
		t.Errorf("replacement %+v (%+v), want the old key's user, scope and limits and no end", nk, nk.Limits)
	}
	if _, err := db.RotateKey(ctx, nt.TenantID, oldID, time.Hour); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("a rotated key rotated again: %v", err)
	}
	// A key without an end gets the grace's.
	r2, err := db.RotateKey(ctx, nt.TenantID, r.NewID, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	if d := time.Until(r2.OldValidUntil); d < 59*time.Minute || d > 61*time.Minute {
		t.Errorf("grace end in %v, want an hour", d)
	}
	if k, err := db.ResolveKey(ctx, oldKey); err != nil || k.Expired(time.Now()) {
		t.Errorf("the old key within its grace: %v expired=%v", err, k.Expired(time.Now()))
	}

	// Own limits: set, cleared, refused out of range, not another tenant's,
	// not a revoked key's.
	keyID, key, err := db.CreateKeyWith(ctx, nt.TenantID, nt.UserID, store.KeyOptions{Name: "limits", Scope: store.ScopeUser})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name   string
		tenant int64
		l      store.KeyLimits
		ok     bool
	}{
		{"set", nt.TenantID, store.KeyLimits{RequestsPerMinute: intp(0), TokensPerMinute: intp(100)}, true},
		{"cleared", nt.TenantID, store.KeyLimits{}, true},
		{"negative", nt.TenantID, store.KeyLimits{TokensPerDay: int64p(-1)}, false},
		{"too large", nt.TenantID, store.KeyLimits{TokensPerMinute: intp(1 << 40)}, false},
		{"another tenant", other.TenantID, store.KeyLimits{RequestsPerMinute: intp(1)}, false},
	} {
		t.Run("limits "+tc.name, func(t *testing.T) {
			before, err := db.KeyOwnLimits(ctx, nt.TenantID, keyID)
			if err != nil {
				t.Fatal(err)
			}
			err = db.SetKeyLimits(ctx, tc.tenant, keyID, tc.l)
			if (err == nil) != tc.ok {
				t.Fatalf("err %v, want ok %v", err, tc.ok)
			}
			want := before
			if tc.ok {
				want = tc.l
			}
			k, err := db.ResolveKey(ctx, key)
			if err != nil {
				t.Fatal(err)
			}
			base := store.Limits{RequestsPerMinute: 50, TokensPerMinute: 60, TokensPerDay: 70}
			if got := k.Limits.Over(base); got != want.Over(base) {
				t.Errorf("limits in force %+v, want %+v", got, want.Over(base))
			}
		})
	}
	if err := db.RevokeKey(ctx, nt.TenantID, keyID); err != nil {
		t.Fatal(err)
	}
	if err := db.SetKeyLimits(ctx, nt.TenantID, keyID, store.KeyLimits{}); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("a revoked key's limits changed: %v", err)
	}
}
