package migrations_test

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/perpetuity/perpetuity/migrations"
	"github.com/perpetuity/perpetuity/migrations/dbtest"
)

// inviteRevealVersion lets invitation links be one-time reveals.
const inviteRevealVersion = 21

// TestInviteRevealMigration: 000021 admits the invite kind; going down
// drops the invitation reveals (and only those) and the old check holds
// again; up again admits it again.
func TestInviteRevealMigration(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	url := dbtest.New(t)
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var tenant, account int64
	if err := conn.QueryRow(ctx, `INSERT INTO tenants (name) VALUES ('invites') RETURNING id`).Scan(&tenant); err != nil {
		t.Fatal(err)
	}
	if err := conn.QueryRow(ctx, `INSERT INTO console_accounts (tenant_id, email, password_hash, role)
		VALUES ($1, 'a@invites.test', 'h', 'tenant_admin') RETURNING id`, tenant).Scan(&account); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Exec(ctx, `INSERT INTO console_sessions (token_hash, account_id, tenant_id, csrf_token, expires_at)
		VALUES ('s1', $1, $2, 'c', now() + interval '1 hour')`, account, tenant); err != nil {
		t.Fatal(err)
	}
	reveal := func(kind string) error {
		_, err := conn.Exec(ctx, `INSERT INTO console_reveals (tenant_id, session_hash, kind, sealed, expires_at)
			VALUES ($1, 's1', $2, 'x', now() + interval '1 minute')`, tenant, kind)
		return err
	}
	count := func(q string) int {
		t.Helper()
		var n int
		if err := conn.QueryRow(ctx, q).Scan(&n); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
		return n
	}
	for _, kind := range []string{"invite", "key"} {
		if err := reveal(kind); err != nil {
			t.Fatalf("a %s reveal: %v", kind, err)
		}
	}
	if err := reveal("other"); err == nil {
		t.Error("an unknown kind was admitted")
	}

	downTo(t, url, inviteRevealVersion-1)
	if n := count(`SELECT count(*) FROM console_reveals WHERE kind = 'invite'`); n != 0 {
		t.Errorf("after down: %d invitation reveals", n)
	}
	if n := count(`SELECT count(*) FROM console_reveals WHERE kind = 'key'`); n != 1 {
		t.Errorf("after down: %d key reveals, want the one", n)
	}
	if err := reveal("invite"); err == nil {
		t.Error("after down: an invitation reveal was admitted")
	}
	if err := migrations.Up(url); err != nil {
		t.Fatalf("up again: %v", err)
	}
	if err := reveal("invite"); err != nil {
		t.Errorf("up again: %v", err)
	}
}
