package migrations_test

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/perpetuity/perpetuity/migrations"
	"github.com/perpetuity/perpetuity/migrations/dbtest"
)

// bindingsVersion is the migration that adds the binding log.
const bindingsVersion = 12

// TestBindingsMigration: what was bound before the log existed (users'
// display names, conversations' titles, stored speakers) is in it after
// 000012, so every label still resolves; going down keeps the labels.
func TestBindingsMigration(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	url := dbtest.New(t)
	downTo(t, url, bindingsVersion-1)
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var tenant, user, conv int64
	for _, q := range []struct {
		sql  string
		args []any
		dst  *int64
	}{
		{`INSERT INTO tenants (name) VALUES ('binding') RETURNING id`, nil, &tenant},
		{`INSERT INTO memory_users (tenant_id, name, display_name) VALUES ($1, 'alice', 'Alice') RETURNING id`, []any{&tenant}, &user},
		{`INSERT INTO conversations (tenant_id, user_id, ext_key, title) VALUES ($1, $2, 'c1', 'Trip') RETURNING id`, []any{&tenant, &user}, &conv},
	} {
		args := make([]any, len(q.args))
		for i, a := range q.args {
			args[i] = *(a.(*int64))
		}
		if err := conn.QueryRow(ctx, q.sql, args...).Scan(q.dst); err != nil {
			t.Fatal(err)
		}
	}
	for i, sp := range []string{"Dana", "Dana", ""} {
		if _, err := conn.Exec(ctx, `INSERT INTO messages (tenant_id, user_id, conversation_id, role, speaker, position, fingerprint, created_at)
			VALUES ($1, $2, $3, 'user', $4, $5, $6, now())`, tenant, user, conv, sp, i, []byte{byte(i)}); err != nil {
			t.Fatal(err)
		}
	}
	if err := migrations.Up(url); err != nil {
		t.Fatal(err)
	}
	var got string
	if err := conn.QueryRow(ctx, `SELECT string_agg(kind || ':' || subject || '=' || value || '/' || source, ',' ORDER BY kind)
		FROM bindings WHERE tenant_id = $1`, tenant).Scan(&got); err != nil {
		t.Fatal(err)
	}
	if want := "speaker:Dana=Dana/migration,title:=Trip/migration,user:=Alice/migration"; got != want {
		t.Fatalf("bindings %q, want %q", got, want)
	}
	downTo(t, url, bindingsVersion-1)
	var display, title string
	if err := conn.QueryRow(ctx, `SELECT u.display_name, c.title FROM memory_users u JOIN conversations c ON c.user_id = u.id
		WHERE u.tenant_id = $1`, tenant).Scan(&display, &title); err != nil || display != "Alice" || title != "Trip" {
		t.Fatalf("after down: %q %q %v", display, title, err)
	}
}
