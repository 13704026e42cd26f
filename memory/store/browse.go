package store

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"
)

// The console's memory browser reads items here: full-text and substring
// search, a conversation, one item, ids ranked by the engine, and a user's
// heat overview. Heat is always as the item's owner sees it (the viewer of
// every row is the owner), so one query can list several users' items.

// BrowseItem is one stored item with what the memory browser shows of it.
type BrowseItem struct {
	ID, UserID, ConversationID int64
	User                       string // the owner's name
	Conversation               string // title, or the conversation key
	Role, Speaker              string
	Part                       int
	Body                       string
	BornAt                     time.Time
	Tokens                     []string
	BornClock                  int64
	Tau                        float64
	TLast                      *int64   // the owner's activation; nil: never activated
	Peak                       *float64 // with TLast
	Clock                      int64    // the owner's clock now
	Reheats                    []BrowseReheat
}

// BrowseReheat is one adopted reheat of an item for its owner.
type BrowseReheat struct {
	Clock int64
	Peak  float64
}

const browseColumns = `
SELECT i.id, i.user_id, i.conversation_id, v.name, coalesce(nullif(c.title, ''), c.ext_key),
       i.role, i.speaker, i.part, i.body, i.born_at, i.tokens, i.born_clock, i.tau,
       a.t_last, a.peak, v.clock
FROM items i
JOIN conversations c ON c.tenant_id = i.tenant_id AND c.id = i.conversation_id
JOIN memory_users v ON v.tenant_id = i.tenant_id AND v.id = i.user_id
LEFT JOIN activations a ON a.tenant_id = i.tenant_id AND a.viewer_id = i.user_id AND a.item_id = i.id`

// browseSearchSQL ranks full-text matches first; a substring match (names,
// code, anything the text parser splits oddly) still finds the item. No
// query lists the newest items; user 0 is every user of the tenant.
const browseSearchSQL = browseColumns + `
WHERE i.tenant_id = $1 AND ($2::bigint = 0 OR i.user_id = $2)
  AND ($3::text = '' OR to_tsvector('simple', i.body) @@ websearch_to_tsquery('simple', $3::text)
       OR i.body ILIKE '%' || $4::text || '%' ESCAPE '\')
ORDER BY CASE WHEN $3::text = '' THEN 0
              ELSE ts_rank(to_tsvector('simple', i.body), websearch_to_tsquery('simple', $3::text)) END DESC,
         i.id DESC
LIMIT $5`

const browseConversationSQL = browseColumns + `
WHERE i.tenant_id = $1 AND i.conversation_id = $2
ORDER BY i.born_at, i.message_id, i.part`

const browseConversationExistsSQL = `SELECT EXISTS (SELECT 1 FROM conversations WHERE tenant_id = $1 AND id = $2)`

const browseIDsSQL = browseColumns + `
WHERE i.tenant_id = $1 AND ($2::bigint = 0 OR i.user_id = $2) AND i.id = ANY($3)`

const browseReheatsSQL = `
SELECT r.item_id, r.clock, r.peak FROM reheats r
JOIN items i ON i.tenant_id = r.tenant_id AND i.id = r.item_id AND i.user_id = r.viewer_id
WHERE r.tenant_id = $1 AND r.item_id = ANY($2)
ORDER BY r.item_id, r.clock`

// likePattern escapes q for ILIKE.
func likePattern(q string) string {
	out := make([]byte, 0, len(q))
	for i := 0; i < len(q); i++ {
		if c := q[i]; c == '\\' || c == '%' || c == '_' {
			out = append(out, '\\')
		}
		out = append(out, q[i])
	}
	return string(out)
}

// SearchItems finds the items of userID (of every user of the tenant when
// userID is 0) matching query, best first; an empty query lists the newest.
func (db *DB) SearchItems(ctx context.Context, tenantID, userID int64, query string, limit int) ([]BrowseItem, error) {
	return db.browse(ctx, tenantID, nil, browseSearchSQL, tenantID, userID, query, likePattern(query), limit)
}

