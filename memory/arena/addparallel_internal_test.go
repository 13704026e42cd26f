package arena

import (
	"math/rand/v2"
	"reflect"
	"testing"
)

// TestAddParallelEqualsSequential: a batch added on several workers builds
// the very arena that adding its items one by one builds (chunks, their
// numbering, sealed postings or frequencies, binary codes, statistics),
// lexical and dense, with users interleaved and chunks already open.
func TestAddParallelEqualsSequential(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		dims int
	}{{"lexical", 0}, {"dense", 16}} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r := rand.New(rand.NewPCG(20, uint64(tc.dims)))
			items := make([]Item, 3*parallelAddMin)
			for i := range items {
				it := Item{ID: int64(i + 1), Seq: int64(i + 1), User: int64(1 + r.IntN(5)), Conv: int64(r.IntN(30)),
					BornClock: int64(i), Tau: 100, Tokens: 10, Length: 9}
				for range 1 + r.IntN(12) {
					it.Terms = append(it.Terms, TermID(r.IntN(300)+r.IntN(2)*denseTerms))
					it.Freqs = append(it.Freqs, uint16(1+r.IntN(3)))
				}
				if tc.dims > 0 && r.IntN(10) > 0 {
					it.Dense = make([]int8, tc.dims)
					for d := range it.Dense {
						it.Dense[d] = int8(r.IntN(255) - 127)
					}
					it.DenseInv = 0.01
				}
				items[i] = it
			}
			opts := Options{Dims: tc.dims, ChunkItems: 100, Workers: 4}
			seq, par := New(opts), New(opts)
			// Both start with open chunks, then take the rest: one by one,
			// and as one batch.
			seq.Add(items[:150]...)
			par.Add(items[:150]...)
			for _, it := range items[150:] {
				seq.Add(it)
			}
			par.Add(items[150:]...)
			if len(par.chunks) != len(seq.chunks) {
				t.Fatalf("%d chunks, want %d", len(par.chunks), len(seq.chunks))
			}
			for i := range seq.chunks {
				if !reflect.DeepEqual(par.chunks[i], seq.chunks[i]) {
					t.Fatalf("chunk %d differs (user %d / %d, %d / %d items)", i,
						par.chunks[i].user, seq.chunks[i].user, par.chunks[i].n(), seq.chunks[i].n())
				}
			}
			if !reflect.DeepEqual(par.users, seq.users) || par.n != seq.n || par.totalLen != seq.totalLen ||
				par.postings != seq.postings || par.watermark != seq.watermark ||
				!reflect.DeepEqual(par.dfDense, seq.dfDense) || !reflect.DeepEqual(par.dfSparse, seq.dfSparse) {
				t.Fatal("the arenas' statistics differ")
			}
		})
	}
}
