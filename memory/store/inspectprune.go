package store

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// pruneInspectionsSQL removes a tenant's inspector records older than the
// retention (their index rows go with them, by trigger: migration 000024).
const pruneInspectionsSQL = `DELETE FROM request_inspections
	WHERE tenant_id = $1 AND at < now() - make_interval(secs => $2::double precision)`

// PruneInspections removes the tenant's inspector records older than
// retention (every record with a retention of 0) and says how many went.
// Requests prune their own tenant as they are recorded; this is for the
// tenants that stopped sending any, whose records would otherwise outlive
// the retention for as long as they stay quiet.
func (db *DB) PruneInspections(ctx context.Context, tenantID int64, retention time.Duration) (int64, error) {
	var n int64
	err := db.InTenant(ctx, tenantID, func(tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, pruneInspectionsSQL, tenantID, max(retention, 0).Seconds())
		n = tag.RowsAffected()
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("prune inspections of tenant %d: %w", tenantID, err)
	}
	return n, nil
}
