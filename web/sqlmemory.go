package web

import (
	"context"
	"errors"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/perpetuity/perpetuity/memory"
	"github.com/perpetuity/perpetuity/memory/store"
)

// SQLMemory is a Memory read straight from the store: full-text and
// substring search over one user's items, heat from the activation row, the
// reheat history and the user's clock. It is not retrieval (no dictionary,
// no pooled scoring); the engine replaces it when it can say what retrieval
// would see.
type SQLMemory struct {
	db *store.DB
}

// NewSQLMemory reads memory for the browser from db.
func NewSQLMemory(db *store.DB) *SQLMemory { return &SQLMemory{db: db} }

// maxTerms bounds the retrieval terms listed per item.
const maxTerms = 40

// Columns shared by both queries; $2 is the viewer whose heat is shown.
const itemColumns = `
SELECT i.id, i.user_id, i.conversation_id, coalesce(nullif(c.title, ''), c.ext_key),
       i.role, i.speaker, i.part, i.body, i.born_at, i.tokens, i.born_clock, i.tau,
       a.t_last, a.peak, v.clock
FROM items i
JOIN conversations c ON c.tenant_id = i.tenant_id AND c.id = i.conversation_id
JOIN memory_users v ON v.tenant_id = i.tenant_id AND v.id = $2
LEFT JOIN activations a ON a.tenant_id = i.tenant_id AND a.viewer_id = $2 AND a.item_id = i.id`

// searchItemsSQL ranks full-text matches first; a substring match (names,
// code, anything the text parser splits oddly) still finds the item.
const searchItemsSQL = itemColumns + `
WHERE i.tenant_id = $1 AND i.user_id = $2
  AND ($3::text = '' OR to_tsvector('simple', i.body) @@ websearch_to_tsquery('simple', $3::text)
       OR i.body ILIKE '%' || $4::text || '%' ESCAPE '\')
ORDER BY CASE WHEN $3::text = '' THEN 0
              ELSE ts_rank(to_tsvector('simple', i.body), websearch_to_tsquery('simple', $3::text)) END DESC,
         i.id DESC
LIMIT $5`

const conversationOwnerSQL = `SELECT user_id FROM conversations WHERE tenant_id = $1 AND id = $2`

const conversationItemsSQL = itemColumns + `
WHERE i.tenant_id = $1 AND i.conversation_id = $3
ORDER BY i.message_id, i.part`

const itemOwnerSQL = `SELECT user_id FROM items WHERE tenant_id = $1 AND id = $2`

const oneItemSQL = itemColumns + `
WHERE i.tenant_id = $1 AND i.id = $3`

const reheatsSQL = `SELECT item_id, clock, peak FROM reheats
WHERE tenant_id = $1 AND viewer_id = $2 AND item_id = ANY($3) ORDER BY item_id, clock`

type itemRow struct {
	ID, UserID, ConversationID int64
	Conversation               string
	Role, Speaker              string
	Part                       int
	Body                       string
	BornAt                     time.Time
	Tokens                     []string
	BornClock                  int64
	Tau                        float64
	TLast                      *int64
	Peak                       *float64
	Clock                      int64
}

type reheatRow struct {
	ItemID int64
	Clock  int64
	Peak   float64
}

