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

// captureCostVersion moves a capture's frequency counts to one row per
// message and its version check out of a per-item trigger.
const captureCostVersion = 22

// TestCaptureCostMigration: 000022 keeps a message's counts as one row that
// goes with the message, and fails a transaction with PPDV1 through
// dict_version_missing instead of the per-item trigger. Going down adds the
// rows not folded yet to term_stats and corpus_stats (the counts read the
// same) and brings the trigger back; up again drops it again.
func TestCaptureCostMigration(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	url := dbtest.New(t)
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	tenant, user, conv := seedConversation(ctx, t, conn, "counts")
	var msgs [3]int64
	for i := range msgs {
		if err := conn.QueryRow(ctx, `INSERT INTO messages (tenant_id, user_id, conversation_id, role, position, fingerprint, created_at)
			VALUES ($1, $2, $3, 'user', $4, $5, now()) RETURNING id`, tenant, user, conv, i, []byte{byte(i)}).Scan(&msgs[i]); err != nil {
			t.Fatal(err)
		}
	}
	exec := func(sql string, args ...any) error {
		_, err := conn.Exec(ctx, sql, args...)
		return err
	}
	scalar := func(sql string) int64 {
		t.Helper()
		var n int64
		if err := conn.QueryRow(ctx, sql, tenant).Scan(&n); err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
		return n
	}
	for _, q := range []string{
		`INSERT INTO term_stats (tenant_id, dict_version, term_id, df) VALUES ($1, 1, 1, 1)`,
		`INSERT INTO corpus_stats (tenant_id, dict_version, items, total_length) VALUES ($1, 1, 1, 2)`,
	} {
		if err := exec(q, tenant); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	delta := func(msg int64, terms, dfs []int32, items, length int) error {
		return exec(`INSERT INTO stat_deltas (tenant_id, message_id, dict_version, items, total_length, term_ids, dfs)
			VALUES ($1, $2, 1, $3, $4, $5, $6)`, tenant, msg, items, length, terms, dfs)
	}
	for i, d := range []struct {
		terms, dfs    []int32
		items, length int
	}{{[]int32{1, 2}, []int32{1, 1}, 1, 3}, {[]int32{2}, []int32{1}, 1, 1}, {[]int32{1, 3}, []int32{5, 5}, 5, 50}} {
		if err := delta(msgs[i], d.terms, d.dfs, d.items, d.length); err != nil {
			t.Fatalf("delta %d: %v", i, err)
		}
	}
	if err := delta(msgs[0], []int32{9}, []int32{1}, 1, 1); err == nil {
		t.Error("a second row for one message and version was admitted")
	}
	if err := exec(`INSERT INTO stat_deltas (tenant_id, message_id, dict_version, items, total_length, term_ids, dfs)
		VALUES ($1, $2, 2, 1, 1, '{1,2}', '{1}')`, tenant, msgs[0]); err == nil {
		t.Error("a row with more terms than counts was admitted")
	}
	// The row goes with its message.
	if err := exec(`DELETE FROM messages WHERE tenant_id = $1 AND id = $2`, tenant, msgs[2]); err != nil {
		t.Fatal(err)
	}
	if n := scalar(`SELECT count(*) FROM stat_deltas WHERE tenant_id = $1`); n != 2 {
		t.Fatalf("%d rows after their message's removal, want 2", n)
	}
	var pe *pgconn.PgError
	if err := exec(`SELECT dict_version_missing($1, 7)`, tenant); !errors.As(err, &pe) || pe.Code != "PPDV1" {
		t.Errorf("dict_version_missing: %v, want SQLSTATE PPDV1", err)
	}
	trigger := `SELECT count(*) FROM pg_trigger WHERE tgname = 'items_rows_per_version' AND $1::bigint > 0`
	if n := scalar(trigger); n != 0 {
		t.Error("the per-item version trigger is still there")
	}

	downTo(t, url, captureCostVersion-1)
	for _, c := range []struct {
		sql  string
		want int64
	}{
		{`SELECT df FROM term_stats WHERE tenant_id = $1 AND dict_version = 1 AND term_id = 1`, 2},
		{`SELECT df FROM term_stats WHERE tenant_id = $1 AND dict_version = 1 AND term_id = 2`, 2},
		{`SELECT count(*) FROM term_stats WHERE tenant_id = $1`, 2},
		{`SELECT items FROM corpus_stats WHERE tenant_id = $1 AND dict_version = 1`, 3},
		{`SELECT total_length FROM corpus_stats WHERE tenant_id = $1 AND dict_version = 1`, 6},
		{trigger, 1},
		{`SELECT count(*) FROM pg_proc WHERE proname = 'dict_version_missing' AND $1::bigint > 0`, 0},
		{`SELECT count(*) FROM pg_class WHERE relname = 'stat_deltas' AND $1::bigint > 0`, 0},
	} {
		if n := scalar(c.sql); n != c.want {
			t.Errorf("after down: %s = %d, want %d", c.sql, n, c.want)
		}
	}
	if err := migrations.Up(url); err != nil {
		t.Fatalf("up again: %v", err)
	}
	if n := scalar(trigger); n != 0 {
		t.Error("up again: the per-item version trigger is still there")
	}
	if err := delta(msgs[0], []int32{1}, []int32{1}, 1, 1); err != nil {
		t.Errorf("up again: %v", err)
	}
}
