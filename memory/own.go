package memory

import (
	"cmp"
	"slices"

	"github.com/perpetuity/perpetuity/memory/store"
)

// own applies a capture this process has just committed to the tenant's
// loaded arena, when it is the very next position of the tenant's log the
// arena has read: commits are ordered by the head row lock, so everything
// before it is in the arena already and nothing is skipped. The frame that
// follows then finds its catch-up empty and scans without waiting for it
// (frameread.go). Anything else (an arena not loaded, behind, or on a
// version the capture wrote no row for) is left to the catch-up, which
// reads the same rows from the store.
func (rs *residents) own(tenantID int64, got store.Captured, c store.Capture) {
	r := rs.held(tenantID)
	if r == nil {
		return
	}
	defer rs.done(r)
	// Never wait here: a capture must not sit behind a cold load of the
	// tenant (seconds at a million items). A catch-up under way brings
	// the capture itself.
	if !r.mu.TryLock() {
		return
	}
	defer r.mu.Unlock()
	defer rs.forgetOnPanic(r)
	if r.dict == 0 || r.watermark != got.Seq-1 || len(got.ItemIDs) != len(c.Items) {
		return
	}
	items := make([]store.ArenaItem, 0, len(c.Items))
	for i, it := range c.Items {
		k := slices.IndexFunc(it.Rows, func(row store.RetrievalRow) bool { return row.DictVersion == r.dict })
		if k < 0 {
			return
		}
		row := it.Rows[k]
		items = append(items, store.ArenaItem{
			ID: got.ItemIDs[i], Seq: got.Seq, UserID: c.UserID, ConvID: c.ConversationID,
			BornClock: got.Clock, Tau: it.Tau, TermIDs: row.TermIDs, Freqs: row.Freqs,
			Length: int32(row.Length), Tokens: int32(it.TokenCount), Dense: row.Dense,
		})
	}
	// The catch-up's order (store.catchUpItemSQL): by seq, then id.
	slices.SortFunc(items, func(a, b store.ArenaItem) int { return cmp.Compare(a.ID, b.ID) })
	rs.apply(tenantID, r.arena, store.CatchUp{Head: store.Head{Seq: got.Seq, DictVersion: r.dict}, Items: items}, r.space)
	r.watermark, r.tip = got.Seq, true
	rs.resize(r)
}

// held holds the tenant's resident as use does, or returns nil when it has
// none: a capture does not make an arena to load.
func (rs *residents) held(tenantID int64) *resident {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	r := rs.by[tenantID]
	if r == nil {
		return nil
	}
	r.use.refs++
	return r
}
