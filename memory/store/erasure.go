package store

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
)

// A purge or a redaction deletes the request inspector's records that
// quote what it erases, and a record quoting memory may be written while
// it runs: its request read the memory before the erasure and ends after
// it. Two things keep such a record from outliving the erasure:
//   - the record's statement keeps its inspection only when no purge or
//     redaction is logged past the position its request read memory at
//     (RequestRecord.Seen; insertInspectedSQL);
//   - a record quoting memory holds the tenant's erasure lock shared while
//     it is written, and an erasure takes it exclusively first, before it
//     locks anything the record's insert could wait on. An erasure that
//     comes first makes the record wait for its commit, and the record's
//     statement (a later snapshot) sees its log entry; a record that
//     comes first is committed before the erasure's delete reads the
//     records. Records do not wait for each other.
const (
	erasureLockSQL = `SELECT pg_advisory_xact_lock(hashtextextended('perpetuity erasure', $1))`
	quoteLockSQL   = `SELECT pg_advisory_xact_lock_shared(hashtextextended('perpetuity erasure', $1))`
)

// lockErasure takes the tenant's erasure lock for a purge or redaction,
// as its transaction's first lock.
func lockErasure(ctx context.Context, tx pgx.Tx, tenantID int64) error {
	if _, err := tx.Exec(ctx, erasureLockSQL, tenantID); err != nil {
		return fmt.Errorf("erasure lock: %w", err)
	}
	return nil
}
