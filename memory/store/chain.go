package store

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// The chain graph's rows (migration 000014). Only the chain writer
// (memory/chain/writer.go) calls WriteChainEdges; purges remove a user's
// edges with its items.

// ChainItem is an item as the chain writer reads it.
type ChainItem struct {
	ID         int64
	Seq        int64
	UserID     int64
	ConvID     int64
	Role       string
	TokenCount int32
	Tokens     []string
	// Sources are what the request of a captured reply showed the model
	// (reply_sources); empty for every other item.
	Sources []int64
}

// ChainBatch is a stretch of the tenant log read in one snapshot: the items
// and purges with After < seq <= Upto, and the head at that moment.
type ChainBatch struct {
	Head   int64
	Upto   int64
	Items  []ChainItem
	Purges []LogEvent
}

// ChainEdge is one edge: Src, the later item, continues (thread) or drew
// on (evidence) Dst.
type ChainEdge struct {
	Src, Dst int64
	Relation string
	UserID   int64
	Weight   float32
}

// ChainEdgeSized is an edge with both ends' token counts, for a frame's
// pricing.
type ChainEdgeSized struct {
	ChainEdge
	SrcTokens, DstTokens int32
}

// ErrChainMoved says the chain watermark is not where the writer left it:
// another writer advanced it, or it was rebuilt. The writer reloads.
var ErrChainMoved = errors.New("chain watermark moved")

// ErrChainRedacted says a redaction rewrote the owner's edges after the
// graph the writer holds was read: the watermark may be where the writer
// left it, so only a reload (not a retry from the watermark) gets past it.
var ErrChainRedacted = fmt.Errorf("a redaction rewrote the edges: %w", ErrChainMoved)

// ErrChainGone says an edge names an item a purge removed after the writer
// read it; the writer reloads and the purge's edges are never written.
var ErrChainGone = errors.New("chain edge names a purged item")

const (
	chainHeadSQL = `SELECT COALESCE((SELECT seq FROM chain_heads WHERE tenant_id = $1), 0)`
	// The bound is read from the head in the batch's snapshot: commits are
	// ordered by the head row lock, so nothing at or below it can commit
	// later and the writer's watermark leaves no gap.
	chainBoundSQL = `SELECT seq, LEAST(seq, $2::bigint) FROM tenant_heads WHERE tenant_id = $1`
	chainItemsSQL = `SELECT i.id, i.seq, i.user_id, i.conversation_id, i.role, i.token_count, i.tokens,
			COALESCE(s.item_ids, '{}')
		FROM items i LEFT JOIN reply_sources s ON s.tenant_id = i.tenant_id AND s.message_id = i.message_id
		WHERE i.tenant_id = $1 AND i.seq > $2
		  AND i.seq <= LEAST($3::bigint, (SELECT seq FROM tenant_heads WHERE tenant_id = $1))
		ORDER BY i.seq, i.id`
	// Redactions come with the purges: a writer whose graph still counts
	// a redacted item reloads (writer.go).
	chainPurgesSQL = `SELECT seq, kind, user_id, dict_version, item_id FROM tenant_log
		WHERE tenant_id = $1 AND kind IN ('purge', 'redact') AND seq > $2
		  AND seq <= LEAST($3::bigint, (SELECT seq FROM tenant_heads WHERE tenant_id = $1)) ORDER BY seq`
	chainEnsureHeadSQL = `INSERT INTO chain_heads (tenant_id) VALUES ($1) ON CONFLICT DO NOTHING`
	chainLockHeadSQL   = `SELECT seq FROM chain_heads WHERE tenant_id = $1 FOR UPDATE`
	chainInsertSQL     = `INSERT INTO chain_edges (tenant_id, src_id, dst_id, relation, user_id, weight)
		SELECT $1, e.src, e.dst, e.rel, e.uid, e.w
		FROM unnest($2::bigint[], $3::bigint[], $4::text[], $5::bigint[], $6::real[]) AS e(src, dst, rel, uid, w)
		ON CONFLICT DO NOTHING`
	chainSetHeadSQL = `UPDATE chain_heads SET seq = $2 WHERE tenant_id = $1`
	// A redaction past what the writer's graph has seen changed the
	// statistics its edges were derived with.
	chainRedactedSinceSQL = `SELECT EXISTS (SELECT 1 FROM tenant_log WHERE tenant_id = $1 AND kind = 'redact' AND seq > $2)`
	chainAllEdgesSQL      = `SELECT e.src_id, e.dst_id, e.relation, e.user_id, e.weight, s.token_count, d.token_count
		FROM chain_edges e
		JOIN items s ON s.tenant_id = e.tenant_id AND s.id = e.src_id
		JOIN items d ON d.tenant_id = e.tenant_id AND d.id = e.dst_id
		WHERE e.tenant_id = $1 ORDER BY e.src_id, e.relation, e.dst_id`
	// Each relation and direction gets its own limit, so heavy threads
	// never hide what a reply drew on.
	chainLinksSQL = `SELECT id, relation, later, weight FROM (
			SELECT l.*, row_number() OVER (PARTITION BY l.relation, l.later ORDER BY l.weight DESC, l.id DESC) AS k
			FROM ((SELECT dst_id AS id, relation, false AS later, weight FROM chain_edges
					WHERE tenant_id = $1 AND src_id = $2 AND user_id = $3)
				UNION ALL
				(SELECT src_id, relation, true, weight FROM chain_edges
					WHERE tenant_id = $1 AND dst_id = $2 AND user_id = $3)) l) r
		WHERE k <= $4 ORDER BY weight DESC, id DESC`
	// In the capture's batch: the reply is the message it inserted.
	insertReplySourcesSQL = `INSERT INTO reply_sources (tenant_id, message_id, item_ids)
		SELECT $1, ` + capturedSQL + `, ARRAY(SELECT DISTINCT x FROM unnest($2::bigint[]) AS x
			WHERE EXISTS (SELECT 1 FROM items i WHERE i.tenant_id = $1 AND i.id = x AND i.user_id = $3) ORDER BY x)
		WHERE ` + capturedSQL + ` IS NOT NULL`
)

