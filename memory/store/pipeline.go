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
	return db.pipeline(ctx, tenantID, snapshot, setTenantSQL, queue)
}

// hotPipeline is pipelineRead, without a snapshot, for a turn's statements,
// which take their kept plans (setTenantGenericSQL).
func (db *DB) hotPipeline(ctx context.Context, tenantID int64, queue func(b *pgx.Batch)) error {
	return db.pipeline(ctx, tenantID, false, setTenantGenericSQL, queue)
}

// derivedPipeline is hotPipeline for a write of derived state (heat) that
// need not wait for its commit to reach the disk (setTenantDerivedSQL).
func (db *DB) derivedPipeline(ctx context.Context, tenantID int64, queue func(b *pgx.Batch)) error {
	return db.pipeline(ctx, tenantID, false, setTenantDerivedSQL, queue)
}

func (db *DB) pipeline(ctx context.Context, tenantID int64, snapshot bool, tenantSQL string, queue func(b *pgx.Batch)) error {
	b := &pgx.Batch{}
	if snapshot {
		b.Queue(`BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY`)
	}
	b.Queue(tenantSQL, strconv.FormatInt(tenantID, 10))
	queue(b)
	if snapshot {
		b.Queue(`COMMIT`)
	}
	return db.sendBatch(ctx, b)
}

// sendBatch sends b in one round trip on a pooled connection.
func (db *DB) sendBatch(ctx context.Context, b *pgx.Batch) error {
	conn, err := db.Pool.Acquire(ctx)
	if err != nil {
		return fmt.Errorf("acquire connection: %w", err)
	}
	defer conn.Release()
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

// setTenantGenericSQL sets the tenant for a turn's statements and has them
// take the plan their prepared statement keeps, until the batch's
// transaction ends. PostgreSQL plans a prepared statement's first five runs
// for their values and then keeps doing so whenever the plan for any values
// looks dearer, which for `id = ANY($2)`, `LIMIT $4` and row-level security
// it always does: each turn paid planning several times the work, for the
// same plan: a frame's five-item text read of a 250k-item tenant spent
// 0.58 ms planning and 0.15 ms executing (EXPLAIN ANALYZE). Only statements whose plan is the same whatever the
// values use it: a cold load's catch-up (`seq > 0`, the whole tenant) is
// planned for its values, and so is the chain writer's read: with a
// tenant's reply sources many, the plan for any values hash-joins all of
// them on every read (125k: 30 ms a read of two items). A capture's
// statements take them too: its binds were ~0.1 ms of a capture, planning
// the version check's union among them (`bench capture`, alternated four
// times: capture minus the commit floor 0.38-0.48 ms against 0.41-0.66).
const setTenantGenericSQL = `SELECT set_config('app.tenant_id', $1, true),
	set_config('plan_cache_mode', 'force_generic_plan', true)`

// setTenantDerivedSQL is setTenantGenericSQL for a transaction that writes
// only state derived from what captures stored (a frame's reheats, the
// chain writer's edges and watermark): its commit returns without waiting
// for the WAL flush (synchronous_commit off for this transaction only).
// Each such wait stood in line with the captures' own flushes on the same
// disk. What a database crash can lose is then a suffix of these
// transactions alone (the WAL is written in order, so any later durable
// commit makes them durable with it), each whole, and nothing a durable
// transaction read from them: the chain writer starts again from its
// stored watermark, and a lost reheat leaves the item at the heat it had.
// Captures, purges, keys and the request records keep waiting for the disk.
const setTenantDerivedSQL = `SELECT set_config('app.tenant_id', $1, true),
	set_config('plan_cache_mode', 'force_generic_plan', true),
	set_config('synchronous_commit', 'off', true)`
