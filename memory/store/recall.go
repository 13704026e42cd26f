package store

import (
	"context"
	"errors"
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
	Tokens    int32 // model tokens of the body, for pricing the frame without reading it
	Dense     []byte
}

// LogEvent is a purge, a dictionary flip or a redaction in the tenant's
// log. A redaction names its item and the item's owner.
type LogEvent struct {
	Seq         int64
	Kind        string
	UserID      *int64
	DictVersion *int32
	ItemID      *int64
}

// CatchUp is everything committed after a watermark, read in one snapshot.
type CatchUp struct {
	Head   Head
	Items  []ArenaItem
	Events []LogEvent
	// Component is the tenant's frozen common component of the version
	// read (dense_components), nil when it has none.
	Component []byte
	// Segmented is where the arena segments a cold load read end (0:
	// none): its items up to there came from segments (segment.go), the
	// rest from rows.
	Segmented int64
}

const (
	headSQL = `SELECT seq, dict_version FROM tenant_heads WHERE tenant_id = $1`
	// The catch-up statements read their upper bound (and, when asked for
	// version 0, the dictionary version) from the head in the same snapshot,
	// so the whole catch-up is one round trip.
	//
	// arenaRowSQL is a catch-up row as rowDecoder reads it, an item joined
	// with its retrieval row; each statement adds the row's version.
	arenaRowSQL = `SELECT i.id, i.seq, i.user_id, i.conversation_id, i.born_clock, i.tau, r.term_ids, r.term_freqs, r.length, i.token_count, r.dense
		FROM items i JOIN retrieval_rows r ON r.tenant_id = i.tenant_id AND r.item_id = i.id `
	catchUpItemSQL = arenaRowSQL + `AND r.dict_version = COALESCE(NULLIF($3::int, 0), (SELECT dict_version FROM tenant_heads WHERE tenant_id = $1))
		WHERE i.tenant_id = $1 AND i.seq > $2 AND i.seq <= (SELECT seq FROM tenant_heads WHERE tenant_id = $1)
		ORDER BY i.seq, i.id`
	catchUpLogSQL = `SELECT seq, kind, user_id, dict_version, item_id FROM tenant_log
		WHERE tenant_id = $1 AND seq > $2 AND seq <= (SELECT seq FROM tenant_heads WHERE tenant_id = $1) ORDER BY seq`
	catchUpComponentSQL = `SELECT component FROM dense_components WHERE tenant_id = $1
		AND dict_version = COALESCE(NULLIF($2::int, 0), (SELECT dict_version FROM tenant_heads WHERE tenant_id = $1))`
	logRangeSQL = `SELECT seq, kind, user_id, dict_version, item_id FROM tenant_log
		WHERE tenant_id = $1 AND seq > $2 AND seq <= $3 ORDER BY seq`
)

