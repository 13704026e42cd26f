package ops_test

import (
	"context"
	"slices"
	"testing"

	"github.com/perpetuity/perpetuity/memory/dict"
	"github.com/perpetuity/perpetuity/memory/ops"
	"github.com/perpetuity/perpetuity/memory/store"
	"github.com/perpetuity/perpetuity/migrations/dbtest"
)

// TestDenseRolloutV3 (issue 16, items 2 and 4): a store with data moves to
// dictionary v3 by upload, derive, flip, and back. Every v3 row carries its
// dense vector, items captured during the derivation too; the tenant's
// common component is frozen at the derivation's end; the arena serves the
// hybrid scan (a word no turn holds still finds turns by meaning); the
// integrity check recomputes the vectors and catches a changed one.
func TestDenseRolloutV3(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	// Its own database: a tenant serving v3 in the shared one would make
	// it the version other tests' new tenants start on.
	f := newFixtureOn(t, openDB(t, dbtest.New(t)))
	v3, err := dict.Builtin(3)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.db.UploadDictionary(ctx, v3, admin); err != nil {
		t.Fatal(err)
	}
	w := f.who(t, "alice", "c1")
	f.say(t, f.eng, w, 3, 0, 140)
	if ids, err := f.eng.Rank(ctx, f.nt.TenantID, w.UserID, "vegetables", 5); err != nil || len(ids) != 0 {
		t.Fatalf("v1 ranks %v (%v) for a word no turn holds", ids, err)
	}
	if _, err := f.db.StartDerive(ctx, f.nt.TenantID, 3, admin); err != nil {
		t.Fatal(err)
	}
	during := f.say(t, f.eng, w, 3, 140, 5)
	if got := f.int64(t, `SELECT count(*) FROM retrieval_rows WHERE tenant_id = $1 AND dict_version = 3
		AND item_id = ANY($2) AND dense IS NOT NULL`, f.nt.TenantID, during); got != 5 {
		t.Fatalf("%d of 5 items captured during the derivation have a dense v3 row", got)
	}
	r, err := (&ops.Deriver{St: f.db, Batch: 16}).Derive(ctx, f.nt.TenantID, 3, admin)
	if err != nil || r.State != store.RolloutReady {
		t.Fatalf("derive v3: %+v %v", r, err)
	}
	if n := f.int64(t, `SELECT count(*) FROM retrieval_rows WHERE tenant_id = $1 AND dict_version = 3 AND dense IS NULL`, f.nt.TenantID); n != 0 {
		t.Fatalf("%d v3 rows without a vector", n)
	}
	if n := f.int64(t, `SELECT rows_used FROM dense_components WHERE tenant_id = $1 AND dict_version = 3`, f.nt.TenantID); n != 145 {
		t.Fatalf("component from %d rows, want 145", n)
	}
	other := f.engine()
	f.mustBeClean(t, other)
	if _, err := f.db.Flip(ctx, f.nt.TenantID, 3, admin); err != nil {
		t.Fatal(err)
	}
	a := f.snapshot(t, other)
	if a.DictVersion != 3 || a.Space == nil || a.Count != 145 {
		t.Fatalf("after the flip: v%d, space %v, %d items", a.DictVersion, a.Space != nil, a.Count)
	}
	f.mustBeClean(t, other)

	// Captured under v3: rows for v3 (with vectors) and v1 (the way back).
	f.say(t, f.eng, w, 3, 145, 4)
	if f.rows(t, 1) != 149 || f.rows(t, 3) != 149 {
		t.Fatalf("rows after capture under v3: v1 %d, v3 %d", f.rows(t, 1), f.rows(t, 3))
	}
	first, err := f.eng.Rank(ctx, f.nt.TenantID, w.UserID, "vegetables", 5)
	if err != nil || len(first) == 0 {
		t.Fatalf("v3 ranks %v (%v) for a word no turn holds, want turns by meaning", first, err)
	}
	second, err := other.Rank(ctx, f.nt.TenantID, w.UserID, "vegetables", 5)
	if err != nil || !slices.Equal(first, second) {
		t.Fatalf("two processes rank %v and %v", first, second)
	}
	f.mustBeClean(t, other)

	// A changed vector is found.
	f.exec(t, `UPDATE retrieval_rows SET dense = set_byte(dense, 10, (get_byte(dense, 10) + 1) % 256)
		WHERE tenant_id = $1 AND dict_version = 3 AND item_id = $2`, f.nt.TenantID, during[0])
	_, vs, err := (&ops.Checker{St: f.db}).Check(ctx, f.nt.TenantID, admin)
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, v := range vs {
		found = found || (v.Invariant == ops.InvRowMismatch && v.ItemID != nil && *v.ItemID == during[0])
	}
	if !found {
		t.Fatalf("a changed v3 vector went unnoticed: %+v", vs)
	}
	f.exec(t, `UPDATE retrieval_rows SET dense = set_byte(dense, 10, (get_byte(dense, 10) + 255) % 256)
		WHERE tenant_id = $1 AND dict_version = 3 AND item_id = $2`, f.nt.TenantID, during[0])

	if _, err := f.db.Flip(ctx, f.nt.TenantID, 1, admin); err != nil {
		t.Fatal(err)
	}
	if a := f.snapshot(t, other); a.DictVersion != 1 || a.Space != nil {
		t.Fatalf("after the flip back: v%d, space %v", a.DictVersion, a.Space != nil)
	}
	f.mustBeClean(t, other)
	if ret, err := f.db.Retire(ctx, f.nt.TenantID, 3, admin); err != nil || ret.Rows != 149 {
		t.Fatalf("retire v3: %+v %v", ret, err)
	}
	if n := f.int64(t, `SELECT count(*) FROM dense_components WHERE tenant_id = $1`, f.nt.TenantID); n != 0 {
		t.Fatal("retiring v3 left its component")
	}
}
