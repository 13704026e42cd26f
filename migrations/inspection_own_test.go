package migrations_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/perpetuity/perpetuity/migrations"
	"github.com/perpetuity/perpetuity/migrations/dbtest"
)

// inspectionOwnVersion moves a record's own items from index rows into
// arrays on the record.
const inspectionOwnVersion = 25

// TestInspectionOwnItemsMigration: going up, a record's items land in its
// arrays (shown flags with them) and only the index rows of another
// user's item, or of an item no longer stored, stay; going down, every
// item has its index row again.
func TestInspectionOwnItemsMigration(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	url := dbtest.New(t)
	downTo(t, url, inspectionOwnVersion-1)
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var tenant, alice, bob, conv, msg int64
	one := func(dst *int64, sql string, args ...any) {
		t.Helper()
		if err := conn.QueryRow(ctx, sql, args...).Scan(dst); err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
	}
	one(&tenant, `INSERT INTO tenants (name) VALUES ('own-items') RETURNING id`)
	one(&alice, `INSERT INTO memory_users (tenant_id, name) VALUES ($1, 'alice') RETURNING id`, tenant)
	one(&bob, `INSERT INTO memory_users (tenant_id, name) VALUES ($1, 'bob') RETURNING id`, tenant)
	item := func(user int64, part int) int64 {
		t.Helper()
		one(&conv, `INSERT INTO conversations (tenant_id, user_id, ext_key) VALUES ($1, $2, $3) RETURNING id`, tenant, user, fmt.Sprint("c", part))
		one(&msg, `INSERT INTO messages (tenant_id, user_id, conversation_id, role, position, fingerprint, created_at)
			VALUES ($1, $2, $3, 'user', 0, 'a', now()) RETURNING id`, tenant, user, conv)
		var id int64
		one(&id, `INSERT INTO items (tenant_id, message_id, user_id, conversation_id, role, part, body, tokens,
				token_count, born_clock, born_at, tau, novelty, seq)
			VALUES ($1, $2, $3, $4, 'user', 0, 'x', '{x}', 2, 0, now(), 1000, 0.5, $5) RETURNING id`, tenant, msg, user, conv, part)
		return id
	}
	a1, a2, b1 := item(alice, 1), item(alice, 2), item(bob, 3)
	// record stores a request of user with its record and an index row per
	// item (shown when true), as version 24 wrote them.
	record := func(user int64, items map[int64]bool) int64 {
		t.Helper()
		var id int64
		one(&id, `WITH r AS (
				INSERT INTO requests (tenant_id, request_id, user_id, dialect, provider, model, status)
				VALUES ($1, gen_random_uuid()::text, $2, 'openai-chat', 'openai', 'm', 200) RETURNING id, at)
			INSERT INTO request_inspections (tenant_id, request_id, user_id, at, record)
			SELECT $1, r.id, $2, r.at, '{}' FROM r RETURNING request_id`, tenant, user)
		for it, shown := range items {
			if _, err := conn.Exec(ctx, `INSERT INTO request_inspection_items (tenant_id, item_id, request_id, shown)
				VALUES ($1, $2, $3, $4)`, tenant, it, id, shown); err != nil {
				t.Fatal(err)
			}
		}
		return id
	}
	// gone is an item no longer stored (purged since): its row stays.
	const gone = 999_999_999
	ra := record(alice, map[int64]bool{a1: true, a2: false, b1: true, gone: false})
	rb := record(bob, map[int64]bool{a1: false, b1: true})
	// rows reads the tenant's records or index rows as one string of
	// "request:items:shown".
	const (
		indexSQL = `SELECT coalesce(string_agg(format('%s:%s:%s', request_id, item_id, shown), ' ' ORDER BY request_id, item_id), '')
			FROM request_inspection_items WHERE tenant_id = $1`
		arraysSQL = `SELECT coalesce(string_agg(format('%s:%s:%s', request_id, item_ids, item_shown), ' ' ORDER BY request_id), '')
			FROM request_inspections WHERE tenant_id = $1`
	)
	rows := func(sql string) string {
		t.Helper()
		var s string
		if err := conn.QueryRow(ctx, sql, tenant).Scan(&s); err != nil {
			t.Fatal(err)
		}
		return s
	}
	if err := migrations.Up(url); err != nil {
		t.Fatal(err)
	}
	if got, want := rows(indexSQL), fmt.Sprintf("%d:%d:t %d:%d:f %d:%d:f", ra, b1, ra, gone, rb, a1); got != want {
		t.Errorf("up: index rows %s\nwant %s", got, want)
	}
	if got, want := rows(arraysSQL),
		fmt.Sprintf("%d:{%d,%d,%d,%d}:{t,f,t,f} %d:{%d,%d}:{f,t}", ra, a1, a2, b1, gone, rb, a1, b1); got != want {
		t.Errorf("up: arrays %s\nwant %s", got, want)
	}
	downTo(t, url, inspectionOwnVersion-1)
	if got, want := rows(indexSQL), fmt.Sprintf("%d:%d:t %d:%d:f %d:%d:t %d:%d:f %d:%d:f %d:%d:t",
		ra, a1, ra, a2, ra, b1, ra, gone, rb, a1, rb, b1); got != want {
		t.Errorf("down: index rows %s\nwant %s", got, want)
	}
	if err := migrations.Up(url); err != nil {
		t.Fatalf("up again: %v", err)
	}
}
