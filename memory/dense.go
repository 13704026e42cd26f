package memory

import (
	"fmt"
	"sync"

	"github.com/perpetuity/perpetuity/memory/arena"
	"github.com/perpetuity/perpetuity/memory/dict"
	"github.com/perpetuity/perpetuity/memory/guard"
)

// Dense retrieval (issue 16): a dictionary version that ships word vectors
// (dict.HasBuiltinVectors) gives its rows a raw SIF vector (DeriveRow), and
// an arena of that version holds each row's vector with the tenant's common
// component removed (dict.Space), scored with the words by the hybrid scan.

// vectorCache parses each shipped version's vectors once per engine.
type vectorCache struct {
	mu sync.Mutex
	by map[int]*vectorSlot
}

type vectorSlot struct {
	once sync.Once
	v    *dict.Vectors
	err  error
}

func newVectorCache() *vectorCache { return &vectorCache{by: map[int]*vectorSlot{}} }

// get returns the version's vectors; nil without error for a version that
// ships none.
func (vc *vectorCache) get(version int) (*dict.Vectors, error) {
	if vc == nil || !dict.HasBuiltinVectors(version) {
		return nil, nil
	}
	vc.mu.Lock()
	s := vc.by[version]
	if s == nil {
		s = &vectorSlot{}
		vc.by[version] = s
	}
	vc.mu.Unlock()
	// A panic inside Do would leave it done with neither vectors nor an
	// error: dense retrieval off for the version, silently.
	s.once.Do(func() {
		s.err = guard.Run(func() (err error) { s.v, err = dict.BuiltinVectors(version); return err })
	})
	return s.v, s.err
}

// space is the dense space an arena of version uses for a tenant whose
// frozen component is component (nil: the dictionary's); nil for a version
// without vectors.
func (vc *vectorCache) space(version int, component []byte) (*dict.Space, error) {
	v, err := vc.get(version)
	if err != nil || v == nil {
		return nil, err
	}
	sp, err := dict.NewSpace(v, component)
	if err != nil {
		return nil, fmt.Errorf("dense space v%d: %w", version, err)
	}
	return sp, nil
}

// denseQuery is the query side of a hybrid scan: nothing for an arena
// without vectors.
func denseQuery(sp *dict.Space, tokens []string, aq *arena.Query) {
	if sp == nil {
		return
	}
	aq.Dense, aq.DenseInv = sp.Query(tokens)
}

// denseQueryOf is denseQuery of meaning, falling back on every token when
// no word of meaning has a vector.
func denseQueryOf(sp *dict.Space, meaning, tokens []string, aq *arena.Query) {
	if denseQuery(sp, meaning, aq); aq.Dense == nil && len(meaning) < len(tokens) {
		denseQuery(sp, tokens, aq)
	}
}

// countDenseZ is how far above the mean (in fused standard deviations) a
// turn sharing no word with a memory_count query must rank to count: the
// hybrid scan ranks every turn above the mean, and a count of "turns about
// X" must not grow with the store.
const countDenseZ = 1.5

// countable keeps the hits memory_count counts: every lexical match, and
// turns matched by meaning alone when they stand out.
func countable(hits []arena.Hit) []arena.Hit {
	out := hits[:0:0]
	for _, h := range hits {
		if !h.DenseOnly || h.Score >= countDenseZ {
			out = append(out, h)
		}
	}
	return out
}
