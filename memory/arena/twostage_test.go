package arena_test

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/perpetuity/perpetuity/memory/arena"
	"github.com/perpetuity/perpetuity/memory/arena/synth"
)

// sentenceCorpus gives every item a sentence-like 100-dim vector: a mix of
// two or three of 64 topic directions plus noise, as a SIF mean of a turn's
// words is a mix of its subjects. Users hold more than arena.DenseSample
// items, so a search runs in two stages.
func sentenceCorpus(seed uint64, items, users int) ([]arena.Item, [][]float64, *rand.Rand) {
	g := synth.New(synth.Config{Seed: seed, Items: items, Users: users})
	corpus := g.Corpus()
	r := rand.New(rand.NewPCG(seed, 7))
	topics := make([][]float64, 64)
	for t := range topics {
		topics[t] = make([]float64, denseDims)
		for d := range topics[t] {
			topics[t][d] = r.NormFloat64()
		}
	}
	for i := range corpus {
		if r.IntN(50) == 0 {
			continue // an item without a vector
		}
		mix := make([]float64, denseDims)
		for range 2 + r.IntN(2) {
			w := r.Float64()
			for d, x := range topics[r.IntN(len(topics))] {
				mix[d] += w * x
			}
		}
		corpus[i].Dense, corpus[i].DenseInv = quantize(mix, r, 0.6)
	}
	return corpus, topics, r
}

// TestHybridTwoStageEqualsExhaustive: above arena.DenseSample visible items
// the hybrid scan estimates cosines from 2-bit codes and computes only its
// candidates' exactly; its result equals exhaustive exact scoring
// (Query.ExactDense) hit for hit, score for score, and 1..8 workers give one
// ranking. Exclusions, a question without words and one with common words
// are among the queries.
func TestHybridTwoStageEqualsExhaustive(t *testing.T) {
	t.Parallel()
	corpus, topics, r := sentenceCorpus(11, 36_000, 3)
	g := synth.New(synth.Config{Seed: 12, Items: 1000, Users: 3})
	queries := g.Queries(corpus, 60, 2, 8)
	var arenas []*arena.Arena
	for _, w := range []int{1, 2, 3, 8} {
		a := arena.New(arena.Options{Workers: w, Dims: denseDims})
		for i := 0; i < len(corpus); i += 5000 {
			a.Add(corpus[i:min(i+5000, len(corpus))]...)
		}
		arenas = append(arenas, a)
	}
	twoStage := 0
	for qi, q := range queries {
		q.K = []int{10, 50, 120}[qi%3]
		q.Dense, q.DenseInv = quantize(topics[r.IntN(len(topics))], r, 0.8)
		switch qi % 5 {
		case 1:
			q.Terms = nil
		case 2:
			for _, it := range corpus[len(corpus)-300:] {
				if it.User == q.Users[0] {
					q.Exclude = append(q.Exclude, it.ID)
				}
			}
		}
		exact := q
		exact.ExactDense = true
		want, wst := arenas[0].SearchWithStats(exact)
		label := fmt.Sprintf("query %d", qi)
		for wi, a := range arenas {
			got, st := a.SearchWithStats(q)
			if st.Candidates < st.Visible {
				twoStage++
			}
			if len(got) != len(want) {
				t.Fatalf("%s (%d workers): %d hits, exhaustive %d", label, wi, len(got), len(want))
			}
			for i := range got {
				if got[i].ID != want[i].ID || got[i].Score != want[i].Score || got[i].DenseOnly != want[i].DenseOnly {
					t.Fatalf("%s (arena %d): hit %d is %+v, exhaustive %+v (%d candidates of %d)", label, wi, i, got[i], want[i], st.Candidates, wst.Visible)
				}
			}
		}
	}
	if twoStage == 0 {
		t.Fatal("no search ran in two stages: the test proves nothing")
	}
}

// TestHybridSampleStatistic: the exhaustive arena scan equals the
// reference scorer, which takes the cosine's statistic over the law's
// sample, on a corpus large enough for the sample to be a strict subset.
func TestHybridSampleStatistic(t *testing.T) {
	t.Parallel()
	corpus, topics, r := sentenceCorpus(21, 10_000, 1)
	a := arena.New(arena.Options{Dims: denseDims, ChunkItems: 1000})
	a.Add(corpus...)
	g := synth.New(synth.Config{Seed: 22, Items: 1000, Users: 1})
	for qi, q := range g.Queries(corpus, 12, 2, 6) {
		q.K = 40
		q.Dense, q.DenseInv = quantize(topics[r.IntN(len(topics))], r, 0.8)
		q.ExactDense = true
		if qi%3 == 0 {
			q.Exclude = []int64{corpus[0].ID, corpus[3].ID, corpus[len(corpus)-1].ID}
		}
		want := arena.ReferenceHybrid(corpus, q, arena.Options{Dims: denseDims})
		sameRanking(t, fmt.Sprintf("query %d", qi), a.Search(q), want)
	}
}

// TestSelectBest: the kept set is the k best of a total order whatever the
// input order, and the worst kept comes last.
func TestSelectBest(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(5, 6))
	for trial := range 300 {
		n := 1 + r.IntN(200)
		hits := make([]arena.Hit, n)
		for i := range hits {
			hits[i] = arena.Hit{ID: int64(r.IntN(50)), Score: float32(r.IntN(8)), Index: i}
		}
		k := 1 + r.IntN(n)
		want := append([]arena.Hit(nil), hits...)
		arena.SortHits(want)
		got := arena.SelectBest(append([]arena.Hit(nil), hits...), k)
		if len(got) != k {
			t.Fatalf("trial %d: kept %d of %d, want %d", trial, len(got), n, k)
		}
		if got[k-1] != want[k-1] {
			t.Fatalf("trial %d: last kept %+v, the k-th best is %+v", trial, got[k-1], want[k-1])
		}
		arena.SortHits(got)
		for i := range got {
			if got[i] != want[i] {
				t.Fatalf("trial %d: kept set differs at %d: %+v vs %+v", trial, i, got[i], want[i])
			}
		}
	}
}
