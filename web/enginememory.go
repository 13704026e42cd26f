package web

import (
	"context"

	"github.com/perpetuity/perpetuity/memory/store"
)

// Ranker is the memory engine's retrieval, as the memory browser uses it:
// the ids of a user's items (or of every user of the tenant) that best
// match a query, best first.
type Ranker interface {
	Rank(ctx context.Context, tenantID, userID int64, query string, limit int) ([]int64, error)
	RankTenant(ctx context.Context, tenantID int64, query string, limit int) ([]int64, error)
}

// EngineMemory searches memory as retrieval sees it (the engine's exact
// scan and ranking) and reads each item's details, labels and heat from the
// store. An empty query lists the latest items.
type EngineMemory struct {
	*SQLMemory
	rank Ranker
}

// NewEngineMemory builds the memory browser's backend on the engine.
func NewEngineMemory(db *store.DB, r Ranker) *EngineMemory {
	return &EngineMemory{SQLMemory: NewSQLMemory(db), rank: r}
}

// Search implements Memory.
func (m *EngineMemory) Search(ctx context.Context, tenantID, userID int64, query string, limit int) ([]Item, error) {
	if query == "" {
		return m.SQLMemory.Search(ctx, tenantID, userID, query, limit)
	}
	var ids []int64
	var err error
	if userID == 0 {
		ids, err = m.rank.RankTenant(ctx, tenantID, query, limit)
	} else {
		ids, err = m.rank.Rank(ctx, tenantID, userID, query, limit)
	}
	if err != nil || len(ids) == 0 {
		return nil, err
	}
	rows, err := m.db.ItemsByID(ctx, tenantID, userID, ids)
	if err != nil {
		return nil, err
	}
	by := make(map[int64]Item, len(rows))
	for _, it := range fromStore(rows) {
		by[it.ID] = it
	}
	out := make([]Item, 0, len(ids))
	for _, id := range ids {
		if it, ok := by[id]; ok {
			out = append(out, it)
		}
	}
	return out, nil
}
