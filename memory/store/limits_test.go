package store_test

import (
	"context"
	"errors"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/perpetuity/perpetuity/memory/store"
)

func limitPtr[T any](v T) *T { return &v }

func TestTenantLimits(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := openDB(t)
	acme, err := db.CreateTenantWith(ctx, "limits-acme", "alice", store.TenantOptions{Dict: 1})
	if err != nil {
		t.Fatal(err)
	}
	globex, err := db.CreateTenantWith(ctx, "limits-globex", "gina", store.TenantOptions{Dict: 1})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.TenantLimits(ctx, acme.TenantID); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("a tenant without limits: %v, want ErrNotFound", err)
	}
	base := store.Limits{RequestsPerMinute: 60, TokensPerMinute: 90_000}

	steps := []struct {
		name   string
		tenant int64
		u      store.LimitsUpdate
		want   store.Limits
	}{
		{"first change keeps the defaults for the rest", acme.TenantID,
			store.LimitsUpdate{TokensPerDay: limitPtr(int64(5_000_000_000))},
			store.Limits{RequestsPerMinute: 60, TokensPerMinute: 90_000, TokensPerDay: 5_000_000_000}},
		{"later changes keep the row's other fields", acme.TenantID,
			store.LimitsUpdate{RequestsPerMinute: limitPtr(3)},
			store.Limits{RequestsPerMinute: 3, TokensPerMinute: 90_000, TokensPerDay: 5_000_000_000}},
		{"0 lifts a limit", acme.TenantID,
			store.LimitsUpdate{TokensPerMinute: limitPtr(0), TokensPerDay: limitPtr(int64(0))},
			store.Limits{RequestsPerMinute: 3}},
		{"another tenant has its own row", globex.TenantID,
			store.LimitsUpdate{RequestsPerMinute: limitPtr(7), TokensPerMinute: limitPtr(100)},
			store.Limits{RequestsPerMinute: 7, TokensPerMinute: 100}},
	}
	for _, s := range steps {
		got, err := db.SetTenantLimits(ctx, s.tenant, s.u, base)
		if err != nil {
			t.Fatalf("%s: %v", s.name, err)
		}
		read, err := db.TenantLimits(ctx, s.tenant)
		if err != nil {
			t.Fatalf("%s: read back: %v", s.name, err)
		}
		for what, l := range map[string]store.Limits{"returned": got, "read back": read} {
			if l.UpdatedAt.IsZero() {
				t.Errorf("%s: %s limits carry no update time", s.name, what)
			}
			l.UpdatedAt = s.want.UpdatedAt
			if l != s.want {
				t.Errorf("%s: %s %+v, want %+v", s.name, what, l, s.want)
			}
		}
	}
	if l, _ := db.TenantLimits(ctx, acme.TenantID); l.RequestsPerMinute != 3 {
		t.Fatalf("the other tenant's change reached acme: %+v", l)
	}

	if _, err := db.SetTenantLimits(ctx, acme.TenantID, store.LimitsUpdate{RequestsPerMinute: limitPtr(-1)}, base); err == nil {
		t.Fatal("a negative limit was stored")
	}
	if _, err := db.SetTenantLimits(ctx, 1<<40, store.LimitsUpdate{RequestsPerMinute: limitPtr(1)}, base); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("limits for no tenant: %v, want ErrNotFound", err)
	}

	// Row-level security: inside acme's transaction the table holds acme's
	// row alone, even asked without a tenant filter.
	var ids []int64
	err = db.InTenant(ctx, acme.TenantID, func(tx pgx.Tx) error {
		rows, err := tx.Query(ctx, `SELECT tenant_id FROM tenant_limits`)
		if err != nil {
			return err
		}
		ids, err = pgx.CollectRows(rows, pgx.RowTo[int64])
		return err
	})
	if err != nil || len(ids) != 1 || ids[0] != acme.TenantID {
		t.Fatalf("unfiltered read in acme's transaction saw tenants %v (err %v), want only %d", ids, err, acme.TenantID)
	}

	had, err := db.ResetTenantLimits(ctx, acme.TenantID)
	if err != nil || !had {
		t.Fatalf("reset: had=%v err=%v", had, err)
	}
	if _, err := db.TenantLimits(ctx, acme.TenantID); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("after reset: %v, want ErrNotFound", err)
	}
	if had, err := db.ResetTenantLimits(ctx, acme.TenantID); err != nil || had {
		t.Fatalf("second reset: had=%v err=%v", had, err)
	}
	if l, err := db.TenantLimits(ctx, globex.TenantID); err != nil || l.RequestsPerMinute != 7 {
		t.Fatalf("acme's reset touched globex: %+v %v", l, err)
	}
}
