package migrations_test

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/perpetuity/perpetuity/migrations"
	"github.com/perpetuity/perpetuity/migrations/dbtest"
)

// TestUpDownUp walks every step down to zero and up again, so each down file
// is exercised and leaves nothing behind that the next up would trip on.
func TestUpDownUp(t *testing.T) {
	t.Parallel()
	url := dbtest.New(t)
	latest, err := migrations.Latest()
	if err != nil {
		t.Fatal(err)
	}
	if v, dirty, err := migrations.Version(url); err != nil || dirty || v != latest {
		t.Fatalf("fresh database at version %d dirty=%v err=%v, want %d", v, dirty, err, latest)
	}
	// One step at a time, so every down file runs on its own.
	for v := latest; v > 0; v-- {
		if err := migrations.Down(url, 1); err != nil {
			t.Fatalf("down from %d: %v", v, err)
		}
	}
	if n := countTables(t, url); n != 1 { // only schema_migrations remains
		t.Fatalf("after down to zero %d tables remain, want only schema_migrations", n)
	}
	if err := migrations.Up(url); err != nil {
		t.Fatalf("up again: %v", err)
	}
	if v, _, _ := migrations.Version(url); v != latest {
		t.Fatalf("after up again at %d, want %d", v, latest)
	}
}

func countTables(t *testing.T, url string) int {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var n int
	if err := conn.QueryRow(ctx, "SELECT count(*) FROM information_schema.tables WHERE table_schema = 'public'").Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}