// ChainHead is the chain writer's watermark (0: it never wrote).
func (db *DB) ChainHead(ctx context.Context, tenantID int64) (int64, error) {
	var seq int64
	err := db.pipelineRead(ctx, tenantID, false, func(b *pgx.Batch) {
		b.Queue(chainHeadSQL, tenantID).QueryRow(func(r pgx.Row) error { return r.Scan(&seq) })
	})
	if err != nil {
		return 0, fmt.Errorf("chain head: %w", err)
	}
	return seq, nil
}

// ReadChainBatch reads the items and purges with after < seq <= min(upto,
// head) in one snapshot, with the head.
func (db *DB) ReadChainBatch(ctx context.Context, tenantID, after, upto int64) (ChainBatch, error) {
	var cb ChainBatch
	err := db.pipelineRead(ctx, tenantID, true, func(b *pgx.Batch) {
		b.Queue(chainBoundSQL, tenantID, upto).QueryRow(func(r pgx.Row) error {
			return notFound(r.Scan(&cb.Head, &cb.Upto))
		})
		b.Queue(chainPurgesSQL, tenantID, after, upto).Query(func(rows pgx.Rows) (err error) {
			cb.Purges, err = pgx.CollectRows(rows, pgx.RowToStructByPos[LogEvent])
			return err
		})
		b.Queue(chainItemsSQL, tenantID, after, upto).Query(func(rows pgx.Rows) (err error) {
			cb.Items, err = pgx.CollectRows(rows, pgx.RowToStructByPos[ChainItem])
			return err
		})
	})
	if err != nil {
		return ChainBatch{}, fmt.Errorf("read chain batch of tenant %d: %w", tenantID, err)
	}
	if cb.Upto < after {
		cb.Upto = after
	}
	return cb, nil
}

