package migrations_test

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/perpetuity/perpetuity/migrations"
	"github.com/perpetuity/perpetuity/migrations/dbtest"
)

// keyScopeVersion is the migration that gives keys a scope.
const keyScopeVersion = 9

// downTo steps down one migration at a time until the schema is at v.
func downTo(t *testing.T, url string, v uint) {
	t.Helper()
	for {
		cur, dirty, err := migrations.Version(url)
		if err != nil || dirty {
			t.Fatalf("version %d dirty=%v: %v", cur, dirty, err)
		}
		if cur <= v {
			return
		}
		if err := migrations.Down(url, 1); err != nil {
			t.Fatalf("down from %d: %v", cur, err)
		}
	}
}

// TestKeyScopeMigration: keys that exist when 000009 runs stay tenant-wide
// (deployments keep working), keys made afterwards default to pinned, and
// the key lookup returns the scope to the application role alone. Going
// down fails closed: pinned keys are revoked rather than widened, and
// tenant-wide keys keep resolving through the old lookup.
func TestKeyScopeMigration(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	url := dbtest.New(t)
	downTo(t, url, keyScopeVersion-1)
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var tenant, user int64
	if err := conn.QueryRow(ctx, `INSERT INTO tenants (name) VALUES ('scope') RETURNING id`).Scan(&tenant); err != nil {
		t.Fatal(err)
	}
	if err := conn.QueryRow(ctx, `INSERT INTO memory_users (tenant_id, name) VALUES ($1, 'alice') RETURNING id`, tenant).Scan(&user); err != nil {
		t.Fatal(err)
	}
	insertKey := `INSERT INTO api_keys (tenant_id, user_id, name, prefix, key_hash) VALUES ($1, $2, $3, 'ppk_x', $4)`
	if _, err := conn.Exec(ctx, insertKey, tenant, user, "old", []byte("old-key-hash")); err != nil {
		t.Fatal(err)
	}

	if err := migrations.Up(url); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Exec(ctx, insertKey, tenant, user, "new", []byte("new-key-hash")); err != nil {
		t.Fatal(err)
	}
	// Since 000020 a key is found through its lookup row, which the store
	// writes with the key.
	if _, err := conn.Exec(ctx, `INSERT INTO key_lookup (key_hash, tenant_id, key_id)
		SELECT key_hash, tenant_id, id FROM api_keys WHERE tenant_id = $1 AND name = 'new'`, tenant); err != nil {
		t.Fatal(err)
	}
	scopeOf := func(name string) string {
		var s string
		if err := conn.QueryRow(ctx, `SELECT scope FROM api_keys WHERE tenant_id = $1 AND name = $2`, tenant, name).Scan(&s); err != nil {
			t.Fatal(err)
		}
		return s
	}
	if got := scopeOf("old"); got != "tenant" {
		t.Errorf("a key from before 000009 has scope %q, want tenant", got)
	}
	if got := scopeOf("new"); got != "user" {
		t.Errorf("a key inserted without a scope has %q, want user", got)
	}
	if _, err := conn.Exec(ctx, `UPDATE api_keys SET scope = 'everyone' WHERE tenant_id = $1 AND name = 'new'`, tenant); err == nil {
		t.Error("a scope other than user or tenant was accepted")
	}
	// The lookup runs as the application role, which row-level security
	// confines: only the function reaches the key before the tenant is known.
	tx, err := conn.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(ctx, `SET LOCAL ROLE perpetuity_app`); err != nil {
		t.Fatal(err)
	}
	var scope string
	if err := tx.QueryRow(ctx, `SELECT scope FROM resolve_api_key($1)`, []byte("new-key-hash")).Scan(&scope); err != nil || scope != "user" {
		t.Errorf("resolve_api_key as the application role: scope %q, %v", scope, err)
	}
	_ = tx.Rollback(ctx)
	var public int
	if err := conn.QueryRow(ctx, `SELECT count(*) FROM pg_proc p, aclexplode(p.proacl) a
		WHERE p.proname = 'resolve_api_key' AND a.grantee = 0`).Scan(&public); err != nil || public != 0 {
		t.Errorf("resolve_api_key executable by PUBLIC (%d grants, %v)", public, err)
	}

	downTo(t, url, keyScopeVersion-1)
	var live []string
	rows, err := conn.Query(ctx, `SELECT k.name FROM resolve_api_key($1) r JOIN api_keys k ON k.tenant_id = r.tenant_id AND k.id = r.key_id
		UNION ALL SELECT k.name FROM resolve_api_key($2) r JOIN api_keys k ON k.tenant_id = r.tenant_id AND k.id = r.key_id`,
		[]byte("old-key-hash"), []byte("new-key-hash"))
	if err != nil {
		t.Fatal(err)
	}
	if live, err = pgx.CollectRows(rows, pgx.RowTo[string]); err != nil {
		t.Fatal(err)
	}
	if len(live) != 1 || live[0] != "old" {
		t.Errorf("after going down the live keys are %v, want only the tenant-wide one (old)", live)
	}
	var cols int
	if err := conn.QueryRow(ctx, `SELECT count(*) FROM information_schema.columns WHERE table_name = 'api_keys' AND column_name = 'scope'`).Scan(&cols); err != nil || cols != 0 {
		t.Errorf("api_keys.scope survives the down (%d, %v)", cols, err)
	}
	if err := migrations.Up(url); err != nil {
		t.Fatalf("up again: %v", err)
	}
}
