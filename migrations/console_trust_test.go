package migrations_test

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/perpetuity/perpetuity/migrations"
	"github.com/perpetuity/perpetuity/migrations/dbtest"
)

// consoleTrustVersion is the migration of one-time reveals and password
// reset links (issue 18).
const consoleTrustVersion = 15

// TestConsoleTrustMigration: 000015's reset functions are the
// application's alone, a reveal goes with its session (row-level security
// notwithstanding), a used link cannot be used again, and going down
// drops exactly what it added, leaving accounts and sessions as they were.
func TestConsoleTrustMigration(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	url := dbtest.New(t)
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var tenant, account int64
	if err := conn.QueryRow(ctx, `INSERT INTO tenants (name) VALUES ('trust') RETURNING id`).Scan(&tenant); err != nil {
		t.Fatal(err)
	}
	if err := conn.QueryRow(ctx, `INSERT INTO console_accounts (tenant_id, email, password_hash, role)
		VALUES ($1, 'a@trust.test', 'old', 'tenant_admin') RETURNING id`, tenant).Scan(&account); err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"s1", "s2"} {
		if _, err := conn.Exec(ctx, `INSERT INTO console_sessions (token_hash, account_id, tenant_id, csrf_token, expires_at)
			VALUES ($1, $2, $3, 'c', now() + interval '1 hour')`, []byte(s), account, tenant); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := conn.Exec(ctx, `INSERT INTO console_reveals (tenant_id, session_hash, kind, sealed, expires_at)
		VALUES ($1, 's1', 'key', 'x', now() + interval '1 minute')`, tenant); err != nil {
		t.Fatal(err)
	}
	count := func(q string, args ...any) int {
		t.Helper()
		var n int
		if err := conn.QueryRow(ctx, q, args...).Scan(&n); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
		return n
	}
	if n := count(`SELECT count(*) FROM information_schema.routine_privileges
		WHERE routine_name LIKE 'console_reset_%' AND grantee = 'PUBLIC'`); n != 0 {
		t.Errorf("%d reset functions are executable by PUBLIC", n)
	}
	if n := count(`SELECT count(*) FROM information_schema.routine_privileges
		WHERE routine_name LIKE 'console_reset_%' AND grantee = 'perpetuity_app' AND privilege_type = 'EXECUTE'`); n != 3 {
		t.Errorf("the application may execute %d of the 3 reset functions", n)
	}
	if _, err := conn.Exec(ctx, `SELECT * FROM console_reset_issue('a@trust.test', 'tok', 60, 'test')`); err != nil {
		t.Fatal(err)
	}
	if n := count(`SELECT count(*) FROM console_reset_use('tok', 'new')`); n != 1 {
		t.Fatalf("using a live link: %d rows", n)
	}
	if n := count(`SELECT count(*) FROM console_reset_use('tok', 'newer')`); n != 0 {
		t.Errorf("a used link worked again")
	}
	if n := count(`SELECT count(*) FROM console_accounts WHERE id = $1 AND password_hash = 'new'`, account); n != 1 {
		t.Error("the link did not set the password")
	}
	if n := count(`SELECT count(*) FROM console_sessions WHERE account_id = $1`, account); n != 0 {
		t.Errorf("%d sessions survived the reset", n)
	}
	if n := count(`SELECT count(*) FROM console_reveals`); n != 0 {
		t.Errorf("a reveal outlived its session")
	}
	if _, err := conn.Exec(ctx, `INSERT INTO console_sessions (token_hash, account_id, tenant_id, csrf_token, expires_at)
		VALUES ('s3', $1, $2, 'c', now() + interval '1 hour')`, account, tenant); err != nil {
		t.Fatal(err)
	}

	downTo(t, url, consoleTrustVersion-1)
	for _, q := range []string{
		`SELECT count(*) FROM information_schema.tables WHERE table_name IN ('console_reveals', 'console_password_resets')`,
		`SELECT count(*) FROM pg_proc WHERE proname LIKE 'console_reset_%'`,
	} {
		if n := count(q); n != 0 {
			t.Errorf("after down: %s = %d", q, n)
		}
	}
	if n := count(`SELECT count(*) FROM console_sessions WHERE account_id = $1`, account); n != 1 {
		t.Errorf("down changed the sessions: %d", n)
	}
	if err := migrations.Up(url); err != nil {
		t.Fatalf("up again: %v", err)
	}
}
