package memory

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/perpetuity/perpetuity/memory/arena"
	"github.com/perpetuity/perpetuity/memory/arena/synth"
)

// BenchmarkSmoothHits is what smoothing costs a frame's hybrid scan at 250k
// items (10 users, the asker holding a tenth; memory/arena's
// BenchmarkHybridSearch tenant): the scan of Candidates and of smoothPool
// matches, and smoothHits over the pool.
func BenchmarkSmoothHits(b *testing.B) {
	g := synth.New(synth.Config{Seed: 42, Items: 250_000, Users: 10})
	corpus := g.Corpus()
	r := rand.New(rand.NewPCG(42, 100))
	centres := make([][]float64, 64)
	for c := range centres {
		centres[c] = make([]float64, 100)
		for d := range centres[c] {
			centres[c][d] = r.NormFloat64()
		}
	}
	for i := range corpus {
		corpus[i].Dense, corpus[i].DenseInv = benchVector(centres[r.IntN(len(centres))], r)
	}
	a := arena.New(arena.Options{Dims: 100})
	for i := 0; i < len(corpus); i += 4096 {
		a.Add(corpus[i:min(i+4096, len(corpus))]...)
	}
	qs := g.Queries(corpus, 200, 3, 8)
	for i := range qs {
		qs[i].Dense, qs[i].DenseInv = benchVector(centres[r.IntN(len(centres))], r)
	}
	const candidates = 120
	for _, k := range []int{candidates, smoothPool} {
		b.Run(fmt.Sprintf("scan/K=%d", k), func(b *testing.B) {
			for i := 0; b.Loop(); i++ {
				q := qs[i%len(qs)]
				q.K = k
				a.Search(q)
			}
		})
	}
	pool := make([][]arena.Hit, len(qs))
	top := make([][]arena.Hit, len(qs))
	for i, q := range qs {
		q.K = smoothPool
		pool[i] = a.Search(q)
		top[i] = pool[i][:min(candidates, len(pool[i]))]
	}
	b.Run("smooth", func(b *testing.B) {
		for i := 0; b.Loop(); i++ {
			smoothHits(a, pool[i%len(qs)], candidates, nil)
		}
	})
}

func benchVector(c []float64, r *rand.Rand) ([]int8, float32) {
	x := make([]float64, len(c))
	top := 0.0
	for d := range x {
		x[d] = c[d] + r.NormFloat64()
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
