package migrations_test

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/perpetuity/perpetuity/migrations"
	"github.com/perpetuity/perpetuity/migrations/dbtest"
)

// keyLifeVersion is the migration that gives keys an end and limits.
const keyLifeVersion = 18

// TestKeyLifecycleMigration: keys from before 000018 never end and have
// the tenant's limits; a negative limit is refused. Going down fails
// closed: a live key with an end (expiring, or a rotated key in its
// grace) is revoked rather than left to work for ever, and keys without
// one keep working.
func TestKeyLifecycleMigration(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	url := dbtest.New(t)
	downTo(t, url, keyLifeVersion-1)
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var tenant, user int64
	if err := conn.QueryRow(ctx, `INSERT INTO tenants (name) VALUES ('life') RETURNING id`).Scan(&tenant); err != nil {
		t.Fatal(err)
	}
	if err := conn.QueryRow(ctx, `INSERT INTO memory_users (tenant_id, name) VALUES ($1, 'alice') RETURNING id`, tenant).Scan(&user); err != nil {
		t.Fatal(err)
	}
	insertKey := `INSERT INTO api_keys (tenant_id, user_id, name, prefix, key_hash) VALUES ($1, $2, $3, 'ppk_x', $4)`
	for _, name := range []string{"old", "ending", "rotated"} {
		if _, err := conn.Exec(ctx, insertKey, tenant, user, name, []byte(name+"-hash")); err != nil {
			t.Fatal(err)
		}
	}
	if err := migrations.Up(url); err != nil {
		t.Fatal(err)
	}
	var ends int64
	if err := conn.QueryRow(ctx, `SELECT count(*) FROM api_keys WHERE tenant_id = $1 AND (expires_at IS NOT NULL OR requests_per_minute IS NOT NULL)`, tenant).Scan(&ends); err != nil || ends != 0 {
		t.Fatalf("keys from before 000018 with an end or limits: %d %v", ends, err)
	}
	if _, err := conn.Exec(ctx, `UPDATE api_keys SET tokens_per_day = -1 WHERE tenant_id = $1 AND name = 'old'`, tenant); err == nil {
		t.Error("a negative limit was accepted")
	}
	if _, err := conn.Exec(ctx, `UPDATE api_keys SET expires_at = now() + interval '1 day' WHERE tenant_id = $1 AND name = 'ending'`, tenant); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Exec(ctx, `UPDATE api_keys SET expires_at = now() + interval '1 hour', rotated_at = now(), requests_per_minute = 5 WHERE tenant_id = $1 AND name = 'rotated'`, tenant); err != nil {
		t.Fatal(err)
	}

	downTo(t, url, keyLifeVersion-1)
	for _, tc := range []struct {
		name    string
		revoked bool
	}{{"old", false}, {"ending", true}, {"rotated", true}} {
		var revoked bool
		if err := conn.QueryRow(ctx, `SELECT revoked_at IS NOT NULL FROM api_keys WHERE tenant_id = $1 AND name = $2`, tenant, tc.name).Scan(&revoked); err != nil {
			t.Fatal(err)
		}
		if revoked != tc.revoked {
			t.Errorf("after down, key %s revoked %v, want %v", tc.name, revoked, tc.revoked)
		}
	}
	var cols int64
	if err := conn.QueryRow(ctx, `SELECT count(*) FROM information_schema.columns WHERE table_name = 'api_keys'
		AND column_name IN ('expires_at', 'rotated_at', 'requests_per_minute', 'tokens_per_minute', 'tokens_per_day')`).Scan(&cols); err != nil || cols != 0 {
		t.Fatalf("after down, %d lifecycle columns remain (%v)", cols, err)
	}
	if err := migrations.Up(url); err != nil {
		t.Fatalf("up again: %v", err)
	}
}
