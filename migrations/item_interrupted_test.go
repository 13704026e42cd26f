package migrations_test

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/perpetuity/perpetuity/migrations"
	"github.com/perpetuity/perpetuity/migrations/dbtest"
)

// itemInterruptedVersion gives items their message's interrupted flag.
const itemInterruptedVersion = 28

// TestItemInterruptedMigration: 000028 copies each message's interrupted
// flag to its items, so that a cut-short reply stored before it still
// renders as one; items stored after it default to not cut short. Going
// down drops the copy (the messages keep the flag), up again copies it
// again.
func TestItemInterruptedMigration(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	url := dbtest.New(t)
	downTo(t, url, itemInterruptedVersion-1)
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	tenant, user, conv := seedConversation(ctx, t, conn, "cut")
	// Two messages of two items each: a reply cut short and a whole one.
	for pos, cut := range []bool{true, false} {
		var msg int64
		if err := conn.QueryRow(ctx, `INSERT INTO messages (tenant_id, user_id, conversation_id, role, position, fingerprint, created_at, interrupted)
			VALUES ($1, $2, $3, 'assistant', $4, $5, now(), $6) RETURNING id`, tenant, user, conv, pos, []byte{byte(pos)}, cut).Scan(&msg); err != nil {
			t.Fatal(err)
		}
		for part := range 2 {
			if _, err := conn.Exec(ctx, `INSERT INTO items (tenant_id, message_id, user_id, conversation_id, role, part, body, tokens,
				token_count, born_clock, born_at, tau, novelty, seq) VALUES ($1, $2, $3, $4, 'assistant', $5, 'text', '{}', 1, 0, now(), 1, 0, 0)`,
				tenant, msg, user, conv, part); err != nil {
				t.Fatal(err)
			}
		}
	}
	// flags counts the items whose flag is their message's, by flag.
	flags := func() map[bool]int {
		t.Helper()
		got := map[bool]int{}
		rows, err := conn.Query(ctx, `SELECT i.interrupted FROM items i WHERE i.tenant_id = $1 AND i.interrupted =
			(SELECT m.interrupted FROM messages m WHERE m.tenant_id = i.tenant_id AND m.id = i.message_id)`, tenant)
		if err != nil {
			t.Fatal(err)
		}
		var cut bool
		if _, err := pgx.ForEachRow(rows, []any{&cut}, func() error { got[cut]++; return nil }); err != nil {
			t.Fatal(err)
		}
		return got
	}

	if err := migrations.Up(url); err != nil {
		t.Fatalf("up: %v", err)
	}
	if got := flags(); got[true] != 2 || got[false] != 2 {
		t.Fatalf("after up, items agreeing with their message (by flag): %v, want 2 cut and 2 whole", got)
	}
	var def bool
	if err := conn.QueryRow(ctx, `SELECT column_default = 'false' FROM information_schema.columns
		WHERE table_name = 'items' AND column_name = 'interrupted'`).Scan(&def); err != nil || !def {
		t.Fatalf("items.interrupted defaults to false: %v %v", def, err)
	}

	downTo(t, url, itemInterruptedVersion-1)
	var n int
	if err := conn.QueryRow(ctx, `SELECT count(*) FROM information_schema.columns
		WHERE table_name = 'items' AND column_name = 'interrupted'`).Scan(&n); err != nil || n != 0 {
		t.Fatalf("after down, items.interrupted columns: %d %v", n, err)
	}
	if err := conn.QueryRow(ctx, `SELECT count(*) FROM messages WHERE tenant_id = $1 AND interrupted`, tenant).Scan(&n); err != nil || n != 1 {
		t.Fatalf("after down, cut-short messages: %d %v", n, err)
	}

	if err := migrations.Up(url); err != nil {
		t.Fatalf("up again: %v", err)
	}
	if got := flags(); got[true] != 2 || got[false] != 2 {
		t.Fatalf("up again, items agreeing with their message (by flag): %v, want 2 cut and 2 whole", got)
	}
}
