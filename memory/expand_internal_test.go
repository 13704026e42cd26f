package memory

import (
	"slices"
	"testing"

	"github.com/perpetuity/perpetuity/memory/arena"
	"github.com/perpetuity/perpetuity/memory/arena/synth"
)

// twoFullScans is the feedback scan as it ran before feedbackScan: the
// full K first, then the expanded question.
func twoFullScans(x expansion, a *arena.Arena, q arena.Query) []arena.Hit {
	hits := a.Search(q)
	q.Terms, q.Weights = x.expand(a, q.Terms, hits)
	if q.Weights != nil {
		hits = a.Search(q)
	}
	return hits
}

func feedbackArena(tb testing.TB, items int) (*arena.Arena, []arena.Query) {
	tb.Helper()
	g := synth.New(synth.Config{Seed: 7, Items: items})
	corpus := g.Corpus()
	a := arena.New(arena.Options{Workers: 2})
	a.Add(corpus...)
	qs := g.Queries(corpus, 300, 1, 8)
	for i := range qs {
		qs[i].K = 120
	}
	return a, qs
}

// TestFeedbackScanIsTwoFullScans: asking the first pass for its voters
// only ranks exactly as the full first pass did, for every kind of
// question (one word, few matches, no winner), and for other expansions.
func TestFeedbackScanIsTwoFullScans(t *testing.T) {
	t.Parallel()
	a, qs := feedbackArena(t, 20_000)
	// Questions that match little or nothing: fewer hits than voters.
	qs = append(qs, arena.Query{Terms: []arena.TermID{synth.NameBase + 3}, Users: []int64{1}, K: 120},
		arena.Query{Terms: []arena.TermID{1<<29 + 5}, Users: []int64{1}, K: 120})
	for _, tc := range []struct {
		name string
		x    expansion
	}{{"default", expansion{docs: 8, terms: 10, beta: 0.3}}, {"one voter", expansion{docs: 1, terms: 10, beta: 0.3}},
		{"voters past K", expansion{docs: 200, terms: 4, beta: 0.5}}} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			e := &Engine{opt: Options{Expansion: tc.x}}
			expanded := 0
			for i, q := range qs {
				want := twoFullScans(tc.x, a, q)
				got := e.feedbackScan(a, q)
				if !slices.Equal(got, want) {
					t.Fatalf("question %d (%v): feedback scan %v, two full scans %v", i, q.Terms, got, want)
				}
				if _, w := tc.x.expand(a, q.Terms, a.Search(q)); w != nil {
					expanded++
				}
			}
			if expanded == 0 || expanded == len(qs) {
				t.Fatalf("%d of %d questions expanded: the cases are not all covered", expanded, len(qs))
			}
		})
	}
}

func BenchmarkFeedbackScan(b *testing.B) {
	a, qs := feedbackArena(b, 250_000)
	x := expansion{docs: 8, terms: 10, beta: 0.3}
	e := &Engine{opt: Options{Expansion: x}}
	for _, bc := range []struct {
		name string
		scan func(q arena.Query) []arena.Hit
	}{{"two full scans", func(q arena.Query) []arena.Hit { return twoFullScans(x, a, q) }},
		{"voters first", func(q arena.Query) []arena.Hit { return e.feedbackScan(a, q) }}} {
		b.Run(bc.name, func(b *testing.B) {
			for i := 0; b.Loop(); i++ {
				bc.scan(qs[i%len(qs)])
			}
		})
	}
}
