package memory

import (
	"github.com/perpetuity/perpetuity/memory/arena"
	"github.com/perpetuity/perpetuity/memory/chain"
)

// ChainGraph is the chain graph as the engine uses it (memory/chain.Writer).
type ChainGraph interface {
	Kick(tenantID int64)
	Around(tenantID, userID int64, ids []int64, per int) map[int64][]chain.Link
	// Forget lets the tenant's graph go when its arena is evicted.
	Forget(tenantID int64)
}

// chained is one match's chain neighbours.
type chained struct {
	id    int64
	links []chain.Link
}

// chainOf reads the chain neighbours of the best n matches from the
// writer's memory: a turn that continues a match across conversations
// ("my adoption meeting went well" for "we applied to the adoption
// agency") or a reply that answered from it. Like conversation
// neighbours, they rank a few places below their match; relevance orders
// them, heat stays out of it.
func (e *Engine) chainOf(tenantID, userID int64, hits []arena.Hit, n, per int) []chained {
	if e.opt.Chain == nil || n <= 0 || len(hits) == 0 {
		return nil
	}
	ids := hitIDs(hits[:min(n, len(hits))])
	got := e.opt.Chain.Around(tenantID, userID, ids, per)
	if len(got) == 0 {
		return nil
	}
	out := make([]chained, 0, len(got))
	for _, id := range ids {
		if ls := got[id]; len(ls) > 0 {
			out = append(out, chained{id: id, links: ls})
		}
	}
	return out
}
