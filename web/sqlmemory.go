package web

import (
	"context"

	"github.com/perpetuity/perpetuity/memory"
	"github.com/perpetuity/perpetuity/memory/store"
)

// SQLMemory is a Memory read straight from the store: full-text and
// substring search over one user's items (or all the tenant's), heat from
// the activation row, the reheat history and the owner's clock. It is not
// retrieval (no dictionary, no pooled scoring); the engine replaces it
// when it can say what retrieval would see.
type SQLMemory struct {
	db *store.DB
}

// NewSQLMemory reads memory for the browser from db.
func NewSQLMemory(db *store.DB) *SQLMemory { return &SQLMemory{db: db} }

// maxTerms bounds the retrieval terms kept per item.
const maxTerms = 40

// Search implements Memory.
func (m *SQLMemory) Search(ctx context.Context, tenantID, userID int64, query string, limit int) ([]Item, error) {
	rows, err := m.db.SearchItems(ctx, tenantID, userID, query, limit)
	return fromStore(rows), err
}

// Conversation implements Memory.
func (m *SQLMemory) Conversation(ctx context.Context, tenantID, conversationID int64) ([]Item, error) {
	rows, err := m.db.ConversationItems(ctx, tenantID, conversationID)
	return fromStore(rows), err
}

// Item implements Memory.
func (m *SQLMemory) Item(ctx context.Context, tenantID, itemID int64) (Item, error) {
	rows, err := m.db.ItemsByID(ctx, tenantID, 0, []int64{itemID})
	if err != nil {
		return Item{}, err
	}
	if len(rows) != 1 {
		return Item{}, store.ErrNotFound
	}
	return fromStore(rows)[0], nil
}

func fromStore(rows []store.BrowseItem) []Item {
	if len(rows) == 0 {
		return nil
	}
	out := make([]Item, len(rows))
	for i, row := range rows {
		out[i] = Item{
			ID: row.ID, UserID: row.UserID, User: row.User, ConversationID: row.ConversationID, Conversation: row.Conversation,
			Role: row.Role, Speaker: row.Speaker, Part: row.Part, Text: row.Body, BornAt: row.BornAt,
			Terms: terms(row.Tokens), Heat: trajectory(row),
		}
	}
	return out
}

// trajectory rebuilds an item's heat history for its owner. Without an
// activation row the owner never activated the item: it is drawn cold.
// The activation row is the latest adopted state; if the reheat log does
// not end there (an engine that does not log), it is added as a reheat.
func trajectory(row store.BrowseItem) memory.Trajectory {
	reheats := make([]memory.Activation, len(row.Reheats))
	for i, r := range row.Reheats {
		reheats[i] = memory.Activation{TLast: r.Clock, Peak: r.Peak}
	}
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
