package store

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
)

const userByNameSQL = `SELECT id FROM memory_users WHERE tenant_id = $1 AND name = $2`

// UserByName finds the tenant's memory user with this name without
// creating it (EnsureUser would): operations name users as admins do.
func (db *DB) UserByName(ctx context.Context, tenantID int64, name string) (int64, error) {
	var id int64
	err := db.InTenant(ctx, tenantID, func(tx pgx.Tx) error {
		return tx.QueryRow(ctx, userByNameSQL, tenantID, name).Scan(&id)
	})
	if err != nil {
		return 0, fmt.Errorf("memory user %q: %w", name, notFound(err))
	}
	return id, nil
}
