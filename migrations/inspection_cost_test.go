package migrations_test

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/perpetuity/perpetuity/migrations"
	"github.com/perpetuity/perpetuity/migrations/dbtest"
)

// inspectionCostVersion trades the index rows' foreign key for a trigger.
const inspectionCostVersion = 24

// TestInspectionCostMigration: after 000024 a record's index rows still go
// with it, whichever way it goes (its own deletion, its request's), and
// only its own; going down brings the key back and it cascades again.
func TestInspectionCostMigration(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	url := dbtest.New(t)
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var tenant, user int64
	if err := conn.QueryRow(ctx, `INSERT INTO tenants (name) VALUES ('inspected') RETURNING id`).Scan(&tenant); err != nil {
		t.Fatal(err)
	}
	if err := conn.QueryRow(ctx, `INSERT INTO memory_users (tenant_id, name) VALUES ($1, 'alice') RETURNING id`, tenant).Scan(&user); err != nil {
		t.Fatal(err)
	}
	// record stores a request with its record, indexing items 1..n.
	record := func(n int) int64 {
		t.Helper()
		var id int64
		if err := conn.QueryRow(ctx, `WITH r AS (
				INSERT INTO requests (tenant_id, request_id, user_id, dialect, provider, model, status)
				VALUES ($1, gen_random_uuid()::text, $2, 'openai-chat', 'openai', 'm', 200) RETURNING id, at),
			p AS (INSERT INTO request_inspections (tenant_id, request_id, user_id, at, record)
				SELECT $1, r.id, $2, r.at, '{}' FROM r RETURNING request_id),
			x AS (INSERT INTO request_inspection_items (tenant_id, item_id, request_id, shown)
				SELECT $1, g, p.request_id, g % 2 = 0 FROM p, generate_series(1, $3::int) g)
			SELECT request_id FROM p`, tenant, user, n).Scan(&id); err != nil {
			t.Fatalf("record: %v", err)
		}
		return id
	}
	indexed := func(request int64) int64 {
		t.Helper()
		var n int64
		if err := conn.QueryRow(ctx, `SELECT count(*) FROM request_inspection_items WHERE tenant_id = $1 AND request_id = $2`,
			tenant, request).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	exec := func(sql string, args ...any) {
		t.Helper()
		if _, err := conn.Exec(ctx, sql, args...); err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
	}
	for _, tc := range []struct {
		name string
		drop string // deletes the record $2 of tenant $1
	}{
		{"record deleted", `DELETE FROM request_inspections WHERE tenant_id = $1 AND request_id = $2`},
		{"request deleted", `DELETE FROM requests WHERE tenant_id = $1 AND id = $2`},
	} {
		gone, kept := record(100), record(3)
		if indexed(gone) != 100 || indexed(kept) != 3 {
			t.Fatalf("%s: index rows %d and %d, want 100 and 3", tc.name, indexed(gone), indexed(kept))
		}
		exec(tc.drop, tenant, gone)
		if n := indexed(gone); n != 0 {
			t.Errorf("%s: %d index rows outlived their record", tc.name, n)
		}
		if n := indexed(kept); n != 3 {
			t.Errorf("%s: another record's index rows went too: %d left of 3", tc.name, n)
		}
	}
	// Rows of no record (none are written so) do not stop the way down.
	exec(`INSERT INTO request_inspection_items (tenant_id, item_id, request_id, shown) VALUES ($1, 1, 999999, true)`, tenant)

	downTo(t, url, inspectionCostVersion-1)
	if n := indexed(999999); n != 0 {
		t.Errorf("after down: %d index rows of no record", n)
	}
	gone := record(5)
	exec(`DELETE FROM request_inspections WHERE tenant_id = $1 AND request_id = $2`, tenant, gone)
	if n := indexed(gone); n != 0 {
		t.Errorf("after down: the key did not take %d index rows with their record", n)
	}
	if _, err := conn.Exec(ctx, `INSERT INTO request_inspection_items (tenant_id, item_id, request_id, shown) VALUES ($1, 1, 999999, true)`,
		tenant); err == nil {
		t.Error("after down: an index row of no record was admitted")
	}
	if err := migrations.Up(url); err != nil {
		t.Fatalf("up again: %v", err)
	}
	gone = record(7)
	exec(`DELETE FROM request_inspections WHERE tenant_id = $1 AND request_id = $2`, tenant, gone)
	if n := indexed(gone); n != 0 {
		t.Errorf("up again: %d index rows outlived their record", n)
	}
}
