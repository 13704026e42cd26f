package store

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// Head is a tenant's log position and active dictionary.
type Head struct {
	Seq         int64
	DictVersion int
}

// ArenaItem is an item as the resident arena loads it.
type ArenaItem struct {
	ID        int64
	Seq       int64
	UserID    int64
	ConvID    int64
	BornClock int64
	Tau       float64
	TermIDs   []int32
	Freqs     []int16
	Length    int32
}

// LogEvent is a purge or a dictionary flip in the tenant's log.
type LogEvent struct {
	Seq         int64
	Kind        string
	UserID      *int64
	DictVersion *int32
}

// CatchUp is everything committed after a watermark, read in one snapshot.
type CatchUp struct {
	Head   Head
	Items  []ArenaItem
	Events []LogEvent
}

const (
	headSQL        = `SELECT seq, dict_version FROM tenant_heads WHERE tenant_id = $1`
	catchUpItemSQL = `SELECT i.id, i.seq, i.user_id, i.conversation_id, i.born_clock, i.tau, r.term_ids, r.term_freqs, r.length
		FROM items i JOIN retrieval_rows r ON r.tenant_id = i.tenant_id AND r.item_id = i.id AND r.dict_version = $4
		WHERE i.tenant_id = $1 AND i.seq > $2 AND i.seq <= $3
		ORDER BY i.seq, i.id`
	catchUpLogSQL = `SELECT seq, kind, user_id, dict_version FROM tenant_log
		WHERE tenant_id = $1 AND seq > $2 AND seq <= $3 ORDER BY seq`
)

// ReadHead reads the tenant's head without a snapshot, to decide cheaply
// whether a catch-up is needed.
func (db *DB) ReadHead(ctx context.Context, tenantID int64) (Head, error) {
	var h Head
	err := db.InTenant(ctx, tenantID, func(tx pgx.Tx) error {
		return tx.QueryRow(ctx, headSQL, tenantID).Scan(&h.Seq, &h.DictVersion)
	})
	return h, notFound(err)
}

// ReadCatchUp reads, in one repeatable-read snapshot, the head and every item
// and log event with watermark < seq <= head. Commits are ordered by the
// head row lock, so no row with seq <= head can commit after this snapshot:
// the new watermark (head) leaves no gap. dictVersion selects which
// retrieval rows come with the items; a flip in the range means the caller
// must reload under the new version.
func (db *DB) ReadCatchUp(ctx context.Context, tenantID, watermark int64, dictVersion int) (CatchUp, error) {
	var cu CatchUp
	err := db.InTenantRead(ctx, tenantID, func(tx pgx.Tx) error {
		if err := tx.QueryRow(ctx, headSQL, tenantID).Scan(&cu.Head.Seq, &cu.Head.DictVersion); err != nil {
			return notFound(err)
		}
		if dictVersion == 0 {
			dictVersion = cu.Head.DictVersion
		}
		rows, err := tx.Query(ctx, catchUpLogSQL, tenantID, watermark, cu.Head.Seq)
		if err != nil {
			return err
		}
		if cu.Events, err = pgx.CollectRows(rows, pgx.RowToStructByPos[LogEvent]); err != nil {
			return err
		}
		rows, err = tx.Query(ctx, catchUpItemSQL, tenantID, watermark, cu.Head.Seq, dictVersion)
		if err != nil {
			return err
		}
		cu.Items, err = pgx.CollectRows(rows, pgx.RowToStructByPos[ArenaItem])
		return err
	})
	if err != nil {
		return CatchUp{}, fmt.Errorf("catch up tenant %d: %w", tenantID, err)
	}
	return cu, nil
}

// WarmRow is an activation of one viewer recent enough to maybe be warm.
type WarmRow struct {
	ItemID int64
	TLast  int64
	Peak   float64
	Tau    float64
}

// RenderItem is an item with everything its label needs, resolved now.
type RenderItem struct {
	ID          int64
	MessageID   int64
	UserID      int64
	ConvID      int64
	Role        string
	Speaker     string // stored speaker, or the owner's current display name
	Part        int
	Body        string
	TokenCount  int
	BornAt      time.Time
	Interrupted bool
	ConvTitle   string
}

