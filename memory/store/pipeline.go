package store

import (
	"context"
	"fmt"
	"strconv"

	"github.com/jackc/pgx/v5"
)

// A frame reads the store several times per turn. Each InTenant costs four
// round trips (BEGIN, tenant, statement, COMMIT) before the statement's own
// work; the hot-path reads instead send the tenant setting and their
// statements as one pipelined batch: one round trip, and the batch runs in
// one implicit transaction, so the transaction-local tenant holds for every
// statement in it and is gone when it ends.

// pipelineRead runs the statements queue adds in one round trip with the
// tenant set for them. With snapshot, the statements share one
// repeatable-read, read-only snapshot (an explicit transaction inside the
// batch); without, each sees the data committed when it starts, as in
// InTenant. Callbacks queued on the batch scan the results; the first error
// is returned.
func (db *DB) pipelineRead(ctx context.Context, tenantID int64, snapshot bool, queue func(b *pgx.Batch)) error {
	conn, err := db.Pool.Acquire(ctx)
	if err != nil {
		return fmt.Errorf("acquire connection: %w", err)
	}
	defer conn.Release()
	b := &pgx.Batch{}
	if snapshot {
		b.Queue(`BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY`)
	}
	b.Queue(setTenantSQL, strconv.FormatInt(tenantID, 10))
	queue(b)
	if snapshot {
		b.Queue(`COMMIT`)
	}
	err = conn.SendBatch(ctx, b).Close()
	if err != nil && conn.Conn().PgConn().TxStatus() != 'I' {
		// A failed statement skips the rest of the batch, COMMIT included;
		// the connection goes back to the pool idle, not in an aborted
		// transaction.
		if _, rerr := conn.Exec(context.WithoutCancel(ctx), `ROLLBACK`); rerr != nil {
			conn.Conn().PgConn().Close(context.WithoutCancel(ctx)) //nolint:errcheck // the pool drops a closed connection
		}
	}
	return err
}

// pipelineWrite is pipelineRead for one data-changing statement: the
// implicit transaction commits when the batch ends without error.
func (db *DB) pipelineWrite(ctx context.Context, tenantID int64, sql string, args ...any) error {
	return db.pipelineRead(ctx, tenantID, false, func(b *pgx.Batch) {
		b.Queue(sql, args...)
	})
}
