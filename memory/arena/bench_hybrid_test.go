package arena_test

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/perpetuity/perpetuity/memory/arena"
	"github.com/perpetuity/perpetuity/memory/arena/synth"
)

// denseDims is the shipped vectors' length (dictionary v3).
const denseDims = 100

// BenchmarkHybridSearch is BenchmarkSearch's tenant with a 100-dim int8
// vector per item (clustered, as sentence vectors are), scanned lexically
// (mode=lexical: the v1 path, same arena), hybrid (mode=hybrid: the two
// stages) and hybrid with every cosine computed (mode=exact) in the same run. The
// bytes per item are those of the arena holding the vectors.
func BenchmarkHybridSearch(b *testing.B) {
	for _, n := range []int{250_000, 1_000_000} {
		var bc *benchCorpus
		for _, mode := range []string{"lexical", "hybrid", "exact"} {
			b.Run(itemsName(n)+"/mode="+mode, func(b *testing.B) {
				if bc == nil {
					bc = newDenseBenchCorpus(b, n)
				}
				c := *bc
				if mode != "hybrid" {
					c.queries = make([]arena.Query, len(bc.queries))
					for i, q := range bc.queries {
						if mode == "lexical" {
							q.Dense, q.DenseInv = nil, 0
						}
						q.ExactDense = mode == "exact"
						c.queries[i] = q
					}
				}
				runSearchBench(b, &c, false)
			})
		}
	}
}

func newDenseBenchCorpus(b *testing.B, items int) *benchCorpus {
	b.Helper()
	start := time.Now()
	g := synth.New(synth.Config{Seed: 42, Items: items, Users: 10})
	corpus := g.Corpus()
	r := rand.New(rand.NewPCG(42, 100))
	centres := make([][]float64, 64)
	for c := range centres {
		centres[c] = make([]float64, denseDims)
		for d := range centres[c] {
			centres[c][d] = r.NormFloat64()
		}
	}
	for i := range corpus {
		corpus[i].Dense, corpus[i].DenseInv = quantize(centres[r.IntN(len(centres))], r, 1)
	}
	ar := arena.New(arena.Options{Dims: denseDims})
	const batch = 4096
	for i := 0; i < len(corpus); i += batch {
		ar.Add(corpus[i:min(i+batch, len(corpus))]...)
	}
	qs := g.Queries(corpus, 200, 3, 8)
	for i := range qs {
		qs[i].Dense, qs[i].DenseInv = quantize(centres[r.IntN(len(centres))], r, 1)
	}
	return &benchCorpus{ar: ar, queries: qs, build: time.Since(start)}
}
