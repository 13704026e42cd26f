package arena_test

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/perpetuity/perpetuity/memory/arena"
	"github.com/perpetuity/perpetuity/memory/arena/synth"
)

// A 100,000-term question against a tenant of realistic size scores with
// the cap's terms only, and the scan's work stays under the ceiling the
// cap gives, which does not grow with the question.
func TestWideQueryBoundedWork(t *testing.T) {
	t.Parallel()
	const items = 200_000
	g := synth.New(synth.Config{Seed: 15, Items: items, Users: 4})
	corpus := g.Corpus()
	ar := arena.New(arena.Options{Workers: 2})
	for i := 0; i < len(corpus); i += 4096 {
		ar.Add(corpus[i:min(i+4096, len(corpus))]...)
	}
	// Every dictionary term of the vocabulary (most are stored) and random
	// ids besides, in a shuffled order: 100,000 distinct terms.
	r := rand.New(rand.NewPCG(15, 1))
	seen := map[arena.TermID]bool{}
	var terms []arena.TermID
	for rank := 0; rank < 50_000; rank++ {
		t := g.TermOfRank(rank)
		seen[t] = true
		terms = append(terms, t)
	}
	for len(terms) < 100_000 {
		if t := arena.TermID(r.Uint32()); !seen[t] {
			seen[t] = true
			terms = append(terms, t)
		}
	}
	r.Shuffle(len(terms), func(i, j int) { terms[i], terms[j] = terms[j], terms[i] })
	q := arena.Query{Terms: terms, Users: []int64{1}, K: 120}

	got, st := ar.SearchWithStats(q)
	if st.Terms != arena.DefaultMaxTerms {
		t.Errorf("scored with %d terms, want the cap %d", st.Terms, arena.DefaultMaxTerms)
	}
	present := 0
	for _, term := range terms {
		if ar.DF(term) > 0 {
			present++
		}
	}
	if st.Capped+st.Unseen != present-arena.DefaultMaxTerms {
		t.Errorf("capped %d terms and %d unseen by the user, want %d (present) - %d", st.Capped, st.Unseen, present, arena.DefaultMaxTerms)
	}
	if ceil := arena.ProbeCeiling(st.Visible, st.Terms); st.Probes > ceil {
		t.Errorf("tested %d signature words, above the ceiling %d for %d items and %d terms", st.Probes, ceil, st.Visible, st.Terms)
	}
	if max := 2*st.Visible + 256; st.Rescored > max {
		t.Errorf("computed %d exact scores over %d items, want at most %d", st.Rescored, st.Visible, max)
	}
	t.Logf("%d items visible, %d terms asked (%d stored), %d scored: %d signature words tested (ceiling %d; %.0f per item), %d exact scores",
		st.Visible, len(terms), present, st.Terms, st.Probes, arena.ProbeCeiling(st.Visible, st.Terms),
		float64(st.Probes)/float64(st.Visible), st.Rescored)
	// Still the exact answer to the capped question.
	sameHits(t, "wide", got, arena.ReferenceSearch(corpus, q, arena.Options{}))
	if len(got) == 0 {
		t.Fatal("no hits: the test does not exercise the scan")
	}
}

