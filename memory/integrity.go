package memory

import (
	"context"

	"github.com/perpetuity/perpetuity/memory/arena"
	"github.com/perpetuity/perpetuity/memory/dict"
	"github.com/perpetuity/perpetuity/memory/store"
)

// ArenaState is a tenant's resident arena as it stood at one moment after
// catching up: which dictionary version its rows come from, how far it has
// read the tenant's log, and a digest of every item it holds.
type ArenaState struct {
	DictVersion int
	// Space is the arena's dense space (nil: no vectors); the store's side
	// of the comparison must load rows through it (ArenaDigestIn).
	Space     *dict.Space
	Watermark int64
	Items     map[int64]ArenaEntry // by item id
	Count     int                  // items held; more than len(Items) when an id is held twice
	Digest    uint64               // sum of the item digests
}

// ArenaEntry is one item as the arena holds it.
type ArenaEntry struct {
	Seq    int64  // log position it was committed at
	Digest uint64 // arena.ItemDigest: ids, terms, clock and decay constant
}

// ArenaSnapshot catches the tenant's arena up with the store, as a scan
// would, and reads it whole while no other catch-up can change it. The
// integrity check compares it with the store's rows at the same watermark.
func (e *Engine) ArenaSnapshot(ctx context.Context, tenantID int64) (ArenaState, error) {
	var st ArenaState
	err := e.res.locked(ctx, tenantID, func(r view) {
		st = ArenaState{DictVersion: r.dict, Space: r.space, Watermark: r.watermark, Items: make(map[int64]ArenaEntry, r.arena.Len())}
		r.arena.Each(func(_ int, it arena.Item) bool {
			d := arena.ItemDigest(it)
			st.Items[it.ID] = ArenaEntry{Seq: it.Seq, Digest: d}
			st.Count++
			st.Digest += d
			return true
		})
	})
	return st, err
}

// DeriveRow is an item's retrieval row under one dictionary, derived from
// its stored tokens: what capture stores, what a rollout re-derives and what
// the integrity check recomputes. Frequencies saturate at the column's
// 32767.
func DeriveRow(d Dictionary, tokens []string) store.RetrievalRow {
	ids, freqs, length := d.Terms(tokens)
	row := store.RetrievalRow{DictVersion: d.Version(), TermIDs: toInt32(ids), Freqs: toInt16(freqs), Length: length}
	if dd, ok := d.(denseDictionary); ok {
		row.Dense = dd.RawDense(tokens)
	}
	return row
}

// denseDictionary is a Dictionary whose rows carry a dense vector.
type denseDictionary interface {
	RawDense(tokens []string) []byte
}

// ArenaDigest is the digest the arena gives an item loaded from these
// store values, so the store's side of the comparison is computed exactly
// as catch-up would load it.
func ArenaDigest(it store.ArenaItem) uint64 { return arena.ItemDigest(toArenaItem(it, nil)) }

// ArenaDigestIn is ArenaDigest for an arena with vectors: the row's dense
// vector as the arena of that space holds it (ArenaState.Space).
func ArenaDigestIn(it store.ArenaItem, sp *dict.Space) uint64 {
	return arena.ItemDigest(toArenaItem(it, sp))
}
