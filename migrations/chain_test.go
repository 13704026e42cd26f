package migrations_test

import (
	"context"
	"errors"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/perpetuity/perpetuity/migrations"
	"github.com/perpetuity/perpetuity/migrations/dbtest"
)

// chainVersion is the migration that adds the chain graph.
const chainVersion = 14

// TestChainMigration: the schema itself keeps an edge within the tenant's
// items, from the later to the earlier, of a known relation with a
// positive weight; edges and reply sources go with their items and
// messages, the watermark with its tenant. Going down drops the graph and
// nothing the items hold.
func TestChainMigration(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	url := dbtest.New(t)
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var tenant, other, user, conv, msg, msg2 int64
	for _, q := range []struct {
		sql  string
		args []*int64
		dst  *int64
	}{
		{`INSERT INTO tenants (name) VALUES ('chain') RETURNING id`, nil, &tenant},
		{`INSERT INTO tenants (name) VALUES ('other') RETURNING id`, nil, &other},
		{`INSERT INTO memory_users (tenant_id, name) VALUES ($1, 'alice') RETURNING id`, []*int64{&tenant}, &user},
		{`INSERT INTO conversations (tenant_id, user_id, ext_key) VALUES ($1, $2, 'c1') RETURNING id`, []*int64{&tenant, &user}, &conv},
		{`INSERT INTO messages (tenant_id, user_id, conversation_id, role, position, fingerprint, created_at)
			VALUES ($1, $2, $3, 'user', 0, 'a', now()) RETURNING id`, []*int64{&tenant, &user, &conv}, &msg},
		{`INSERT INTO messages (tenant_id, user_id, conversation_id, role, position, fingerprint, created_at)
			VALUES ($1, $2, $3, 'assistant', 1, 'b', now()) RETURNING id`, []*int64{&tenant, &user, &conv}, &msg2},
	} {
		args := make([]any, len(q.args))
		for i, a := range q.args {
			args[i] = *a
		}
		if err := conn.QueryRow(ctx, q.sql, args...).Scan(q.dst); err != nil {
			t.Fatalf("%s: %v", q.sql, err)
		}
	}
	var ids [3]int64
	for i, m := range []int64{msg, msg2, msg2} {
		if err := conn.QueryRow(ctx, `INSERT INTO items (tenant_id, message_id, user_id, conversation_id, role, part, body, tokens,
				token_count, born_clock, born_at, tau, novelty, seq)
			VALUES ($1, $2, $3, $4, 'user', $5, 'x', '{x}', 2, 0, now(), 1000, 0.5, $5 + 1) RETURNING id`,
			tenant, m, user, conv, i).Scan(&ids[i]); err != nil {
			t.Fatal(err)
		}
	}
	edge := `INSERT INTO chain_edges (tenant_id, src_id, dst_id, relation, user_id, weight) VALUES ($1, $2, $3, $4, $5, $6)`
	for _, c := range []struct {
		name string
		args []any
		code string // "": accepted
	}{
		{"an edge from the later item", []any{tenant, ids[1], ids[0], "thread", user, 2.5}, ""},
		{"evidence beside the thread", []any{tenant, ids[1], ids[0], "evidence", user, 1}, ""},
		{"the same edge twice", []any{tenant, ids[1], ids[0], "thread", user, 3}, "23505"},
		{"an edge to a later item", []any{tenant, ids[0], ids[1], "thread", user, 1}, "23514"},
		{"an edge to itself", []any{tenant, ids[1], ids[1], "thread", user, 1}, "23514"},
		{"an unknown relation", []any{tenant, ids[2], ids[0], "rumour", user, 1}, "23514"},
		{"a weightless edge", []any{tenant, ids[2], ids[0], "thread", user, 0}, "23514"},
		{"an edge to no item", []any{tenant, ids[2], int64(0), "thread", user, 1}, "23503"},
		{"an edge between another tenant's items", []any{other, ids[1], ids[0], "thread", user, 1}, "23503"},
		{"a second edge", []any{tenant, ids[2], ids[1], "thread", user, 1}, ""},
	} {
		_, err := conn.Exec(ctx, edge, c.args...)
		var pg *pgconn.PgError
		switch {
		case c.code == "" && err != nil:
			t.Errorf("%s: refused: %v", c.name, err)
		case c.code != "" && !(errors.As(err, &pg) && pg.Code == c.code):
			t.Errorf("%s: %v, want SQLSTATE %s", c.name, err, c.code)
		}
	}
	for _, q := range []struct {
		sql  string
		args []any
	}{
		{`INSERT INTO chain_heads (tenant_id, seq) VALUES ($1, 3)`, []any{tenant}},
		{`INSERT INTO chain_heads (tenant_id, seq) VALUES ($1, 0)`, []any{other}},
		{`INSERT INTO reply_sources (tenant_id, message_id, item_ids) VALUES ($1, $2, ARRAY[$3::bigint])`, []any{tenant, msg2, ids[0]}},
	} {
		if _, err := conn.Exec(ctx, q.sql, q.args...); err != nil {
			t.Fatalf("%s: %v", q.sql, err)
		}
	}
	if _, err := conn.Exec(ctx, `UPDATE chain_heads SET seq = -1 WHERE tenant_id = $1`, tenant); err == nil {
		t.Error("a negative watermark was accepted")
	}
	counts := func() (edges, sources, heads int64) {
		t.Helper()
		if err := conn.QueryRow(ctx, `SELECT (SELECT count(*) FROM chain_edges WHERE tenant_id = $1),
			(SELECT count(*) FROM reply_sources WHERE tenant_id = $1), (SELECT count(*) FROM chain_heads WHERE tenant_id = $1)`,
			tenant).Scan(&edges, &sources, &heads); err != nil {
			t.Fatal(err)
		}
		return
	}
	if e, s, h := counts(); e != 3 || s != 1 || h != 1 {
		t.Fatalf("%d edges, %d sources, %d watermarks", e, s, h)
	}
	// The third item goes: its edge with it; the reply's message goes: its
	// sources, its second item and that item's edges with it.
	if _, err := conn.Exec(ctx, `DELETE FROM items WHERE tenant_id = $1 AND id = $2`, tenant, ids[2]); err != nil {
		t.Fatal(err)
	}
	if e, _, _ := counts(); e != 2 {
		t.Fatalf("%d edges after their source item went, want 2", e)
	}
	if _, err := conn.Exec(ctx, `DELETE FROM messages WHERE tenant_id = $1 AND id = $2`, tenant, msg2); err != nil {
		t.Fatal(err)
	}
	if e, s, _ := counts(); e != 0 || s != 0 {
		t.Fatalf("%d edges and %d sources after the reply went", e, s)
	}
	var heads int64
	if _, err := conn.Exec(ctx, `DELETE FROM tenants WHERE id = $1`, other); err != nil {
		t.Fatal(err)
	}
	if err := conn.QueryRow(ctx, `SELECT count(*) FROM chain_heads WHERE tenant_id = $1`, other).Scan(&heads); err != nil || heads != 0 {
		t.Fatalf("a removed tenant's watermark stays: %d %v", heads, err)
	}

	downTo(t, url, chainVersion-1)
	var tables, items int64
	if err := conn.QueryRow(ctx, `SELECT count(*) FROM information_schema.tables
		WHERE table_schema = 'public' AND table_name IN ('chain_edges', 'chain_heads', 'reply_sources')`).Scan(&tables); err != nil {
		t.Fatal(err)
	}
	if err := conn.QueryRow(ctx, `SELECT count(*) FROM items WHERE tenant_id = $1`, tenant).Scan(&items); err != nil {
		t.Fatal(err)
	}
	if tables != 0 || items != 1 {
		t.Fatalf("after down: %d chain tables, %d items (want 0 and 1)", tables, items)
	}
	if err := migrations.Up(url); err != nil {
		t.Fatal(err)
	}
}