const (
	viewerClockSQL = `SELECT clock FROM memory_users WHERE tenant_id = $1 AND id = $2`
	warmSQL        = `SELECT a.item_id, a.t_last, a.peak, i.tau FROM activations a
		JOIN items i ON i.tenant_id = a.tenant_id AND i.id = a.item_id
		WHERE a.tenant_id = $1 AND a.viewer_id = $2 AND a.t_last >= $3
		ORDER BY a.t_last DESC LIMIT $4`
	recentSQL = `SELECT id FROM items WHERE tenant_id = $1 AND conversation_id = $2 ORDER BY id DESC LIMIT $3`
	renderSQL = `SELECT i.id, i.message_id, i.user_id, i.conversation_id, i.role,
			CASE WHEN i.speaker <> '' THEN i.speaker WHEN i.role = 'user' THEN u.display_name ELSE 'assistant' END,
			i.part, i.body, i.token_count, i.born_at, m.interrupted, c.title
		FROM items i
		JOIN messages m ON m.tenant_id = i.tenant_id AND m.id = i.message_id
		JOIN memory_users u ON u.tenant_id = i.tenant_id AND u.id = i.user_id
		JOIN conversations c ON c.tenant_id = i.tenant_id AND c.id = i.conversation_id
		WHERE i.tenant_id = $1 AND i.id = ANY($2)`
)

// warmLimit bounds the warm read to the most recently activated items: a
// frame renders far fewer, and the read must not grow with the memory.
const warmLimit = 400

// FrameInputs is what one frame needs from the store besides retrieval.
type FrameInputs struct {
	Clock  int64
	Warm   []WarmRow
	Recent []int64 // newest first
}

// ReadFrameInputs reads the viewer's clock, the activations recent enough to
// be warm (t_last within horizon of the clock) and the latest items of the
// current conversation, in one transaction.
func (db *DB) ReadFrameInputs(ctx context.Context, tenantID, viewerID, convID int64, horizon int64, recent int) (FrameInputs, error) {
	var in FrameInputs
	err := db.InTenant(ctx, tenantID, func(tx pgx.Tx) error {
		if err := tx.QueryRow(ctx, viewerClockSQL, tenantID, viewerID).Scan(&in.Clock); err != nil {
			return notFound(err)
		}
		rows, err := tx.Query(ctx, warmSQL, tenantID, viewerID, in.Clock-horizon, warmLimit)
		if err != nil {
			return err
		}
		if in.Warm, err = pgx.CollectRows(rows, pgx.RowToStructByPos[WarmRow]); err != nil {
			return err
		}
		rows, err = tx.Query(ctx, recentSQL, tenantID, convID, recent)
		if err != nil {
			return err
		}
		in.Recent, err = pgx.CollectRows(rows, pgx.RowTo[int64])
		return err
	})
	if err != nil {
		return FrameInputs{}, fmt.Errorf("frame inputs: %w", err)
	}
	return in, nil
}