// ReadHead reads the tenant's head without a snapshot, to decide cheaply
// whether a catch-up is needed.
func (db *DB) ReadHead(ctx context.Context, tenantID int64) (Head, error) {
	var h Head
	err := db.pipelineRead(ctx, tenantID, false, func(b *pgx.Batch) {
		b.Queue(headSQL, tenantID).QueryRow(func(r pgx.Row) error { return r.Scan(&h.Seq, &h.DictVersion) })
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
	read := func(segments bool) error {
		cu = CatchUp{}
		return db.pipelineRead(ctx, tenantID, true, func(b *pgx.Batch) {
			queueCatchUp(b, tenantID, watermark, dictVersion, segments, &cu, nil)
		})
	}
	err := read(watermark == 0)
	if errors.Is(err, errSegment) {
		// A segment that does not decode (the integrity check names it)
		// costs this load its speed, not the tenant its memory.
		err = read(false)
	}
	if err != nil {
		return CatchUp{}, fmt.Errorf("catch up tenant %d: %w", tenantID, err)
	}
	return cu, nil
}

// maxItemsHint caps the rows a catch-up allocates for before reading them.
const maxItemsHint = 1 << 22

// queueCatchUp adds a catch-up's statements to a snapshot's batch; done,
// when set (a catch-up from a watermark: a cold load's component comes
// later), gets the catch-up as soon as its rows are read, before the
// results of anything queued after it.
func queueCatchUp(b *pgx.Batch, tenantID, watermark int64, dictVersion int, segments bool, cu *CatchUp, done func(CatchUp)) {
	b.Queue(headSQL, tenantID).QueryRow(func(r pgx.Row) error {
		return notFound(r.Scan(&cu.Head.Seq, &cu.Head.DictVersion))
	})
	b.Queue(catchUpLogSQL, tenantID, watermark).Query(func(rows pgx.Rows) (err error) {
		cu.Events, err = pgx.CollectRows(rows, pgx.RowToStructByPos[LogEvent])
		return err
	})
	items, args := catchUpItemSQL, []any{tenantID, watermark, dictVersion}
	if segments && watermark == 0 {
		// A cold load reads the tenant's segments first, then the rows
		// past them (the segments' own allocation covers the tenant).
		queueSegments(b, tenantID, dictVersion, cu)
		items, args = catchUpColdItemSQL, []any{tenantID, dictVersion}
	}
	b.Queue(items, args...).Query(func(rows pgx.Rows) (err error) {
		// The head, read just before in the same snapshot, bounds how many
		// items there are: a cold load of a million rows is not grown by
		// doubling.
		var d rowDecoder
		if cu.Items == nil {
			cu.Items = make([]ArenaItem, 0, min(max(cu.Head.Seq-watermark, 0), maxItemsHint))
		}
		cu.Items, err = pgx.AppendRows(cu.Items, rows, d.row)
		if err == nil && done != nil {
			done(*cu)
		}
		return err
	})
	if watermark == 0 { // only a cold load sets the arena's component
		b.Queue(catchUpComponentSQL, tenantID, dictVersion).Query(func(rows pgx.Rows) error {
			got, err := pgx.CollectRows(rows, pgx.RowTo[[]byte])
			if len(got) > 0 {
				cu.Component = got[0]
			}
			return err
		})
	}
}

// WarmRow is an activation of one viewer recent enough to maybe be warm.
type WarmRow struct {
	ItemID int64
	TLast  int64
	Peak   float64
	Tau    float64
	Tokens int
}

// RenderItem is an item with everything its label needs, resolved now.
type RenderItem struct {
	ID          int64
	MessageID   int64
	UserID      int64
	ConvID      int64
	Role        string
	Speaker     string // the latest binding of the stored speaker, or of the owner's display name
	Part        int
	Body        string
	TokenCount  int
	BornAt      time.Time
	Interrupted bool
	ConvTitle   string
}

const (
	viewerClockSQL = `SELECT clock FROM memory_users WHERE tenant_id = $1 AND id = $2`
	// The item is read only for activations written before they carried
	// tau and token_count (migration 8); COALESCE evaluates it lazily.
	warmSQL = `SELECT a.item_id, a.t_last, a.peak,
			COALESCE(a.tau, (SELECT i.tau FROM items i WHERE i.tenant_id = a.tenant_id AND i.id = a.item_id)),
			COALESCE(a.token_count, (SELECT i.token_count FROM items i WHERE i.tenant_id = a.tenant_id AND i.id = a.item_id))
		FROM activations a
		WHERE a.tenant_id = $1 AND a.viewer_id = $2
			AND a.t_last >= (SELECT clock FROM memory_users WHERE tenant_id = $1 AND id = $2) - $3
		ORDER BY a.t_last DESC LIMIT $4`
	recentSQL = `SELECT id, token_count FROM items WHERE tenant_id = $1 AND conversation_id = $2 ORDER BY id DESC LIMIT $3`
	datedSQL  = `SELECT id, token_count FROM items
		WHERE tenant_id = $1 AND user_id = $2 AND born_at >= $3 AND born_at < $4
		ORDER BY born_at, id LIMIT $5`
	// Labels resolve through the latest binding of their subject (the
	// binding log, bindings.go): the stored speaker's label in the owner's
	// memory, else for the user's turns the owner's display name; the
	// conversation's title. An unbound label is empty (rendered "unknown";
	// the integrity check reports it). Each is one index probe.
	renderSQL = `SELECT i.id, i.message_id, i.user_id, i.conversation_id, i.role,
			CASE WHEN i.speaker = '' AND i.role <> 'user' THEN 'assistant'
			ELSE COALESCE((SELECT b.value FROM bindings b
				WHERE b.tenant_id = i.tenant_id AND b.user_id = i.user_id
					AND b.kind = CASE WHEN i.speaker <> '' THEN 'speaker' ELSE 'user' END AND b.subject = i.speaker
				ORDER BY b.id DESC LIMIT 1), '') END,
			i.part, i.body, i.token_count, i.born_at, i.interrupted,
			COALESCE((SELECT b.value FROM bindings b
				WHERE b.tenant_id = i.tenant_id AND b.conversation_id = i.conversation_id AND b.kind = 'title'
				ORDER BY b.id DESC LIMIT 1), '')
		FROM items i
		WHERE i.tenant_id = $1 AND i.id = ANY($2)`
)

// WarmLimit bounds the warm read to the most recently activated items: a
// frame renders far fewer, and the read must not grow with the memory.
const WarmLimit = 400

// A date a question names brings all its turns when they are few enough
// to show (a day of chat, or a month with one conversation in it);
// otherwise it only tells which matches fall in it, from at most
// rangeLimit of its turns.
const (
	wholeLimit = 60
	rangeLimit = 2000
)

// TimeRange is the instants from From up to, not including, To.
type TimeRange struct{ From, To time.Time }

// FrameInputs is what one frame needs from the store besides retrieval.
type FrameInputs struct {
	Clock  int64
	Warm   []WarmRow
	Recent []int64 // newest first
	// Dated are the viewer's own items of the named ranges that hold at
	// most wholeLimit, oldest first; InRanges those of the larger ones.
	Dated    []int64
	InRanges []int64
	// Tokens are the stored token counts of every item above.
	Tokens map[int64]int
	// Labels are the viewer's current labels, for rendering its items.
	Labels Labels
}

// FrameRead is what a frame asks of the store before it renders.
type FrameRead struct {
	ViewerID, ConvID int64
	Horizon          int64       // activations older than clock - Horizon are cold
	Recent           int         // newest items of the conversation
	Dated            []TimeRange // the viewer's items born in these
}

// ReadFrameInputs reads, in one round trip: the viewer's clock, the
// activations recent enough to be warm (t_last within Horizon of the
// clock), the latest items of the current conversation, the viewer's items
// born in the dated ranges and the viewer's labels.
func (db *DB) ReadFrameInputs(ctx context.Context, tenantID int64, r FrameRead) (FrameInputs, error) {
	var in FrameInputs
	err := db.hotPipeline(ctx, tenantID, func(b *pgx.Batch) {
		queueFrameInputs(b, tenantID, r, &in)
	})
	if err != nil {
		return FrameInputs{}, fmt.Errorf("frame inputs: %w", err)
	}
	in.settle()
	return in, nil
}

// ReadFrame is a frame's one round trip: ReadCatchUp from watermark (not 0:
// an arena loaded on dictVersion) and ReadFrameInputs, in one snapshot.
// caughtUp gets the catch-up as soon as its rows are read, so the caller
// can scan the caught-up arena while the rest of the read comes in.
func (db *DB) ReadFrame(ctx context.Context, tenantID, watermark int64, dictVersion int, r FrameRead, caughtUp func(CatchUp)) (FrameInputs, error) {
	if watermark == 0 {
		return FrameInputs{}, fmt.Errorf("frame read of tenant %d: no arena to catch up", tenantID)
	}
	var cu CatchUp
	var in FrameInputs
	// A frame's catch-up reads the few rows captured since the last turn:
	// the kept plan (index scans, a nested loop) serves that best, and a
	// long gap no worse than linearly (setTenantGenericSQL).
	err := db.pipeline(ctx, tenantID, true, setTenantGenericSQL, func(b *pgx.Batch) {
		queueCatchUp(b, tenantID, watermark, dictVersion, false, &cu, caughtUp)
		queueFrameInputs(b, tenantID, r, &in)
	})
	if err != nil {
		return FrameInputs{}, fmt.Errorf("frame read of tenant %d: %w", tenantID, err)
	}
	in.settle()
	return in, nil
}

func queueFrameInputs(b *pgx.Batch, tenantID int64, r FrameRead, in *FrameInputs) {
	in.Tokens = map[int64]int{}
	collect := func(dst *[]int64) func(rows pgx.Rows) error {
		return func(rows pgx.Rows) error {
			var id int64
			var tokens int
			_, err := pgx.ForEachRow(rows, []any{&id, &tokens}, func() error {
				*dst = append(*dst, id)
				in.Tokens[id] = tokens
				return nil
			})
			return err
		}
	}
	b.Queue(viewerClockSQL, tenantID, r.ViewerID).QueryRow(func(row pgx.Row) error { return notFound(row.Scan(&in.Clock)) })
	b.Queue(warmSQL, tenantID, r.ViewerID, r.Horizon, WarmLimit).Query(func(rows pgx.Rows) (err error) {
		in.Warm, err = pgx.CollectRows(rows, pgx.RowToStructByPos[WarmRow])
		return err
	})
	b.Queue(recentSQL, tenantID, r.ConvID, r.Recent).Query(collect(&in.Recent))
	for _, d := range r.Dated {
		b.Queue(datedSQL, tenantID, r.ViewerID, d.From, d.To, rangeLimit).Query(func(rows pgx.Rows) error {
			type row struct {
				ID     int64
				Tokens int
			}
			rs, err := pgx.CollectRows(rows, pgx.RowToStructByPos[row])
			for _, x := range rs {
				if len(rs) <= wholeLimit {
					in.Dated = append(in.Dated, x.ID)
					in.Tokens[x.ID] = x.Tokens
				} else {
					in.InRanges = append(in.InRanges, x.ID)
				}
			}
			return err
		})
	}
	queueViewerLabels(b, tenantID, r.ViewerID, &in.Labels)
}

// settle completes the token counts once every statement has been read.
func (in *FrameInputs) settle() {
	for _, w := range in.Warm {
		in.Tokens[w.ItemID] = w.Tokens
	}
}

// RenderItems reads the items to render, with labels resolved now (the
// memory tools, the console; frames read through ReadItemTexts what they
// do not keep).
func (db *DB) RenderItems(ctx context.Context, tenantID int64, ids []int64) ([]RenderItem, error) {
	var out []RenderItem
	err := db.pipelineRead(ctx, tenantID, false, func(b *pgx.Batch) {
		b.Queue(renderSQL, tenantID, ids).Query(func(rows pgx.Rows) (err error) {
			out, err = pgx.CollectRows(rows, pgx.RowToStructByPos[RenderItem])
			return err
		})
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
// for the console's heat picture. A reheat never predates its item: a
// frame reads the viewer's clock before its neighbour read, so it can select
// an item a concurrent capture of the same user committed at a later clock;
// such a reheat lands at the item's birth clock (t_last >= born_clock, as
// the integrity check requires).
const reheatSQL = `WITH req AS (
		SELECT r.item_id, r.peak, i.tau, i.token_count, GREATEST($5::bigint, i.born_clock) AS at
		FROM unnest($3::bigint[], $4::float8[]) AS r(item_id, peak)
		JOIN items i ON i.tenant_id = $1 AND i.id = r.item_id),
	up AS (
		INSERT INTO activations AS a (tenant_id, viewer_id, item_id, t_last, peak, tau, token_count)
		SELECT $1, $2, req.item_id, req.at, req.peak, req.tau, req.token_count FROM req ORDER BY req.item_id
		ON CONFLICT (tenant_id, viewer_id, item_id) DO UPDATE
		SET t_last = EXCLUDED.t_last, peak = EXCLUDED.peak, tau = EXCLUDED.tau, token_count = EXCLUDED.token_count
		WHERE EXCLUDED.peak > a.peak * exp(-(GREATEST(EXCLUDED.t_last - a.t_last, 0))::float8 / EXCLUDED.tau)
		RETURNING a.item_id, a.t_last, a.peak)
	INSERT INTO reheats (tenant_id, viewer_id, item_id, clock, peak)
	SELECT $1, $2, up.item_id, up.t_last, up.peak FROM up
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
	err := db.derivedPipeline(ctx, tenantID, func(b *pgx.Batch) {
		b.Queue(reheatSQL, tenantID, viewerID, ids, peaks, clock)
	})
	if err != nil {
		return fmt.Errorf("reheat: %w", err)
	}
	return nil
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
