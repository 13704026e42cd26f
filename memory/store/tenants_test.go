package store_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/perpetuity/perpetuity/memory/dict"
	"github.com/perpetuity/perpetuity/memory/store"
	"github.com/perpetuity/perpetuity/migrations/dbtest"
)

func headVersion(t *testing.T, db *store.DB, tenantID int64) int {
	t.Helper()
	st, err := db.DictStatus(context.Background(), tenantID)
	if err != nil {
		t.Fatal(err)
	}
	return st.Active
}

// TestNewTenantsStartOnTheDefault (issue 16, item 4): a new tenant starts
// on dict.Default, or on the version it asks for; tenants that exist keep
// theirs; a version most tenants serve wins only when it is newer.
func TestNewTenantsStartOnTheDefault(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	url := dbtest.New(t) // its own: it moves tenants' heads
	db, err := store.Open(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(db.Close)
	owner := dbtest.Owner(t, url)

	old, err := db.CreateTenantWith(ctx, "old", "alice", store.TenantOptions{Dict: 1})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		o    store.TenantOptions
		want int
	}{
		{"default", store.TenantOptions{}, dict.Default},
		{"pinned to v1", store.TenantOptions{Dict: 1}, 1},
		{"pinned to v2", store.TenantOptions{Dict: 2, Scope: store.ScopeTenant}, 2},
		{"default after others pinned", store.TenantOptions{}, dict.Default},
	} {
		nt, err := db.CreateTenantWith(ctx, c.name, "alice", c.o)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if got := headVersion(t, db, nt.TenantID); got != c.want {
			t.Errorf("%s: starts on v%d, want v%d", c.name, got, c.want)
		}
	}
	if got := headVersion(t, db, old.TenantID); got != 1 {
		t.Errorf("an existing tenant moved to v%d", got)
	}

	// A version neither loaded nor shipped: refused, nothing stored.
	var before int64
	if err := owner.QueryRow(ctx, `SELECT count(*) FROM tenants`).Scan(&before); err != nil {
		t.Fatal(err)
	}
	if _, err := db.CreateTenantWith(ctx, "nowhere", "alice", store.TenantOptions{Dict: 99}); !errors.Is(err, store.ErrNotFound) ||
		!strings.Contains(err.Error(), "v99") {
		t.Fatalf("a tenant on a version never loaded: %v", err)
	}
	var after int64
	if err := owner.QueryRow(ctx, `SELECT count(*) FROM tenants`).Scan(&after); err != nil || after != before {
		t.Fatalf("a refused tenant left rows: %d tenants, was %d (%v)", after, before, err)
	}

	// Most tenants on a newer, uploaded version: new tenants follow it
	// (a global flip carries them); heads moved here as a flip would.
	v4, err := dict.Parse(strings.NewReader("perpetuity-dictionary\t4\tnewer\n[terms]\ngarden\n"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.UploadDictionary(ctx, v4, tester); err != nil {
		t.Fatal(err)
	}
	if _, err := owner.Exec(ctx, `UPDATE tenant_heads SET dict_version = 4 WHERE tenant_id <> $1`, old.TenantID); err != nil {
		t.Fatal(err)
	}
	nt, err := db.CreateTenant(ctx, "follows", "alice")
	if err != nil {
		t.Fatal(err)
	}
	if got := headVersion(t, db, nt.TenantID); got != 4 {
		t.Errorf("with most tenants on v4 a new tenant starts on v%d", got)
	}
	// Most tenants back on an older version: new tenants still get the default.
	if _, err := owner.Exec(ctx, `UPDATE tenant_heads SET dict_version = 1`); err != nil {
		t.Fatal(err)
	}
	if nt, err = db.CreateTenant(ctx, "default again", "alice"); err != nil {
		t.Fatal(err)
	}
	if got := headVersion(t, db, nt.TenantID); got != dict.Default {
		t.Errorf("with every tenant on v1 a new tenant starts on v%d, want v%d", got, dict.Default)
	}
}

// TestNewTenantLoadsItsDictionary: in a database without the default
// dictionary, tenants created at once all start on it and it is loaded
// once, whole, with no derivation (nothing to derive) and no rollout row.
func TestNewTenantLoadsItsDictionary(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	url := dbtest.New(t)
	owner := dbtest.Owner(t, url)
	// The test template holds the default dictionary; this database must not.
	if _, err := owner.Exec(ctx, `DELETE FROM dictionaries WHERE version = $1`, dict.Default); err != nil {
		t.Fatal(err)
	}
	const n = 4
	dbs := make([]*store.DB, n) // one pool each, as separate processes would
	for i := range dbs {
		db, err := store.Open(ctx, url)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(db.Close)
		dbs[i] = db
	}
	ids := make([]int64, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range n {
		wg.Go(func() {
			<-start
			nt, err := dbs[i].CreateTenant(ctx, "team", "alice")
			ids[i], errs[i] = nt.TenantID, err
		})
	}
	close(start)
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("creation %d: %v", i, err)
		}
		if got := headVersion(t, dbs[0], ids[i]); got != dict.Default {
			t.Errorf("tenant %d starts on v%d, want v%d", ids[i], got, dict.Default)
		}
	}
	d, err := dict.Builtin(dict.Default)
	if err != nil {
		t.Fatal(err)
	}
	var versions, entries, rollouts int
	if err := owner.QueryRow(ctx, `SELECT count(*), coalesce(sum(entries), 0) FROM dictionaries WHERE version = $1`, dict.Default).
		Scan(&versions, &entries); err != nil {
		t.Fatal(err)
	}
	if versions != 1 || entries != d.Len() {
		t.Fatalf("v%d loaded %d times with %d entries, want once with %d", dict.Default, versions, entries, d.Len())
	}
	if err := owner.QueryRow(ctx, `SELECT count(*) FROM dictionary_entries WHERE version = $1`, dict.Default).Scan(&entries); err != nil ||
		entries != d.Len() {
		t.Fatalf("%d entries stored (%v), want %d", entries, err, d.Len())
	}
	if err := owner.QueryRow(ctx, `SELECT count(*) FROM dict_rollouts`).Scan(&rollouts); err != nil || rollouts != 0 {
		t.Fatalf("%d rollouts (%v): a new tenant needs none", rollouts, err)
	}
	got, err := dbs[0].LoadDictionary(ctx, dict.Default)
	if err != nil || got.Len() != d.Len() || got.Name != d.Name {
		t.Fatalf("the loaded default reads back as %v (%v)", got, err)
	}
}