// likePattern escapes q for ILIKE.
func likePattern(q string) string {
	return strings.NewReplacer(`\`, `\\`, `%`, `\%`, `_`, `\_`).Replace(q)
}

// Search implements Memory.
func (m *SQLMemory) Search(ctx context.Context, tenantID, userID int64, query string, limit int) ([]Item, error) {
	var out []Item
	err := m.db.InTenantRead(ctx, tenantID, func(tx pgx.Tx) error {
		var err error
		out, err = m.items(ctx, tx, tenantID, userID, searchItemsSQL, tenantID, userID, query, likePattern(query), limit)
		return err
	})
	return out, err
}

// Conversation implements Memory.
func (m *SQLMemory) Conversation(ctx context.Context, tenantID, conversationID int64) ([]Item, error) {
	var out []Item
	err := m.db.InTenantRead(ctx, tenantID, func(tx pgx.Tx) error {
		var owner int64
		if err := tx.QueryRow(ctx, conversationOwnerSQL, tenantID, conversationID).Scan(&owner); err != nil {
			if errors.Is(err, pgx.ErrNoRows) {
				return store.ErrNotFound
			}
			return err
		}
		var err error
		out, err = m.items(ctx, tx, tenantID, owner, conversationItemsSQL, tenantID, owner, conversationID)
		return err
	})
	return out, err
}

// Item implements Memory.
func (m *SQLMemory) Item(ctx context.Context, tenantID, itemID int64) (Item, error) {
	var out []Item
	err := m.db.InTenantRead(ctx, tenantID, func(tx pgx.Tx) error {
		var owner int64
		if err := tx.QueryRow(ctx, itemOwnerSQL, tenantID, itemID).Scan(&owner); err != nil {
			if errors.Is(err, pgx.ErrNoRows) {
				return store.ErrNotFound
			}
			return err
		}
		var err error
		out, err = m.items(ctx, tx, tenantID, owner, oneItemSQL, tenantID, owner, itemID)
		return err
	})
	if err != nil {
		return Item{}, err
	}
	if len(out) != 1 {
		return Item{}, store.ErrNotFound
	}
	return out[0], nil
}

func (m *SQLMemory) items(ctx context.Context, tx pgx.Tx, tenantID, viewer int64, sql string, args ...any) ([]Item, error) {
	r, err := tx.Query(ctx, sql, args...)
	if err != nil {
		return nil, err
	}
	rows, err := pgx.CollectRows(r, pgx.RowToStructByPos[itemRow])
	if err != nil {
		return nil, err
	}
	ids := make([]int64, len(rows))
	for i, row := range rows {
		ids[i] = row.ID
	}
	rr, err := tx.Query(ctx, reheatsSQL, tenantID, viewer, ids)
	if err != nil {
		return nil, err
	}
	reheats, err := pgx.CollectRows(rr, pgx.RowToStructByPos[reheatRow])
	if err != nil {
		return nil, err
	}
	byItem := map[int64][]memory.Activation{}
	for _, h := range reheats {
		byItem[h.ItemID] = append(byItem[h.ItemID], memory.Activation{TLast: h.Clock, Peak: h.Peak})
	}
	out := make([]Item, len(rows))
	for i, row := range rows {
		out[i] = Item{
			ID: row.ID, UserID: row.UserID, ConversationID: row.ConversationID, Conversation: row.Conversation,
			Role: row.Role, Speaker: row.Speaker, Part: row.Part, Text: row.Body, BornAt: row.BornAt,
			Terms: terms(row.Tokens), Heat: trajectory(row, byItem[row.ID]),
		}
	}
	return out, nil
}

// trajectory rebuilds an item's heat history for one viewer. Without an
// activation row the viewer never activated the item: it is drawn cold.
// The activation row is the latest adopted state; if the reheat log does
// not end there (an engine that does not log), it is added as a reheat.
func trajectory(row itemRow, reheats []memory.Activation) memory.Trajectory {
	t := memory.Trajectory{Tau: row.Tau, Now: row.Clock, Born: memory.Activation{TLast: row.BornClock}, Reheats: reheats}
	if row.TLast == nil || row.Peak == nil {
		return t
	}
	last := memory.Activation{TLast: *row.TLast, Peak: *row.Peak}
	switch {
	case last.TLast == row.BornClock && len(reheats) == 0:
		t.Born.Peak = last.Peak
	default:
		// Reheated since: the row no longer tells the birth peak.
		t.Born.Peak = memory.BornPeak
		if n := len(reheats); n == 0 || reheats[n-1] != last {
			if last.TLast > row.BornClock {
				t.Reheats = append(t.Reheats, last)
			}
		}
	}
	return t
}

// terms lists an item's distinct stored tokens in order of appearance.
func terms(tokens []string) []string {
	seen := make(map[string]bool, len(tokens))
	var out []string
	for _, t := range tokens {
		if t == "" || seen[t] {
			continue
		}
		seen[t] = true
		out = append(out, t)
		if len(out) == maxTerms {
			break
		}
	}
	return out
}
