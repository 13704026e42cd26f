package arena

import (
	"math/rand/v2"
	"slices"
	"testing"
)

// TestSortTerms: the radix sort sorts, whatever the lengths and the spread
// of the values (small ids, hashed ids near 2^32, one repeated value).
func TestSortTerms(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(3, 4))
	for _, n := range []int{0, 1, 5, 1023, 1024, 1025, 5000, 120_000} {
		for _, spread := range []uint32{1, 300, 1 << 20, 1<<32 - 1} {
			terms := make([]TermID, n)
			for i := range terms {
				terms[i] = TermID(r.Uint32() % spread)
				if spread == 1<<32-1 && i%3 == 0 {
					terms[i] |= denseTerms
				}
			}
			want := slices.Clone(terms)
			slices.Sort(want)
			sortTerms(terms)
			if !slices.Equal(terms, want) {
				t.Fatalf("n %d spread %d: not sorted", n, spread)
			}
		}
	}
}

func BenchmarkSortTerms(b *testing.B) {
	r := rand.New(rand.NewPCG(5, 6))
	src := make([]TermID, 100_000)
	for i := range src {
		src[i] = TermID(r.IntN(50_000))
	}
	terms := make([]TermID, len(src))
	b.Run("slices.Sort", func(b *testing.B) {
		for b.Loop() {
			copy(terms, src)
			slices.Sort(terms)
		}
	})
	b.Run("radix", func(b *testing.B) {
		for b.Loop() {
			copy(terms, src)
			sortTerms(terms)
		}
	})
}
