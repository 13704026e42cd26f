package migrations_test

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/perpetuity/perpetuity/migrations"
	"github.com/perpetuity/perpetuity/migrations/dbtest"
)

// TestUpDownUp walks every step down to zero and up again, so each down file
// is exercised and leaves nothing behind that the next up would trip on.
func TestUpDownUp(t *testing.T) {
	t.Parallel()
	url := dbtest.New(t)
	latest, err := migrations.Latest()
	if err != nil {
		t.Fatal(err)
	}
	if v, dirty, err := migrations.Version(url); err != nil || dirty || v != latest {
		t.Fatalf("fresh database at version %d dirty=%v err=%v, want %d", v, dirty, err, latest)
	}
	// One step at a time, so every down file runs on its own. Versions are
	// walked as applied, not counted down: parallel branches leave gaps in
	// the numbering until they merge.
	for {
		v, _, err := migrations.Version(url)
		if err != nil {
			t.Fatal(err)
		}
		if v == 0 {
			break
		}
		if err := migrations.Down(url, 1); err != nil {
			t.Fatalf("down from %d: %v", v, err)
		}
	}
	if n := countTables(t, url); n != 1 { // only schema_migrations remains
		t.Fatalf("after down to zero %d tables remain, want only schema_migrations", n)
	}
	// 000005's down leaves no function, policy or privilege of the
	// application role behind in this database. The role itself is
	// cluster-wide and stays while other databases (the template this one
	// was cloned from) still grant it privileges: the down must not fail on
	// that.
	for _, q := range []string{
		`SELECT count(*) FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace WHERE n.nspname = 'public'`,
		`SELECT count(*) FROM pg_policy`,
		`SELECT count(*) FROM pg_default_acl`,
		`SELECT count(*) FROM pg_class WHERE relrowsecurity OR relforcerowsecurity`,
		`SELECT count(*) FROM information_schema.role_table_grants WHERE grantee = 'perpetuity_app'`,
		`SELECT count(*) FROM pg_namespace n, aclexplode(n.nspacl) a
			WHERE n.nspname = 'public' AND a.grantee = 'perpetuity_app'::regrole`,
	} {
		if n := count(t, url, q); n != 0 {
			t.Errorf("after down to zero: %s = %d, want 0", q, n)
		}
	}
	if n := count(t, url, `SELECT count(*) FROM pg_roles WHERE rolname = 'perpetuity_app'`); n != 1 {
		t.Errorf("perpetuity_app dropped while the template database still grants it privileges")
	}
	if err := migrations.Up(url); err != nil {
		t.Fatalf("up again: %v", err)
	}
	if v, _, _ := migrations.Version(url); v != latest {
		t.Fatalf("after up again at %d, want %d", v, latest)
	}
}

func countTables(t *testing.T, url string) int {
	t.Helper()
	return count(t, url, "SELECT count(*) FROM information_schema.tables WHERE table_schema = 'public'")
}

func count(t *testing.T, url, sql string) int {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var n int
	if err := conn.QueryRow(ctx, sql).Scan(&n); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
	return n
}