// The cap keeps the rarest terms (largest idf times weight), ties to the
// smaller id, whatever order or repetition the question has.
func TestCapKeepsRarestTerms(t *testing.T) {
	t.Parallel()
	// Term d (1..100) is held by d items; term 1000+d, by d items too (ties).
	var items []arena.Item
	id := int64(0)
	for d := 1; d <= 100; d++ {
		for _, term := range []arena.TermID{arena.TermID(d), arena.TermID(1000 + d)} {
			for range d {
				id++
				items = append(items, arena.Item{ID: id, Seq: id, User: 1, Terms: []arena.TermID{term, 5000}, Freqs: []uint16{1, 1}})
			}
		}
	}
	ar := arena.New(arena.Options{})
	ar.Add(items...)
	var q []arena.TermID
	for d := 1; d <= 100; d++ {
		q = append(q, arena.TermID(d), arena.TermID(1000+d), 9000+arena.TermID(d)) // 9000+: not stored
	}
	q = append(q, 5000) // in every item
	var want []arena.TermID
	for d := 1; d <= 32; d++ {
		want = append(want, arena.TermID(d), arena.TermID(1000+d)) // df 1..32, both of each pair
	}
	slices.Sort(want)

	r := rand.New(rand.NewPCG(15, 2))
	for trial := range 5 {
		shuffled := slices.Clone(q)
		r.Shuffle(len(shuffled), func(i, j int) { shuffled[i], shuffled[j] = shuffled[j], shuffled[i] })
		shuffled = append(shuffled, shuffled[:10]...) // repeats, each with its weight
		weights := make([]float32, len(shuffled))
		for i := range weights {
			weights[i] = 1
		}
		for i := len(q); i < len(shuffled); i++ {
			weights[i] = 1e-9 // a repeat barely weighs
		}
		got := arena.KeptTerms(ar, arena.Query{Terms: shuffled, Weights: weights, Users: []int64{1}, K: 10})
		if !slices.Equal(got, want) {
			t.Fatalf("trial %d: kept %v\nwant %v", trial, got, want)
		}
	}
	// An odd cap splits a tie by id: of the df-33 pair, 33 (not 1033) is kept.
	odd := arena.New(arena.Options{MaxTerms: 65})
	odd.Add(items...)
	got := arena.KeptTerms(odd, arena.Query{Terms: q, Users: []int64{1}, K: 10})
	if !slices.Contains(got, 33) || slices.Contains(got, 1033) || len(got) != 65 {
		t.Errorf("cap 65 kept %v, want the df-33 tie broken to term 33", got)
	}
	// Weight counts: a rare term asked with a tiny weight (an expansion
	// word) gives way to a commoner question word.
	w := make([]float32, len(q))
	for i, term := range q {
		w[i] = 1
		if term == 1 {
			w[i] = 0.001
		}
	}
	got = arena.KeptTerms(ar, arena.Query{Terms: q, Weights: w, Users: []int64{1}, K: 10})
	if slices.Contains(got, 1) || !slices.Contains(got, 33) {
		t.Errorf("kept %v: want term 1 (weight 0.001) out and term 33 in", got)
	}
}

// Capped questions are answered exactly, whatever the workers: the arena
// equals the reference scorer, which applies the same cap.
func TestWideQueriesEqualReference(t *testing.T) {
	t.Parallel()
	shape := corpusShape{items: 3000, users: 3, vocab: 4000, maxTerms: 30, hotTerms: 2}
	r := rand.New(rand.NewPCG(15, 3))
	items := randomCorpus(r, shape)
	var queries []arena.Query
	for range 20 {
		q := arena.Query{K: 1 + r.IntN(50), Users: []int64{int64(1 + r.IntN(shape.users))}}
		for range 65 + r.IntN(400) {
			q.Terms = append(q.Terms, arena.TermID(r.IntN(shape.vocab+50)))
		}
		queries = append(queries, q)
	}
	for _, cap := range []int{0, 8, 64} {
		wants := make([][]arena.Hit, len(queries))
		for i, q := range queries {
			wants[i] = arena.ReferenceSearch(items, q, arena.Options{MaxTerms: cap})
		}
		for workers := 1; workers <= 8; workers++ {
			ar := arena.New(arena.Options{Workers: workers, ChunkItems: 1 + r.IntN(500), MaxTerms: cap})
			ar.Add(items...)
			for qi, q := range queries {
				got, st := ar.SearchWithStats(q)
				label := fmt.Sprintf("cap=%d workers=%d query=%d", cap, workers, qi)
				sameHits(t, label, got, wants[qi])
				if want := cmpCap(cap); st.Terms > want {
					t.Fatalf("%s: %d terms scored, cap %d", label, st.Terms, want)
				}
				if ceil := arena.ProbeCeiling(st.Visible, st.Terms); st.Probes > ceil {
					t.Fatalf("%s: %d signature words tested, ceiling %d", label, st.Probes, ceil)
				}
			}
		}
	}
}

func cmpCap(c int) int {
	if c <= 0 {
		return arena.DefaultMaxTerms
	}
	return c
}
