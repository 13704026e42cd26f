package migrations_test

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5"
)

// seedConversation makes a tenant named team with a memory user alice and
// one conversation of hers, and returns their ids.
func seedConversation(ctx context.Context, t *testing.T, conn *pgx.Conn, team string) (tenant, user, conv int64) {
	t.Helper()
	if err := conn.QueryRow(ctx, `INSERT INTO tenants (name) VALUES ($1) RETURNING id`, team).Scan(&tenant); err != nil {
		t.Fatal(err)
	}
	if err := conn.QueryRow(ctx, `INSERT INTO memory_users (tenant_id, name) VALUES ($1, 'alice') RETURNING id`, tenant).Scan(&user); err != nil {
		t.Fatal(err)
	}
	if err := conn.QueryRow(ctx, `INSERT INTO conversations (tenant_id, user_id, ext_key) VALUES ($1, $2, 'c') RETURNING id`,
		tenant, user).Scan(&conv); err != nil {
		t.Fatal(err)
	}
	return tenant, user, conv
}
