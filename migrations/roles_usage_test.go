package migrations_test

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/perpetuity/perpetuity/migrations"
	"github.com/perpetuity/perpetuity/migrations/dbtest"
)

// rolesUsageVersion is the migration of the reader role and requests.key_id
// (issue 18).
const rolesUsageVersion = 17

// TestRolesUsageMigration: 000017 turns every member (account and pending
// invitation) into a reader, so nobody gains key rights; a request's key
// must be its own tenant's and goes to NULL with the key; going down gives
// readers their old role back and drops the column.
func TestRolesUsageMigration(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	url := dbtest.New(t)
	// Down to just before 000017, to have members of the old kind.
	downTo(t, url, rolesUsageVersion-1)
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	exec := func(q string, args ...any) {
		t.Helper()
		if _, err := conn.Exec(ctx, q, args...); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	scalar := func(q string, args ...any) int64 {
		t.Helper()
		var n int64
		if err := conn.QueryRow(ctx, q, args...).Scan(&n); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
		return n
	}
	tenant := scalar(`INSERT INTO tenants (name) VALUES ('roles') RETURNING id`)
	other := scalar(`INSERT INTO tenants (name) VALUES ('roles other') RETURNING id`)
	exec(`INSERT INTO console_accounts (tenant_id, email, password_hash, role) VALUES
		($1, 'admin@roles.test', 'x', 'tenant_admin'), ($1, 'member@roles.test', 'x', 'tenant_member')`, tenant)
	exec(`INSERT INTO console_invites (tenant_id, email, role, token_hash, invited_by, expires_at)
		VALUES ($1, 'invited@roles.test', 'tenant_member', 'tok', NULL, now() + interval '1 day')`, tenant)
	if _, err := conn.Exec(ctx, `INSERT INTO console_accounts (tenant_id, email, password_hash, role)
		VALUES ($1, 'early@roles.test', 'x', 'tenant_reader')`, tenant); err == nil {
		t.Fatal("tenant_reader accepted before 000017")
	}

	if err := migrations.Up(url); err != nil {
		t.Fatal(err)
	}
	roles := func() map[string]string {
		t.Helper()
		rows, err := conn.Query(ctx, `SELECT email, role FROM console_accounts WHERE tenant_id = $1
			UNION ALL SELECT email, role FROM console_invites WHERE tenant_id = $1`, tenant)
		if err != nil {
			t.Fatal(err)
		}
		type er struct{ Email, Role string }
		got, err := pgx.CollectRows(rows, pgx.RowToStructByPos[er])
		if err != nil {
			t.Fatal(err)
		}
		m := map[string]string{}
		for _, r := range got {
			m[r.Email] = r.Role
		}
		return m
	}
	want := map[string]string{"admin@roles.test": "tenant_admin", "member@roles.test": "tenant_reader", "invited@roles.test": "tenant_reader"}
	for e, r := range want {
		if got := roles()[e]; got != r {
			t.Errorf("after up, %s is %q, want %q", e, got, r)
		}
	}
	// A member made now is the new kind and stays one.
	exec(`INSERT INTO console_accounts (tenant_id, email, password_hash, role) VALUES ($1, 'keys@roles.test', 'x', 'tenant_member')`, tenant)

	user := scalar(`INSERT INTO memory_users (tenant_id, name) VALUES ($1, 'ada') RETURNING id`, tenant)
	key := scalar(`INSERT INTO api_keys (tenant_id, user_id, prefix, key_hash) VALUES ($1, $2, 'pp_x', 'h') RETURNING id`, tenant, user)
	exec(`INSERT INTO requests (tenant_id, request_id, user_id, dialect, provider, status, key_id)
		VALUES ($1, 'r1', $2, 'openai', 'openai', 200, $3)`, tenant, user, key)
	if _, err := conn.Exec(ctx, `INSERT INTO requests (tenant_id, request_id, dialect, provider, status, key_id)
		VALUES ($1, 'r2', 'openai', 'openai', 200, $2)`, other, key); err == nil {
		t.Error("a request recorded another tenant's key")
	}
	exec(`DELETE FROM api_keys WHERE tenant_id = $1 AND id = $2`, tenant, key)
	if n := scalar(`SELECT count(*) FROM requests WHERE tenant_id = $1 AND key_id IS NULL`, tenant); n != 1 {
		t.Errorf("after its key went, %d requests without a key, want the 1 kept", n)
	}

	// Down through 000017 (later migrations come off first).
	downTo(t, url, rolesUsageVersion-1)
	want["member@roles.test"], want["invited@roles.test"], want["keys@roles.test"] = "tenant_member", "tenant_member", "tenant_member"
	for e, r := range want {
		if got := roles()[e]; got != r {
			t.Errorf("after down, %s is %q, want %q", e, got, r)
		}
	}
	// The member made after the up would read content under the older
	// console: disabled. The readers, members again, are not.
	for email, disabled := range map[string]bool{"keys@roles.test": true, "member@roles.test": false, "admin@roles.test": false} {
		if n := scalar(`SELECT count(*) FROM console_accounts WHERE tenant_id = $1 AND email = $2 AND disabled_at IS NOT NULL`, tenant, email); (n == 1) != disabled {
			t.Errorf("after down, %s disabled: %v, want %v", email, n == 1, disabled)
		}
	}
	if n := scalar(`SELECT count(*) FROM information_schema.columns WHERE table_name = 'requests' AND column_name = 'key_id'`); n != 0 {
		t.Error("requests.key_id survived the down")
	}
	if n := scalar(`SELECT count(*) FROM requests WHERE tenant_id = $1`, tenant); n != 1 {
		t.Errorf("the down lost requests: %d left", n)
	}
}
