package store

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/perpetuity/perpetuity/migrations/dbtest"
)

// TestPipelineRead: the tenant a batch sets, and a hot batch's kept plans,
// hold for every statement of the batch and for nothing after it (a cold
// load's catch-up on the same connection is planned for its values), and a
// failing batch leaves the pooled connection idle rather than inside an
// aborted transaction. A derived batch's commit alone does not wait for the
// disk (synchronous_commit), and only until its transaction ends.
func TestPipelineRead(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db, err := Open(ctx, dbtest.Shared(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(db.Close)
	for _, tc := range []struct {
		name     string
		snapshot bool
		hot      bool
		fail     bool
		derived  bool
	}{
		{"implicit", false, false, false, false},
		{"snapshot", true, false, false, false},
		{"implicit failing", false, false, true, false},
		{"snapshot failing", true, false, true, false},
		{"hot", false, true, false, false},
		{"hot failing", false, true, true, false},
		{"hot snapshot", true, true, false, false},
		{"derived", false, true, false, true},
		{"derived failing", false, true, true, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var first, second, plans, durable string
			tenantSQL := setTenantSQL
			switch {
			case tc.derived:
				tenantSQL = setTenantDerivedSQL
			case tc.hot:
				tenantSQL = setTenantGenericSQL
			}
			err := db.pipeline(ctx, 4711, tc.snapshot, tenantSQL, func(b *pgx.Batch) {
				b.Queue(`SELECT current_setting('app.tenant_id', true)`).QueryRow(func(r pgx.Row) error { return r.Scan(&first) })
				b.Queue(`SELECT current_setting('plan_cache_mode')`).QueryRow(func(r pgx.Row) error { return r.Scan(&plans) })
				b.Queue(`SELECT current_setting('synchronous_commit')`).QueryRow(func(r pgx.Row) error { return r.Scan(&durable) })
				if tc.fail {
					b.Queue(`SELECT 1/0`)
				}
				b.Queue(`SELECT current_setting('app.tenant_id', true)`).QueryRow(func(r pgx.Row) error { return r.Scan(&second) })
			})
			if tc.fail != (err != nil) {
				t.Fatalf("err = %v, want failure %v", err, tc.fail)
			}
			if first != "4711" || (!tc.fail && second != "4711") {
				t.Fatalf("tenant inside the batch: %q, %q", first, second)
			}
			if want := map[bool]string{false: "auto", true: "force_generic_plan"}[tc.hot]; plans != want {
				t.Fatalf("plan_cache_mode inside the batch: %q, want %q", plans, want)
			}
			if want := map[bool]string{false: "on", true: "off"}[tc.derived]; durable != want {
				t.Fatalf("synchronous_commit inside the batch: %q, want %q", durable, want)
			}
			// Every pooled connection: idle, and no tenant left behind.
			conns := db.Pool.AcquireAllIdle(ctx)
			defer func() {
				for _, c := range conns {
					c.Release()
				}
			}()
			for _, c := range conns {
				if st := c.Conn().PgConn().TxStatus(); st != 'I' {
					t.Fatalf("pooled connection left in transaction status %c", st)
				}
				var after *string
				if err := c.QueryRow(ctx, `SELECT NULLIF(current_setting('app.tenant_id', true), '')`).Scan(&after); err != nil {
					t.Fatal(err)
				}
				if after != nil {
					t.Fatalf("tenant %q outlived its batch", *after)
				}
				var plansAfter string
				if err := c.QueryRow(ctx, `SELECT current_setting('plan_cache_mode')`).Scan(&plansAfter); err != nil {
					t.Fatal(err)
				}
				if plansAfter != "auto" {
					t.Fatalf("plan_cache_mode %q outlived its batch", plansAfter)
				}
				var durableAfter string
				if err := c.QueryRow(ctx, `SELECT current_setting('synchronous_commit')`).Scan(&durableAfter); err != nil {
					t.Fatal(err)
				}
				if durableAfter != "on" {
					t.Fatalf("synchronous_commit %q outlived its batch", durableAfter)
				}
			}
		})
	}
}

// TestPoolPlansNoParallelWorkers: every pooled connection, traced or not,
// acts as the application role and never plans a parallel worker (starting
// one cost a catch-up 30-60 ms at 250k items).
func TestPoolPlansNoParallelWorkers(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	plain, err := Open(ctx, dbtest.Shared(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(plain.Close)
	traced, err := OpenTraced(ctx, dbtest.Shared(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(traced.Close)
	for name, db := range map[string]*DB{"plain": plain, "traced": traced} {
		var workers, role string
		if err := db.Pool.QueryRow(ctx, `SELECT current_setting('max_parallel_workers_per_gather'), current_user`).Scan(&workers, &role); err != nil {
			t.Fatal(err)
		}
		if workers != "0" || role != AppRole {
			t.Errorf("%s pool: max_parallel_workers_per_gather %s, role %s", name, workers, role)
		}
	}
}

// TestInTenantDerived: the chain writer's transaction (inTenantDerived) has
// the tenant set and its commit not waiting for the disk; both end with it.
func TestInTenantDerived(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db, err := Open(ctx, dbtest.Shared(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(db.Close)
	var tenant, durable string
	if err := db.inTenantDerived(ctx, 4712, func(tx pgx.Tx) error {
		return tx.QueryRow(ctx, `SELECT current_setting('app.tenant_id', true), current_setting('synchronous_commit')`).Scan(&tenant, &durable)
	}); err != nil {
		t.Fatal(err)
	}
	if tenant != "4712" || durable != "off" {
		t.Fatalf("inside: tenant %q, synchronous_commit %q", tenant, durable)
	}
	if err := db.InTenant(ctx, 4712, func(tx pgx.Tx) error {
		return tx.QueryRow(ctx, `SELECT current_setting('synchronous_commit')`).Scan(&durable)
	}); err != nil {
		t.Fatal(err)
	}
	if durable != "on" {
		t.Fatalf("a plain transaction after it: synchronous_commit %q", durable)
	}
}
