package store_test

import (
	"context"
	"errors"
	"net/url"
	"slices"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/perpetuity/perpetuity/memory/store"
	"github.com/perpetuity/perpetuity/memory/store/storetest"
	"github.com/perpetuity/perpetuity/migrations/dbtest"
)

func tableNames(rs []storetest.TableRLS) []string {
	out := make([]string, len(rs))
	for i, r := range rs {
		out[i] = r.Table
	}
	return out
}

// TestRLSCatalog: every table with a tenant_id column, and tenants, has
// row-level security enabled and forced, with the tenant policy for the
// application role.
func TestRLSCatalog(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	rs, err := storetest.Catalog(ctx, dbtest.Owner(t, dbtest.Shared(t)))
	if err != nil {
		t.Fatal(err)
	}
	names := tableNames(rs)
	for _, want := range storetest.Seeded {
		if !slices.Contains(names, want) {
			t.Errorf("the catalog query misses tenant table %s (found %v)", want, names)
		}
	}
	for _, r := range rs {
		if !r.OK() {
			t.Errorf("%s: row level security enabled=%v forced=%v tenant_isolation policy=%v", r.Table, r.Enabled, r.Forced, r.Isolation)
		}
	}
}

// TestRLSCatalogCatchesANewTable: a tenant table created without row-level
// security (as a careless migration would) fails the catalog check, and
// passes once it is protected the way 000005 protects every table.
func TestRLSCatalogCatchesANewTable(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	owner := dbtest.Owner(t, dbtest.New(t))
	find := func() storetest.TableRLS {
		t.Helper()
		rs, err := storetest.Catalog(ctx, owner)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range rs {
			if r.Table == "future_notes" {
				return r
			}
		}
		t.Fatal("the catalog does not list a new table with a tenant_id column")
		return storetest.TableRLS{}
	}
	if _, err := owner.Exec(ctx, `CREATE TABLE future_notes (tenant_id bigint NOT NULL, body text)`); err != nil {
		t.Fatal(err)
	}
	if r := find(); r.OK() {
		t.Fatalf("an unprotected table passes: %+v", r)
	}
	for _, q := range []string{
		`ALTER TABLE future_notes ENABLE ROW LEVEL SECURITY`,
		`ALTER TABLE future_notes FORCE ROW LEVEL SECURITY`,
		`CREATE POLICY tenant_isolation ON future_notes TO perpetuity_app USING (tenant_id = app_tenant()) WITH CHECK (tenant_id = app_tenant())`,
	} {
		if r := find(); r.OK() {
			t.Fatalf("a table passes before %q: %+v", q, r)
		}
		if _, err := owner.Exec(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	if r := find(); !r.OK() {
		t.Fatalf("a protected table fails: %+v", r)
	}
}

// TestAppRoleCannotBypass: the pool acts as perpetuity_app, which is no
// superuser and may not bypass row-level security; a pool acting as a role
// that may is refused.
func TestAppRoleCannotBypass(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := openDB(t)
	r, err := storetest.AppRole(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	if r.Name != store.AppRole || r.Super || r.BypassRLS {
		t.Fatalf("the pool acts as %+v, want %s without superuser or bypassrls", r, store.AppRole)
	}
	// Without the role switch the pool is the URL's role: refused exactly
	// when that role bypasses row-level security.
	owner := ownerOf(t, db)
	var bypass bool
	if err := owner.QueryRow(ctx, `SELECT rolsuper OR rolbypassrls FROM pg_roles WHERE rolname = current_user`).Scan(&bypass); err != nil {
		t.Fatal(err)
	}
	raw, err := store.OpenWithoutRole(ctx, dbtest.Shared(t))
	if err == nil {
		raw.Close()
	}
	if got := errors.Is(err, store.ErrBypassesRLS); got != bypass {
		t.Fatalf("opening as a role with bypass=%v: %v", bypass, err)
	}
}

// TestRLSHidesOtherTenants: through the application's pool, with no tenant
// set no tenant row is visible while rows exist; acting for A it sees all
// of A's rows and none of B's, and cannot write B's.
func TestRLSHidesOtherTenants(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := openDB(t)
	owner := ownerOf(t, db)
	a, b, err := storetest.Seed(ctx, db, t.Name())
	if err != nil {
		t.Fatal(err)
	}
	rs, err := storetest.Catalog(ctx, owner)
	if err != nil {
		t.Fatal(err)
	}
	seen, err := storetest.Visibility(ctx, db, owner, tableNames(rs), a.TenantID, b.TenantID)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range seen {
		if slices.Contains(storetest.Seeded, s.Table) && (s.OwnerA == 0 || s.OwnerB == 0) {
			t.Errorf("%s: seeded %d rows of A and %d of B, want some of each", s.Table, s.OwnerA, s.OwnerB)
		}
		if !s.Isolated() {
			t.Errorf("%s: no tenant saw %d rows; as A saw %d of A's %d rows and %d of B's", s.Table, s.NoTenant, s.AsA, s.OwnerA, s.BInA)
		}
	}
	for _, w := range storetest.CrossWrites(ctx, db, a.TenantID, b.TenantID) {
		if !w.Held() {
			t.Errorf("acting for A, %s: refused=%v err=%v rows=%d", w.What, w.Refused, w.Err, w.Rows)
		}
	}
}

// TestTenantSettingIsTransactionLocal: after an InTenant transaction ends,
// committed or not, the same pooled connection acts for no tenant.
func TestTenantSettingIsTransactionLocal(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	u, err := url.Parse(dbtest.Shared(t))
	if err != nil {
		t.Fatal(err)
	}
	q := u.Query()
	q.Set("pool_max_conns", "1") // one connection: every statement below runs on it
	u.RawQuery = q.Encode()
	db, err := store.Open(ctx, u.String())
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	nt, err := db.CreateTenantWith(ctx, "local", "alice", store.TenantOptions{Dict: 1})
	if err != nil {
		t.Fatal(err)
	}
	const stateSQL = `SELECT pg_backend_pid(), coalesce(current_setting('app.tenant_id', true), '<unset>'),
		app_tenant() IS NULL, (SELECT count(*) FROM memory_users)`
	type state struct {
		pid     int32
		setting string
		none    bool
		users   int64
	}
	read := func(q interface {
		QueryRow(context.Context, string, ...any) pgx.Row
	}) state {
		t.Helper()
		var s state
		if err := q.QueryRow(ctx, stateSQL).Scan(&s.pid, &s.setting, &s.none, &s.users); err != nil {
			t.Fatal(err)
		}
		return s
	}
	errAbort := errors.New("abort")
	for _, end := range []struct {
		name string
		run  func(fn func(tx pgx.Tx) error) error
		fail bool
	}{
		{"commit", func(fn func(tx pgx.Tx) error) error { return db.InTenant(ctx, nt.TenantID, fn) }, false},
		{"rollback", func(fn func(tx pgx.Tx) error) error { return db.InTenant(ctx, nt.TenantID, fn) }, true},
		{"read-only", func(fn func(tx pgx.Tx) error) error { return db.InTenantRead(ctx, nt.TenantID, fn) }, false},
	} {
		var inside state
		err := end.run(func(tx pgx.Tx) error {
			inside = read(tx)
			if end.fail {
				return errAbort
			}
			return nil
		})
		if (err != nil) != end.fail {
			t.Fatalf("%s: %v", end.name, err)
		}
		after := read(db.Pool)
		if inside.none || inside.users != 1 {
			t.Fatalf("%s: inside the transaction %+v, want the tenant's one user", end.name, inside)
		}
		if after.pid != inside.pid {
			t.Fatalf("%s: another connection (%d, %d); the check needs the same one", end.name, inside.pid, after.pid)
		}
		if !after.none || after.users != 0 || (after.setting != "" && after.setting != "<unset>") {
			t.Fatalf("%s: after the transaction the connection still acts for a tenant: %+v", end.name, after)
		}
	}
	// The hot path's pipelined reads set the tenant in the batch's implicit
	// transaction: the head is found (the tenant held), and nothing after.
	if _, err := db.ReadHead(ctx, nt.TenantID); err != nil {
		t.Fatalf("pipelined read of the head: %v", err)
	}
	if after := read(db.Pool); !after.none || after.users != 0 {
		t.Fatalf("after a pipelined read the connection still acts for a tenant: %+v", after)
	}
}