// RenderItems reads the items to render, with labels resolved now.
func (db *DB) RenderItems(ctx context.Context, tenantID int64, ids []int64) ([]RenderItem, error) {
	var out []RenderItem
	err := db.InTenant(ctx, tenantID, func(tx pgx.Tx) error {
		rows, err := tx.Query(ctx, renderSQL, tenantID, ids)
		if err != nil {
			return err
		}
		out, err = pgx.CollectRows(rows, pgx.RowToStructByPos[RenderItem])
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("render items: %w", err)
	}
	return out, nil
}

// Reheat is one adopted-or-not reheat request.
type Reheat struct {
	ItemID int64
	Peak   float64
}

// reheatSQL is the only statement that patches activation after birth. The
// new state is adopted only where it beats the current trajectory
// (p > heat now), so concurrent reheats commute; adopted reheats are logged
// for the console's heat picture.
const reheatSQL = `WITH req AS (
		SELECT r.item_id, r.peak, i.tau FROM unnest($3::bigint[], $4::float8[]) AS r(item_id, peak)
		JOIN items i ON i.tenant_id = $1 AND i.id = r.item_id),
	up AS (
		INSERT INTO activations AS a (tenant_id, viewer_id, item_id, t_last, peak)
		SELECT $1, $2, req.item_id, $5, req.peak FROM req ORDER BY req.item_id
		ON CONFLICT (tenant_id, viewer_id, item_id) DO UPDATE SET t_last = EXCLUDED.t_last, peak = EXCLUDED.peak
		WHERE EXCLUDED.peak > a.peak * exp(-(GREATEST(EXCLUDED.t_last - a.t_last, 0))::float8 /
			(SELECT tau FROM items WHERE tenant_id = a.tenant_id AND id = a.item_id))
		RETURNING a.item_id, a.peak)
	INSERT INTO reheats (tenant_id, viewer_id, item_id, clock, peak)
	SELECT $1, $2, up.item_id, $5, up.peak FROM up
	ON CONFLICT (tenant_id, viewer_id, item_id, clock) DO UPDATE SET peak = GREATEST(reheats.peak, EXCLUDED.peak)`

// ApplyReheats patches the viewer's activations at clock.
func (db *DB) ApplyReheats(ctx context.Context, tenantID, viewerID, clock int64, rs []Reheat) error {
	if len(rs) == 0 {
		return nil
	}
	ids, peaks := make([]int64, len(rs)), make([]float64, len(rs))
	for i, r := range rs {
		ids[i], peaks[i] = r.ItemID, r.Peak
	}
	return db.InTenant(ctx, tenantID, func(tx pgx.Tx) error {
		_, err := tx.Exec(ctx, reheatSQL, tenantID, viewerID, ids, peaks, clock)
		if err != nil {
			return fmt.Errorf("reheat: %w", err)
		}
		return nil
	})
}

const chainSQL = `WITH anchor AS (
		SELECT conversation_id, id FROM items WHERE tenant_id = $1 AND id = $2 AND user_id = $3)
	(SELECT i.id FROM items i, anchor a WHERE i.tenant_id = $1 AND i.conversation_id = a.conversation_id
		AND i.id < a.id ORDER BY i.id DESC LIMIT $4)
	UNION ALL (SELECT id FROM anchor)
	UNION ALL
	(SELECT i.id FROM items i, anchor a WHERE i.tenant_id = $1 AND i.conversation_id = a.conversation_id
		AND i.id > a.id ORDER BY i.id LIMIT $5)`

// ChainItems returns an item of the user and up to before/after items of
// its conversation around it; nil when the user has no such item.
func (db *DB) ChainItems(ctx context.Context, tenantID, userID, itemID int64, before, after int) ([]int64, error) {
	var ids []int64
	err := db.InTenant(ctx, tenantID, func(tx pgx.Tx) error {
		rows, err := tx.Query(ctx, chainSQL, tenantID, itemID, userID, before, after)
		if err != nil {
			return err
		}
		ids, err = pgx.CollectRows(rows, pgx.RowTo[int64])
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("chain: %w", err)
	}
	if len(ids) == 0 {
		return nil, nil
	}
	return ids, nil
}

const neighborsSQL = `SELECT i.id,
		COALESCE((SELECT max(p.id) FROM items p WHERE p.tenant_id = $1 AND p.conversation_id = i.conversation_id AND p.id < i.id), 0),
		COALESCE((SELECT min(n.id) FROM items n WHERE n.tenant_id = $1 AND n.conversation_id = i.conversation_id AND n.id > i.id), 0)
	FROM items i WHERE i.tenant_id = $1 AND i.id = ANY($2)`

// Neighbors are the items just before and after an item in its
// conversation (0 where there is none).
type Neighbors struct {
	ID, Prev, Next int64
}

// ReadNeighbors finds the conversation neighbours of items.
func (db *DB) ReadNeighbors(ctx context.Context, tenantID int64, ids []int64) ([]Neighbors, error) {
	var out []Neighbors
	err := db.InTenant(ctx, tenantID, func(tx pgx.Tx) error {
		rows, err := tx.Query(ctx, neighborsSQL, tenantID, ids)
		if err != nil {
			return err
		}
		out, err = pgx.CollectRows(rows, pgx.RowToStructByPos[Neighbors])
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("neighbors: %w", err)
	}
	return out, nil
}