// WriteChainEdges appends edges and moves the watermark from `from` to
// `to` in one transaction. seen is the log position up to which every
// redaction is reflected in the graph the edges come from. ErrChainMoved:
// the watermark was not at from; ErrChainRedacted (an ErrChainMoved): a
// redaction after seen rewrote the owner's edges (the writer reloads);
// ErrChainGone: an edge names an item
// that no longer exists.
func (db *DB) WriteChainEdges(ctx context.Context, tenantID, from, to, seen int64, edges []ChainEdge) error {
	err := db.inTenantDerived(ctx, tenantID, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, chainEnsureHeadSQL, tenantID); err != nil {
			return err
		}
		var at int64
		if err := tx.QueryRow(ctx, chainLockHeadSQL, tenantID).Scan(&at); err != nil {
			return err
		}
		if at != from {
			return ErrChainMoved
		}
		var redacted bool
		if err := tx.QueryRow(ctx, chainRedactedSinceSQL, tenantID, seen).Scan(&redacted); err != nil {
			return err
		}
		if redacted {
			return ErrChainRedacted
		}
		if err := insertEdges(ctx, tx, tenantID, edges); err != nil {
			var pe *pgconn.PgError
			if errors.As(err, &pe) && pe.Code == "23503" {
				return ErrChainGone
			}
			return err
		}
		_, err := tx.Exec(ctx, chainSetHeadSQL, tenantID, to)
		return err
	})
	if err != nil {
		return fmt.Errorf("write chain edges of tenant %d: %w", tenantID, err)
	}
	return nil
}

// insertEdges stores edges (none: nothing) as one statement of columns.
func insertEdges(ctx context.Context, tx pgx.Tx, tenantID int64, edges []ChainEdge) error {
	n := len(edges)
	if n == 0 {
		return nil
	}
	src, dst, uid := make([]int64, n), make([]int64, n), make([]int64, n)
	rel, w := make([]string, n), make([]float32, n)
	for i, e := range edges {
		src[i], dst[i], rel[i], uid[i], w[i] = e.Src, e.Dst, e.Relation, e.UserID, e.Weight
	}
	_, err := tx.Exec(ctx, chainInsertSQL, tenantID, src, dst, rel, uid, w)
	return err
}

// ChainEdges reads every edge of the tenant with both ends' token counts,
// ordered by source: what a writer loads, and what integrity compares a
// rebuild with.
func (db *DB) ChainEdges(ctx context.Context, tenantID int64) ([]ChainEdgeSized, error) {
	var out []ChainEdgeSized
	err := db.InTenantRead(ctx, tenantID, func(tx pgx.Tx) error {
		rows, err := tx.Query(ctx, chainAllEdgesSQL, tenantID)
		if err != nil {
			return err
		}
		out, err = pgx.CollectRows(rows, func(r pgx.CollectableRow) (ChainEdgeSized, error) {
			var e ChainEdgeSized
			err := r.Scan(&e.Src, &e.Dst, &e.Relation, &e.UserID, &e.Weight, &e.SrcTokens, &e.DstTokens)
			return e, err
		})
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("chain edges of tenant %d: %w", tenantID, err)
	}
	return out, nil
}

// ChainLink is an item's neighbour in the chain graph.
type ChainLink struct {
	ItemID   int64
	Relation string
	// Later: the neighbour continues the item (thread) or answered from it
	// (evidence); otherwise the item continues, or drew on, the neighbour.
	Later  bool
	Weight float32
}

// ChainLinks reads the chain neighbours of one of the user's items,
// heaviest first, at most limit of each relation and direction.
func (db *DB) ChainLinks(ctx context.Context, tenantID, userID, itemID int64, limit int) ([]ChainLink, error) {
	var out []ChainLink
	err := db.pipelineRead(ctx, tenantID, false, func(b *pgx.Batch) {
		b.Queue(chainLinksSQL, tenantID, itemID, userID, limit).Query(func(rows pgx.Rows) (err error) {
			out, err = pgx.CollectRows(rows, pgx.RowToStructByPos[ChainLink])
			return err
		})
	})
	if err != nil {
		return nil, fmt.Errorf("chain links of item %d: %w", itemID, err)
	}
	return out, nil
}
