package dbtest

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"
)

// Owner opens a pool on url as the role the URL names, the owner that
// migrations run as. store.Open's pool acts as perpetuity_app instead, which
// row-level security confines to one tenant per transaction; tests that
// inspect or tamper with rows across tenants use this pool. Closed when t
// ends.
func Owner(t testing.TB, url string) *pgxpool.Pool {
	t.Helper()
	pool, err := pgxpool.New(context.Background(), url)
	if err != nil {
		t.Fatalf("dbtest: owner pool: %v", err)
	}
	t.Cleanup(pool.Close)
	return pool
}
