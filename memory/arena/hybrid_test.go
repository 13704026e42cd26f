package arena_test

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/perpetuity/perpetuity/memory/arena"
)

const testDims = 16

// withDense gives most items a random unit-ish int8 vector; a few keep none.
func withDense(r *rand.Rand, items []arena.Item, clusters int) {
	centres := make([][]float64, clusters)
	for c := range centres {
		centres[c] = make([]float64, testDims)
		for d := range centres[c] {
			centres[c][d] = r.NormFloat64()
		}
	}
	for i := range items {
		if r.IntN(10) == 0 {
			continue
		}
		c := centres[r.IntN(clusters)]
		items[i].Dense, items[i].DenseInv = quantize(c, r, 0.5)
	}
}

func quantize(c []float64, r *rand.Rand, noise float64) ([]int8, float32) {
	x := make([]float64, len(c))
	top := 0.0
	for d := range x {
		x[d] = c[d] + noise*r.NormFloat64()
		top = max(top, math.Abs(x[d]))
	}
	q := make([]int8, len(x))
	var n int64
	for d := range x {
		q[d] = int8(math.Round(x[d] / top * 127))
		n += int64(q[d]) * int64(q[d])
	}
	return q, float32(1 / math.Sqrt(float64(n)))
}

// TestHybridEqualsReference: the arena's hybrid scan is exhaustive exact
// scoring, and 1..8 workers give one ranking, bit for bit.
func TestHybridEqualsReference(t *testing.T) {
	t.Parallel()
	shapes := []corpusShape{
		{items: 300, users: 3, vocab: 40, maxTerms: 8},
		{items: 2000, users: 5, vocab: 400, maxTerms: 20, emptyRate: 0.1, hotTerms: 3},
		{items: 50, users: 1, vocab: 10, maxTerms: 3, emptyRate: 0.5},
	}
	for si, s := range shapes {
		r := rand.New(rand.NewPCG(uint64(si), 16))
		items := randomCorpus(r, s)
		withDense(r, items, 6)
		var arenas []*arena.Arena
		for w := 1; w <= 8; w++ {
			a := arena.New(arena.Options{Workers: w, ChunkItems: 64, Dims: testDims})
			a.Add(items...)
			arenas = append(arenas, a)
		}
		for qi := range 40 {
			q := randomQuery(r, items, s)
			centre := make([]float64, testDims)
			for d := range centre {
				centre[d] = r.NormFloat64()
			}
			q.Dense, q.DenseInv = quantize(centre, r, 0.1)
			if qi%7 == 0 {
				q.Terms = nil // a question without a known word still has meaning
			}
			want := arena.ReferenceHybrid(items, q, arena.Options{Dims: testDims})
			first := arenas[0].Search(q)
			label := fmt.Sprintf("shape %d query %d", si, qi)
			sameRanking(t, label, first, want)
			for w, a := range arenas[1:] {
				got := a.Search(q)
				if len(got) != len(first) {
					t.Fatalf("%s: %d workers gave %d hits, 1 worker %d", label, w+2, len(got), len(first))
				}
				for i := range got {
					if got[i].ID != first[i].ID || got[i].Score != first[i].Score {
						t.Fatalf("%s: %d workers differ at %d: %+v vs %+v", label, w+2, i, got[i], first[i])
					}
				}
			}
		}
	}
}

// sameRanking compares with the reference up to summation rounding: the
// same scores within 1e-5, the same ids except among such near-ties.
func sameRanking(t *testing.T, label string, got, want []arena.Hit) {
	t.Helper()
	if len(got) != len(want) {
		// A near-tie at the K-th place or at the lexical floor can move
		// one item in or out; anything more is a bug.
		if d := len(got) - len(want); d > 1 || d < -1 {
			t.Fatalf("%s: %d hits, reference %d", label, len(got), len(want))
		}
	}
	for i := range min(len(got), len(want)) {
		if math.Abs(float64(got[i].Score-want[i].Score)) > 1e-5 {
			t.Fatalf("%s: hit %d scores %v, reference %v", label, i, got[i].Score, want[i].Score)
		}
		if got[i].ID != want[i].ID {
			if math.Abs(float64(got[i].Score-want[i].Score)) > 1e-5 {
				t.Fatalf("%s: hit %d is %d, reference %d", label, i, got[i].ID, want[i].ID)
			}
		}
	}
}

// TestHybridLexicalMatchKept: in a tiny store where the dense side
// disagrees, the turn sharing the question's word is still a hit.
func TestHybridLexicalMatchKept(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(1, 2))
	up := make([]float64, testDims)
	up[0] = 1
	down := make([]float64, testDims)
	down[0] = -1
	match, inv := quantize(down, r, 0)
	other, oinv := quantize(up, r, 0)
	items := []arena.Item{
		{ID: 1, Seq: 1, User: 1, Terms: []arena.TermID{7}, Dense: match, DenseInv: inv},
		{ID: 2, Seq: 2, User: 1, Terms: []arena.TermID{8}, Dense: other, DenseInv: oinv},
	}
	a := arena.New(arena.Options{Dims: testDims})
	a.Add(items...)
	qv, qinv := quantize(up, r, 0)
	hits := a.Search(arena.Query{Terms: []arena.TermID{7}, Users: []int64{1}, K: 5, Dense: qv, DenseInv: qinv})
	found := false
	for _, h := range hits {
		found = found || h.ID == 1
	}
	if !found {
		t.Fatalf("hits %+v lack the lexical match", hits)
	}
}

// TestDigestCoversDense: an item's vector is part of what the integrity
// check compares.
func TestDigestCoversDense(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(3, 4))
	c := make([]float64, testDims)
	c[1] = 1
	q, inv := quantize(c, r, 0.3)
	it := arena.Item{ID: 1, Seq: 1, User: 1, Terms: []arena.TermID{3}, Dense: q, DenseInv: inv}
	changed := it
	changed.Dense = append([]int8(nil), q...)
	changed.Dense[0]++
	plain := it
	plain.Dense, plain.DenseInv = nil, 0
	if arena.ItemDigest(it) == arena.ItemDigest(changed) || arena.ItemDigest(it) == arena.ItemDigest(plain) {
		t.Fatal("the digest ignores the dense vector")
	}
	a := arena.New(arena.Options{Dims: testDims})
	a.Add(it)
	back, ok := a.Item(0)
	if !ok || arena.ItemDigest(back) != arena.ItemDigest(it) {
		t.Fatalf("read back %+v digests differently from %+v", back, it)
	}
}
