// Package rls measures issue 9's item 5: PostgreSQL itself keeps tenants
// apart. On a fresh database it checks the catalog (every tenant table has
// row-level security enabled and forced, with the tenant policy), the role
// the application's pool acts as (it cannot bypass row-level security), and
// what that pool sees of two seeded tenants with no tenant set and acting
// for one of them (memory/store/storetest holds the checks; memory/store's
// tests run them too).
package rls

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/perpetuity/perpetuity/e2e/reliability/figure"
	"github.com/perpetuity/perpetuity/memory/store"
	"github.com/perpetuity/perpetuity/memory/store/storetest"
	"github.com/perpetuity/perpetuity/migrations/dbtest"
)

func TestRowLevelSecurity(t *testing.T) {
	ctx := context.Background()
	url := dbtest.New(t)
	owner := dbtest.Owner(t, url)
	db, err := store.Open(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()

	// (a) The catalog.
	tables, err := storetest.Catalog(ctx, owner)
	if err != nil {
		t.Fatal(err)
	}
	var names, unprotected []string
	for _, r := range tables {
		names = append(names, r.Table)
		if !r.OK() {
			unprotected = append(unprotected, fmt.Sprintf("%s (enabled=%v forced=%v policy=%v)", r.Table, r.Enabled, r.Forced, r.Isolation))
		}
	}

	// (b) The application's role.
	role, err := storetest.AppRole(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	bypass := role.Super || role.BypassRLS

	// (c) What the application's pool sees and may write.
	a, b, err := storetest.Seed(ctx, db, "rls")
	if err != nil {
		t.Fatal(err)
	}
	seen, err := storetest.Visibility(ctx, db, owner, names, a.TenantID, b.TenantID)
	if err != nil {
		t.Fatal(err)
	}
	var rows, noTenant, bInA, withRows int64
	var leaks []string
	for _, s := range seen {
		rows += s.OwnerA + s.OwnerB
		noTenant += s.NoTenant
		bInA += s.BInA
		if s.OwnerA > 0 && s.OwnerB > 0 {
			withRows++
		} else if slices.Contains(storetest.Seeded, s.Table) {
			leaks = append(leaks, fmt.Sprintf("%s (seeded no rows: %d of A, %d of B)", s.Table, s.OwnerA, s.OwnerB))
		}
		if !s.Isolated() {
			leaks = append(leaks, fmt.Sprintf("%s (no tenant %d, B as A %d, A as A %d of %d)", s.Table, s.NoTenant, s.BInA, s.AsA, s.OwnerA))
		}
	}
	writes := storetest.CrossWrites(ctx, db, a.TenantID, b.TenantID)
	var held int
	var breached []string
	for _, w := range writes {
		if w.Held() {
			held++
		} else {
			breached = append(breached, fmt.Sprintf("%s (refused=%v rows=%d err=%v)", w.What, w.Refused, w.Rows, w.Err))
		}
	}

	protected := len(tables) - len(unprotected)
	pass := len(tables) > 0 && len(unprotected) == 0 && !bypass && role.Name == store.AppRole &&
		noTenant == 0 && bInA == 0 && len(leaks) == 0 && held == len(writes)
	details := fmt.Sprintf("Fresh migrated database. Catalog: every public table with a tenant_id column, and tenants "+
		"(%s), read from pg_class and pg_policies. The application pool (store.Open) acts as %s: superuser=%v, bypassrls=%v. "+
		"Two tenants seeded through the store as serving writes them; %d of %d tables held rows of both (%d rows; "+
		"tables added after migration 000005 are checked on the rows they hold). "+
		"Without a tenant the pool counted %d rows over all tables; acting for A it counted %d of B's rows. "+
		"Acting for A, %d of %d writes to B's rows (inserts into B, a platform audit row, moving A's rows into B, "+
		"updating, deleting, renaming B) were refused by the policy or changed nothing.",
		strings.Join(names, ", "), role.Name, role.Super, role.BypassRLS, withRows, len(tables), rows, noTenant, bInA, held, len(writes))
	if len(unprotected)+len(leaks)+len(breached) > 0 {
		details += " Failures: " + strings.Join(append(append(unprotected, leaks...), breached...), "; ") + "."
	}
	figure.Record(t, figure.Figure{
		Item: 5,
		Name: "Row-level security",
		Figure: fmt.Sprintf("%d/%d tenant tables RLS enabled+forced with the tenant policy, role %s bypass=%v, "+
			"rows seen without tenant = %d (of %d), other tenant's rows seen = %d, cross-tenant writes held %d/%d",
			protected, len(tables), role.Name, bypass, noTenant, rows, bInA, held, len(writes)),
		Target:  "every tenant table RLS enabled and forced; 0 rows without tenant",
		Pass:    pass,
		Details: details,
	})
	if !pass {
		t.Fatal("row-level security does not hold; see the figure above")
	}
}
