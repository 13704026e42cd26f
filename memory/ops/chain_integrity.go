package ops

import (
	"cmp"
	"context"
	"fmt"
	"slices"

	"github.com/perpetuity/perpetuity/memory/chain"
	"github.com/perpetuity/perpetuity/memory/dict"
	"github.com/perpetuity/perpetuity/memory/store"
)

// Chain graph invariants (issue 17): one writer derives every edge from
// the tenant log by deterministic rules, so the stored graph is checked
// against a rebuild from scratch, besides its shape.
const (
	// An edge, its two ends and its user are one memory user of the
	// tenant: edges never cross owners (nor tenants: the ends are the
	// tenant's by their keys).
	InvChainOwner = "chain.owner"
	// Both ends of an edge exist (the foreign keys hold it; checked still).
	InvChainDangling = "chain.dangling"
	// The writer's watermark is at most the tenant head.
	InvChainWatermark = "chain.watermark"
	// The stored edges are exactly those a rebuild up to the watermark
	// derives: none missing, none extra, each with its weight and user.
	InvChainRebuild = "chain.rebuild"
)

// chainLexicon is the lexicon the rebuild reads, parsed once per checker.
func (c *Checker) chainLexicon() (chain.Lexicon, error) {
	if c.ChainLexicon != nil {
		return c.ChainLexicon, nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.lex == nil {
		d, err := dict.Builtin(chain.LexiconVersion)
		if err != nil {
			return nil, fmt.Errorf("chain lexicon: %w", err)
		}
		c.lex = d
	}
	return c.lex, nil
}

// snapshotChain is the check's snapshot as the rebuild's batch reader.
type snapshotChain struct {
	r        *store.IntegrityReader
	tenantID int64
}

func (s snapshotChain) ReadChainBatch(ctx context.Context, tenantID, after, upto int64) (store.ChainBatch, error) {
	if tenantID != s.tenantID {
		return store.ChainBatch{}, fmt.Errorf("integrity snapshot of tenant %d asked for tenant %d", s.tenantID, tenantID)
	}
	return s.r.ReadChainBatch(ctx, after, upto)
}

// edgeKey is an edge's identity (the table's key within a tenant).
type edgeKey struct {
	Src      int64  `json:"src_id"`
	Relation string `json:"relation"`
	Dst      int64  `json:"dst_id"`
}

func keyOf(e store.ChainEdge) edgeKey { return edgeKey{e.Src, e.Relation, e.Dst} }

func (k *checkRun) checkChain(ctx context.Context, r *store.IntegrityReader) error {
	mark, err := r.ChainHead(ctx)
	if err != nil {
		return err
	}
	stored, err := r.ChainEdges(ctx)
	if err != nil {
		return err
	}
	if mark > k.head.Seq {
		k.add(InvChainWatermark, nil, fmt.Sprintf("the chain writer's watermark %d is past the tenant head %d", mark, k.head.Seq),
			map[string]any{"watermark": mark, "head_seq": k.head.Seq})
	}
	for i := range stored {
		k.checkEdgeShape(&stored[i])
	}
	upto := min(mark, k.head.Seq)
	if upto < k.head.Seq {
		k.note("chain edges past the writer's watermark %d (head %d) not compared: it has not caught up", mark, k.head.Seq)
	}
	if upto == 0 && len(stored) == 0 {
		return nil
	}
	lex, err := k.c.chainLexicon()
	if err != nil {
		return err
	}
	want, err := chain.Rebuild(ctx, snapshotChain{r: r, tenantID: k.tenantID}, lex, k.c.ChainRules, k.tenantID, upto)
	if err != nil {
		return fmt.Errorf("chain rebuild: %w", err)
	}
	k.compareChain(stored, want, upto)
	return nil
}

func (k *checkRun) checkEdgeShape(e *store.CheckEdge) {
	src := e.Src
	rows := map[string]any{"src_id": e.Src, "dst_id": e.Dst, "relation": e.Relation, "user_id": e.UserID,
		"src_user_id": e.SrcUser, "dst_user_id": e.DstUser}
	if e.SrcUser == nil || e.DstUser == nil {
		k.add(InvChainDangling, &src, fmt.Sprintf("%s edge %d>%d names an item that does not exist", e.Relation, e.Src, e.Dst), rows)
		return
	}
	if !e.UserIsUser || *e.SrcUser != e.UserID || *e.DstUser != e.UserID {
		k.add(InvChainOwner, &src, fmt.Sprintf("%s edge %d>%d of user %d joins items of users %d and %d",
			e.Relation, e.Src, e.Dst, e.UserID, *e.SrcUser, *e.DstUser), rows)
	}
}

// compareChain reports every difference between the stored edges and the
// rebuild's, by key.
func (k *checkRun) compareChain(stored []store.CheckEdge, want []chain.Edge, upto int64) {
	have := make(map[edgeKey]store.ChainEdge, len(stored))
	for _, e := range stored {
		have[keyOf(e.ChainEdge)] = e.ChainEdge
	}
	derived := make(map[edgeKey]store.ChainEdge, len(want))
	for _, e := range want {
		derived[keyOf(e.ChainEdge)] = e.ChainEdge
	}
	keys := make([]edgeKey, 0, len(have)+len(derived))
	for key := range have {
		keys = append(keys, key)
	}
	for key := range derived {
		if _, ok := have[key]; !ok {
			keys = append(keys, key)
		}
	}
	slices.SortFunc(keys, func(a, b edgeKey) int {
		return cmp.Or(cmp.Compare(a.Src, b.Src), cmp.Compare(a.Relation, b.Relation), cmp.Compare(a.Dst, b.Dst))
	})
	for _, key := range keys {
		got, inStore := have[key]
		exp, inRebuild := derived[key]
		src := key.Src
		switch {
		case !inStore:
			k.add(InvChainRebuild, &src, fmt.Sprintf("%s edge %d>%d is missing: a rebuild up to %d derives it", key.Relation, key.Src, key.Dst, upto),
				map[string]any{"edge": key, "missing": true, "user_id": exp.UserID, "weight": exp.Weight, "upto": upto})
		case !inRebuild:
			k.add(InvChainRebuild, &src, fmt.Sprintf("%s edge %d>%d is extra: a rebuild up to %d does not derive it", key.Relation, key.Src, key.Dst, upto),
				map[string]any{"edge": key, "extra": true, "user_id": got.UserID, "weight": got.Weight, "upto": upto})
		case got != exp:
			k.add(InvChainRebuild, &src, fmt.Sprintf("%s edge %d>%d differs from its rebuild", key.Relation, key.Src, key.Dst),
				map[string]any{"edge": key, "stored": map[string]any{"user_id": got.UserID, "weight": got.Weight},
					"rebuilt": map[string]any{"user_id": exp.UserID, "weight": exp.Weight}, "upto": upto})
		}
	}
}
