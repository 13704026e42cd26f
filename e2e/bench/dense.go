package bench

import (
	"context"
	"fmt"
	"runtime"
	"sync"

	"github.com/perpetuity/perpetuity/memory"
	"github.com/perpetuity/perpetuity/memory/arena"
	"github.com/perpetuity/perpetuity/memory/dict"
	"github.com/perpetuity/perpetuity/memory/store"
	"github.com/perpetuity/perpetuity/memory/text"
)

// Dictionary v3 beside v1 (issue 16). The synthetic text is the same; only
// the dictionary a tenant serves changes. Rows, arena items and query
// vectors come from the product's own functions (memory.DeriveRow,
// memory.ToArenaItem, dict.Space.Query), so a v3 item carries the vector
// capture would store for its text, not a random one.

// DenseVersion is the dictionary version with word vectors measured beside
// v1.
const DenseVersion = 3

// loadDense loads the dense version's lexicon (into the database too, so
// engines can serve a tenant on it) and its vectors, and the space of a
// tenant created on it: the dictionary's common component, as
// memory/dense.go uses for a tenant with none frozen.
func loadDense(ctx context.Context, db *store.DB) (memory.DictTerms, *dict.Space, error) {
	d, err := dict.Builtin(DenseVersion)
	if err != nil {
		return memory.DictTerms{}, nil, err
	}
	v, err := dict.BuiltinVectors(DenseVersion)
	if err != nil {
		return memory.DictTerms{}, nil, err
	}
	if _, err := db.EnsureDictionary(ctx, d.Version, d.Name, d.Entries()); err != nil {
		return memory.DictTerms{}, nil, err
	}
	sp, err := dict.NewSpace(v, nil)
	if err != nil {
		return memory.DictTerms{}, nil, fmt.Errorf("dense space v%d: %w", DenseVersion, err)
	}
	return memory.DictTerms{D: d, V: v}, sp, nil
}

// terms is the dictionary of a version the kit knows, and its dense space
// (nil for a version without vectors).
func (k *kit) terms(version int) (memory.DictTerms, *dict.Space, error) {
	switch version {
	case k.dict.Version:
		return memory.DictTerms{D: k.dict}, nil, nil
	case k.dense.D.Version:
		return k.dense, k.space, nil
	}
	return memory.DictTerms{}, nil, fmt.Errorf("bench: no dictionary v%d (the bench knows v%d and v%d)", version, k.dict.Version, k.dense.D.Version)
}

// arenaOptions are the options of an arena of a version: one with vectors
// holds them (memory/resident.go sizes it from the space).
func arenaOptions(sp *dict.Space) arena.Options {
	if sp == nil {
		return arena.Options{}
	}
	return arena.Options{Dims: sp.V.Dims}
}

// arenaItems turns synthetic items into what a resident arena of each
// version holds for their text: the row capture derives from the stored
// tokens (memory.DeriveRow), converted by the catch-up's own code
// (memory.ToArenaItem). out[v][i] is item i under versions[v]. Model token
// counts are left at zero: the scan does not read them.
func (k *kit) arenaItems(items []arena.Item, versions []*scanArena) [][]arena.Item {
	out := make([][]arena.Item, len(versions))
	for v := range out {
		out[v] = make([]arena.Item, len(items))
	}
	workers := runtime.GOMAXPROCS(0)
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for i := w; i < len(items); i += workers {
				it := &items[i]
				tokens := k.vocab.Tokens(it)
				for v, s := range versions {
					row := memory.DeriveRow(s.terms, tokens)
					out[v][i] = memory.ToArenaItem(store.ArenaItem{
						ID: it.ID, Seq: it.Seq, UserID: it.User, ConvID: it.Conv, BornClock: it.BornClock, Tau: float64(it.Tau),
						TermIDs: row.TermIDs, Freqs: row.Freqs, Length: int32(row.Length), Dense: row.Dense,
					}, s.space)
				}
			}
		})
	}
	wg.Wait()
	return out
}

// arenaQuery is the scan a frame runs for a question under a version: its
// normalized words' query terms and, with vectors, the question's vector
// (memory/frame.go, memory/dense.go denseQuery).
func arenaQuery(question string, users []int64, k int, terms memory.DictTerms, sp *dict.Space) arena.Query {
	toks := text.Normalize(question)
	q := arena.Query{Terms: terms.QueryTerms(toks), Users: users, K: k}
	if sp != nil {
		q.Dense, q.DenseInv = sp.Query(toks)
	}
	return q
}
