package store

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
)

// The chain graph as the integrity check reads it: through the check's one
// snapshot, so the edges, the watermark and the items a rebuild replays are
// one state, and on the snapshot's own connection (see
// IntegrityReader.Dictionary).

// CheckEdge is a stored edge with what its ends are now: their owners
// (nil: the item does not exist) and whether the edge's user is a memory
// user of the tenant.
type CheckEdge struct {
	ChainEdge
	SrcUser, DstUser *int64
	UserIsUser       bool
}

// checkEdgesSQL reads every edge with its ends left-joined: a dangling end
// is found, not dropped.
const checkEdgesSQL = `SELECT e.src_id, e.dst_id, e.relation, e.user_id, e.weight, s.user_id, d.user_id, u.id IS NOT NULL
	FROM chain_edges e
	LEFT JOIN items s ON s.tenant_id = e.tenant_id AND s.id = e.src_id
	LEFT JOIN items d ON d.tenant_id = e.tenant_id AND d.id = e.dst_id
	LEFT JOIN memory_users u ON u.tenant_id = e.tenant_id AND u.id = e.user_id
	WHERE e.tenant_id = $1 ORDER BY e.src_id, e.relation, e.dst_id`

// ChainHead is the chain writer's watermark in the snapshot (0: it never
// wrote).
func (r *IntegrityReader) ChainHead(ctx context.Context) (int64, error) {
	var seq int64
	if err := r.tx.QueryRow(ctx, chainHeadSQL, r.tenantID).Scan(&seq); err != nil {
		return 0, fmt.Errorf("integrity chain head: %w", err)
	}
	return seq, nil
}

// ChainEdges reads every stored edge of the tenant, by source.
func (r *IntegrityReader) ChainEdges(ctx context.Context) ([]CheckEdge, error) {
	rows, err := r.tx.Query(ctx, checkEdgesSQL, r.tenantID)
	if err != nil {
		return nil, fmt.Errorf("integrity chain edges: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (CheckEdge, error) {
		var e CheckEdge
		err := row.Scan(&e.Src, &e.Dst, &e.Relation, &e.UserID, &e.Weight, &e.SrcUser, &e.DstUser, &e.UserIsUser)
		return e, err
	})
	if err != nil {
		return nil, fmt.Errorf("integrity chain edges: %w", err)
	}
	return out, nil
}

// ReadChainBatch is DB.ReadChainBatch in the snapshot: what a rebuild from
// scratch replays.
func (r *IntegrityReader) ReadChainBatch(ctx context.Context, after, upto int64) (ChainBatch, error) {
	var cb ChainBatch
	if err := r.tx.QueryRow(ctx, chainBoundSQL, r.tenantID, upto).Scan(&cb.Head, &cb.Upto); err != nil {
		return ChainBatch{}, fmt.Errorf("integrity chain batch: %w", notFound(err))
	}
	rows, err := r.tx.Query(ctx, chainPurgesSQL, r.tenantID, after, upto)
	if err != nil {
		return ChainBatch{}, fmt.Errorf("integrity chain batch: %w", err)
	}
	if cb.Purges, err = pgx.CollectRows(rows, pgx.RowToStructByPos[LogEvent]); err != nil {
		return ChainBatch{}, fmt.Errorf("integrity chain batch: %w", err)
	}
	if rows, err = r.tx.Query(ctx, chainItemsSQL, r.tenantID, after, upto); err != nil {
		return ChainBatch{}, fmt.Errorf("integrity chain batch: %w", err)
	}
	if cb.Items, err = pgx.CollectRows(rows, pgx.RowToStructByPos[ChainItem]); err != nil {
		return ChainBatch{}, fmt.Errorf("integrity chain batch: %w", err)
	}
	if cb.Upto < after {
		cb.Upto = after
	}
	return cb, nil
}