// ItemsByID reads the items among ids of userID (any user of the tenant
// when 0), in no particular order; ids of another tenant are not found.
func (db *DB) ItemsByID(ctx context.Context, tenantID, userID int64, ids []int64) ([]BrowseItem, error) {
	return db.browse(ctx, tenantID, nil, browseIDsSQL, tenantID, userID, ids)
}

// ConversationItems reads every item of one conversation in order; a
// conversation of another tenant is ErrNotFound.
func (db *DB) ConversationItems(ctx context.Context, tenantID, conversationID int64) ([]BrowseItem, error) {
	exists := func(ctx context.Context, tx pgx.Tx) error {
		var ok bool
		if err := tx.QueryRow(ctx, browseConversationExistsSQL, tenantID, conversationID).Scan(&ok); err != nil {
			return err
		}
		if !ok {
			return ErrNotFound
		}
		return nil
	}
	return db.browse(ctx, tenantID, exists, browseConversationSQL, tenantID, conversationID)
}

// browse runs one item query and the reheat read in a snapshot; check,
// when given, runs first and may refuse.
func (db *DB) browse(ctx context.Context, tenantID int64, check func(context.Context, pgx.Tx) error, sql string, args ...any) ([]BrowseItem, error) {
	var out []BrowseItem
	err := db.InTenantRead(ctx, tenantID, func(tx pgx.Tx) error {
		if check != nil {
			if err := check(ctx, tx); err != nil {
				return err
			}
		}
		r, err := tx.Query(ctx, sql, args...)
		if err != nil {
			return err
		}
		out, err = pgx.CollectRows(r, func(row pgx.CollectableRow) (BrowseItem, error) {
			var b BrowseItem
			err := row.Scan(&b.ID, &b.UserID, &b.ConversationID, &b.User, &b.Conversation, &b.Role, &b.Speaker, &b.Part,
				&b.Body, &b.BornAt, &b.Tokens, &b.BornClock, &b.Tau, &b.TLast, &b.Peak, &b.Clock)
			return b, err
		})
		if err != nil || len(out) == 0 {
			return err
		}
		ids := make([]int64, len(out))
		at := make(map[int64]int, len(out))
		for i, b := range out {
			ids[i], at[b.ID] = b.ID, i
		}
		rr, err := tx.Query(ctx, browseReheatsSQL, tenantID, ids)
		if err != nil {
			return err
		}
		var id int64
		var h BrowseReheat
		_, err = pgx.ForEachRow(rr, []any{&id, &h.Clock, &h.Peak}, func() error {
			if i, ok := at[id]; ok {
				out[i].Reheats = append(out[i].Reheats, h)
			}
			return nil
		})
		return err
	})
	return out, err
}

// HeatRow is what one item's heat now takes: its owner's activation (nil
// when never activated) and its decay constant.
type HeatRow struct {
	TLast *int64
	Peak  *float64
	Tau   float64
}

const userHeatSQL = `
SELECT a.t_last, a.peak, i.tau FROM items i
LEFT JOIN activations a ON a.tenant_id = i.tenant_id AND a.viewer_id = i.user_id AND a.item_id = i.id
WHERE i.tenant_id = $1 AND i.user_id = $2`

const userClockSQL = `SELECT clock FROM memory_users WHERE tenant_id = $1 AND id = $2`

// UserHeat reads, for the user's heat overview, the user's clock and each
// of their items' activation, one row at a time into fn (a user may have
// many items; nothing is kept here). A user of another tenant is
// ErrNotFound.
func (db *DB) UserHeat(ctx context.Context, tenantID, userID int64, fn func(clock int64, r HeatRow)) error {
	return db.InTenantRead(ctx, tenantID, func(tx pgx.Tx) error {
		var clock int64
		if err := tx.QueryRow(ctx, userClockSQL, tenantID, userID).Scan(&clock); err != nil {
			return notFound(err)
		}
		rows, err := tx.Query(ctx, userHeatSQL, tenantID, userID)
		if err != nil {
			return err
		}
		var r HeatRow
		_, err = pgx.ForEachRow(rows, []any{&r.TLast, &r.Peak, &r.Tau}, func() error {
			fn(clock, r)
			return nil
		})
		return err
	})
}
