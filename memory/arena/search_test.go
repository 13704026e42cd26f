package arena_test

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/perpetuity/perpetuity/memory/arena"
)

// corpusShape drives randomCorpus towards a kind of trouble.
type corpusShape struct {
	items, users, vocab int
	maxTerms            int
	emptyRate           float64 // items without terms
	hotTerms            int     // terms put in most items (high df, repeated)
}

func randomCorpus(r *rand.Rand, s corpusShape) []arena.Item {
	items := make([]arena.Item, s.items)
	ids := r.Perm(s.items * 3)
	for i := range items {
		it := arena.Item{
			ID: int64(ids[i] + 1), Seq: int64(i + 1), User: int64(r.IntN(s.users) + 1),
			Conv: int64(r.IntN(5)), BornClock: int64(i * 7), Tau: float32(r.IntN(100)),
		}
		if r.Float64() >= s.emptyRate {
			n := 1 + r.IntN(s.maxTerms)
			for range n {
				it.Terms = append(it.Terms, arena.TermID(r.IntN(s.vocab)))
				it.Freqs = append(it.Freqs, uint16(1+r.IntN(2)*r.IntN(4)))
			}
			for h := range s.hotTerms {
				if r.IntN(4) > 0 {
					it.Terms = append(it.Terms, arena.TermID(h))
					it.Freqs = append(it.Freqs, uint16(1+r.IntN(3)))
				}
			}
			if r.IntN(3) == 0 {
				it.Length = uint32(len(it.Terms) + r.IntN(20))
			}
		}
		items[i] = it
	}
	return items
}

func randomQuery(r *rand.Rand, items []arena.Item, s corpusShape) arena.Query {
	q := arena.Query{K: 1 + r.IntN(25)}
	if r.IntN(10) == 0 {
		q.K = 1 << 20 // everything that scores
	}
	n := 1 + r.IntN(8)
	for range n {
		q.Terms = append(q.Terms, arena.TermID(r.IntN(s.vocab+3))) // a few absent terms
	}
	if r.IntN(3) == 0 {
		for range q.Terms {
			q.Weights = append(q.Weights, float32(r.IntN(4))-0.5)
		}
	}
	switch r.IntN(4) {
	case 0:
		q.AllUsers = true
	case 1:
		q.Users = []int64{1, int64(1 + r.IntN(s.users)), 1}
	default:
		q.Users = []int64{int64(1 + r.IntN(s.users))}
	}
	if r.IntN(3) == 0 && len(items) > 0 {
		for range 1 + r.IntN(10) {
			q.Exclude = append(q.Exclude, items[r.IntN(len(items))].ID)
		}
	}
	return q
}

// sameHits fails unless got equals want in ids, order and scores. The arena
// and the reference call the same scoring function, so scores must be
// bit-identical; the 1e-6 relative tolerance of the contract is looser.
func sameHits(t *testing.T, label string, got, want []arena.Hit) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d hits, want %d\ngot  %v\nwant %v", label, len(got), len(want), got, want)
	}
	for i := range got {
		if got[i].ID != want[i].ID || got[i].Score != want[i].Score {
			t.Fatalf("%s: hit %d = {%d %v}, want {%d %v}", label, i, got[i].ID, got[i].Score, want[i].ID, want[i].Score)
		}
	}
}

func TestSearchEqualsReference(t *testing.T) {
	t.Parallel()
	shapes := []corpusShape{
		{items: 0, users: 1, vocab: 10, maxTerms: 3},
		{items: 1, users: 1, vocab: 5, maxTerms: 2},
		{items: 300, users: 3, vocab: 8, maxTerms: 4, emptyRate: 0.2},       // many duplicate scores
		{items: 800, users: 5, vocab: 2000, maxTerms: 40, hotTerms: 3},      // repeated high-df terms
		{items: 1500, users: 2, vocab: 300, maxTerms: 120, emptyRate: 0.05}, // saturated signatures
		{items: 2000, users: 40, vocab: 5000, maxTerms: 15, hotTerms: 1},
	}
	budgets := []arena.Options{
		{}, // defaults
		{MinCandidates: 1, CandidatesPerK: 1, CandidatesPerSqrtN: 0.01}, // starve the first pass
		{MinCandidates: 3, CandidatesPerK: 1, CandidatesPerSqrtN: 0.1},
	}
	for si, shape := range shapes {
		t.Run(fmt.Sprintf("shape%d", si), func(t *testing.T) {
			t.Parallel()
			r := rand.New(rand.NewPCG(uint64(si), 7))
			items := randomCorpus(r, shape)
			queries := make([]arena.Query, 60)
			wants := make([][]arena.Hit, len(queries))
			for i := range queries {
				queries[i] = randomQuery(r, items, shape)
				wants[i] = arena.ReferenceSearch(items, queries[i], arena.Options{})
			}
			var fallbacks int
			for workers := 1; workers <= 8; workers++ {
				for bi, budget := range budgets {
					opts := budget
					opts.Workers = workers
					opts.ChunkItems = 1 + r.IntN(64)
					ar := arena.New(opts)
					// Add in uneven batches: layout must not matter.
					for i := 0; i < len(items); {
						n := 1 + r.IntN(100)
						ar.Add(items[i:min(i+n, len(items))]...)
						i += n
					}
					for qi, q := range queries {
						got, st := ar.SearchWithStats(q)
						sameHits(t, fmt.Sprintf("workers=%d budget=%d query=%d", workers, bi, qi), got, wants[qi])
						if ceil := arena.ProbeCeiling(st.Visible, st.Terms); st.Probes > ceil {
							t.Fatalf("workers=%d budget=%d query=%d: %d signature words tested, ceiling %d", workers, bi, qi, st.Probes, ceil)
						}
						if st.Fallback {
							fallbacks++
						}
					}
				}
			}
			if shape.items >= 800 && fallbacks == 0 {
				t.Errorf("the starved budget never forced the exhaustive fallback: the test does not reach it")
			}
		})
	}
}

// collidingTerm finds a term whose signature probe equals t's: an item holding
// it passes t's first-pass test without containing t.
func collidingTerm(t *testing.T, target arena.TermID) arena.TermID {
	t.Helper()
	want := arena.ProbeOf(target)
	for c := arena.TermID(1 << 20); c < 1<<26; c++ {
		if c != target && arena.ProbeOf(c) == want {
			return c
		}
	}
	t.Fatal("no colliding term found")
	return 0
}

// TestFirstPassCannotMiss builds corpora made for the first pass to rank
// wrongly: items colliding with the rare query term (high bound, zero exact
// contribution), long items with high frequencies and a rare term (high bound,
// low exact score after length normalisation), and equal scores at the K-th
// place, and checks the result still equals exhaustive exact scoring.
func TestFirstPassCannotMiss(t *testing.T) {
	t.Parallel()
	const rare, common = arena.TermID(7), arena.TermID(8)
	ghost := collidingTerm(t, rare)
	r := rand.New(rand.NewPCG(3, 3))
	var items []arena.Item
	id := int64(0)
	add := func(terms []arena.TermID, freqs []uint16, length uint32) {
		id++
		items = append(items, arena.Item{ID: id, Seq: id, User: 1, Terms: terms, Freqs: freqs, Length: length})
	}
	for range 3000 { // collide with rare: bound includes rare's big idf, exact does not
		add([]arena.TermID{common, ghost, arena.TermID(100 + r.IntN(50))}, nil, 0)
	}
	for range 20 { // long items holding rare once, a noise term many times
		terms := []arena.TermID{rare, common}
		for k := range 150 {
			terms = append(terms, arena.TermID(1000+k))
		}
		freqs := make([]uint16, len(terms))
		for k := range freqs {
			freqs[k] = 1
		}
		freqs[2] = 900
		add(terms, freqs, 2000)
	}
	for range 40 { // short true matches, all tied
		add([]arena.TermID{rare, common}, nil, 0)
	}
	for range 2000 {
		add([]arena.TermID{common, arena.TermID(100 + r.IntN(50))}, nil, 0)
	}
	r.Shuffle(len(items), func(i, j int) { items[i].ID, items[j].ID = items[j].ID, items[i].ID })
	queries := []arena.Query{
		{Terms: []arena.TermID{rare}, Users: []int64{1}, K: 10},
		{Terms: []arena.TermID{rare}, Users: []int64{1}, K: 50},
		{Terms: []arena.TermID{rare, common}, Users: []int64{1}, K: 70},
		{Terms: []arena.TermID{common}, Users: []int64{1}, K: 30},
		{Terms: []arena.TermID{rare, ghost}, Weights: []float32{1, 0.01}, Users: []int64{1}, K: 25},
	}
	tests := []struct {
		name string
		opts arena.Options
	}{
		{"default", arena.Options{Workers: 2, ChunkItems: 512}},
		{"starved", arena.Options{Workers: 3, ChunkItems: 100, MinCandidates: 1, CandidatesPerK: 1, CandidatesPerSqrtN: 0.01}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ar := arena.New(tc.opts)
			ar.Add(items...)
			for qi, q := range queries {
				got, st := ar.SearchWithStats(q)
				sameHits(t, fmt.Sprintf("query %d", qi), got, arena.ReferenceSearch(items, q, tc.opts))
				if qi == 0 && st.Bounded < 3000 {
					t.Errorf("ghost items did not pass the first pass (%d bounded): the collision is not exercised", st.Bounded)
				}
			}
		})
	}
}

func TestVisibilityAndVisibleDF(t *testing.T) {
	t.Parallel()
	const x, y = arena.TermID(1), arena.TermID(2)
	items := []arena.Item{{ID: 1, User: 1, Terms: []arena.TermID{x, y}}}
	for i := range 9 {
		items = append(items, arena.Item{ID: int64(10 + i), User: 2, Terms: []arena.TermID{x}, Length: 3})
	}
	items = append(items, arena.Item{ID: 30, User: 3, Terms: []arena.TermID{y}, Freqs: []uint16{2}})
	ar := arena.New(arena.Options{Workers: 2, ChunkItems: 2})
	ar.Add(items...)
	if ar.DF(x) != 10 || ar.DF(y) != 2 {
		t.Fatalf("df(x)=%d df(y)=%d, want 10 and 2", ar.DF(x), ar.DF(y))
	}
	// BM25 of item 1 for "x y" under user 1's own statistic (visible.go):
	// one item of length 2 holding both terms, the tenant's shares of x
	// (10 of 11) and y (2 of 11) counted as 500 items more.
	n, avgdl := 1.0+500, 2.0
	idf := func(df float64) float64 { return math.Log(1 + (n-df+0.5)/(df+0.5)) }
	tfPart := 2.2 / (1 + 1.2*(0.25+0.75*2/avgdl))
	want := float32(idf(1+500*10.0/11)*tfPart + idf(1+500*2.0/11)*tfPart)

	tests := []struct {
		users []int64
		ids   []int64
	}{
		{[]int64{1}, []int64{1}},
		{[]int64{3}, []int64{30}},
		{[]int64{2}, []int64{10, 11, 12, 13, 14, 15, 16, 17, 18}},
		{[]int64{4}, nil},
		{nil, nil},
	}
	for _, tc := range tests {
		hits := ar.Search(arena.Query{Terms: []arena.TermID{x, y}, Users: tc.users, K: 20})
		var ids []int64
		for _, h := range hits {
			ids = append(ids, h.ID)
			it, ok := ar.Item(h.Index)
			if !ok || it.ID != h.ID || !slices.Contains(tc.users, it.User) {
				t.Fatalf("users %v: hit %d reads back as %+v (ok=%v)", tc.users, h.ID, it, ok)
			}
		}
		if !slices.Equal(ids, tc.ids) {
			t.Fatalf("users %v: ids %v, want %v", tc.users, ids, tc.ids)
		}
		if len(tc.users) == 1 && tc.users[0] == 1 && math.Abs(float64(hits[0].Score-want)) > 1e-6*float64(want) {
			t.Fatalf("score %v, want %v (the visible items' df)", hits[0].Score, want)
		}
	}
}

// A user's scores come from their own items' statistic (smoothed by the
// tenant's), which sealed chunks with and without vectors and the open one
// all count exactly: the arena equals the reference scorer, and differs from
// scoring by the tenant's statistic alone.
func TestScoresUseTheVisibleStatistic(t *testing.T) {
	t.Parallel()
	for _, dims := range []int{0, 8} {
		t.Run(fmt.Sprintf("dims=%d", dims), func(t *testing.T) {
			t.Parallel()
			r := rand.New(rand.NewPCG(21, uint64(dims)))
			var all []arena.Item
			for i := range 3000 {
				user := int64(1 + r.IntN(4))
				it := arena.Item{ID: int64(i + 1), User: user, Length: uint32(3 + r.IntN(20))}
				for range 2 + r.IntN(6) {
					// user 1 speaks a small vocabulary; the others a wide one that
					// shares it, so the tenant's df and the user's differ.
					span := 40
					if user != 1 {
						span = 400
					}
					it.Terms = append(it.Terms, arena.TermID(1+r.IntN(span)))
				}
				all = append(all, it)
			}
			opts := arena.Options{Workers: 2, ChunkItems: 256, Dims: dims}
			shared := arena.New(opts)
			shared.Add(all...)
			for qi := range 20 {
				q := arena.Query{Users: []int64{1}, K: 30}
				for range 1 + qi%5 {
					q.Terms = append(q.Terms, arena.TermID(1+r.IntN(40)))
				}
				a := shared.Search(q)
				if len(a) == 0 {
					t.Fatalf("query %d: no hits", qi)
				}
				sameHits(t, fmt.Sprintf("query %d reference", qi), a, arena.ReferenceSearch(all, q, opts))
				// All users visible, the statistic is the tenant's: user 1's
				// best item scores otherwise than when user 1 alone is.
				wide := q
				wide.Users, wide.AllUsers = nil, true
				for _, h := range shared.Search(wide) {
					if h.ID == a[0].ID {
						if h.Score == a[0].Score {
							t.Fatalf("query %d: item %d scores %v with every user visible and with user 1 alone", qi, h.ID, h.Score)
						}
						break
					}
				}
			}
		})
	}
}

func TestRemoveUserEqualsFreshArena(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(9, 9))
	shape := corpusShape{items: 1500, users: 4, vocab: 400, maxTerms: 20, hotTerms: 2}
	items := randomCorpus(r, shape)
	opts := arena.Options{Workers: 3, ChunkItems: 50}
	ar := arena.New(opts)
	ar.Add(items...)
	var kept, gone []arena.Item
	for _, it := range items {
		if it.User == 2 {
			gone = append(gone, it)
		} else {
			kept = append(kept, it)
		}
	}
	if n := ar.RemoveUser(2); n != len(gone) {
		t.Fatalf("RemoveUser removed %d, want %d", n, len(gone))
	}
	if n := ar.RemoveUser(2); n != 0 {
		t.Fatalf("second RemoveUser removed %d", n)
	}
	fresh := arena.New(opts)
	fresh.Add(kept...)
	check := func(label string, a, b *arena.Arena, ref []arena.Item) {
		t.Helper()
		if a.Len() != b.Len() || a.Digest() != b.Digest() {
			t.Fatalf("%s: len %d/%d digest %x/%x", label, a.Len(), b.Len(), a.Digest(), b.Digest())
		}
		for term := range arena.TermID(shape.vocab) {
			if a.DF(term) != b.DF(term) {
				t.Fatalf("%s: df(%d) = %d, want %d", label, term, a.DF(term), b.DF(term))
			}
		}
		for range 50 {
			q := randomQuery(r, ref, shape)
			sameHits(t, label, a.Search(q), b.Search(q))
			sameHits(t, label+" vs reference", a.Search(q), arena.ReferenceSearch(ref, q, opts))
		}
	}
	check("after remove", ar, fresh, kept)
	// Purged user comes back with new items.
	back := gone[:len(gone)/2]
	ar.Add(back...)
	fresh.Add(back...)
	check("after re-add", ar, fresh, append(slices.Clone(kept), back...))

	ar.Reset()
	if ar.Len() != 0 || ar.DF(0) != 0 || ar.Watermark() != 0 || len(ar.Search(arena.Query{Terms: []arena.TermID{0}, AllUsers: true, K: 5})) != 0 {
		t.Fatal("Reset left items behind")
	}
}

func TestItemsReadBack(t *testing.T) {
	t.Parallel()
	items := []arena.Item{
		{ID: 5, Seq: 1, User: 1, Conv: 3, Terms: []arena.TermID{9, 2, 9}, Freqs: []uint16{1, 4, 2}, BornClock: 40, Tau: 1.5},
		{ID: 2, Seq: 2, User: 7, Conv: 4, Terms: nil, Length: 3},
		{ID: 3, Seq: 6, User: 1, Terms: []arena.TermID{1}, Freqs: []uint16{0}},
	}
	ar := arena.New(arena.Options{ChunkItems: 1})
	ar.Add(items...)
	if ar.Watermark() != 6 || ar.Len() != 3 {
		t.Fatalf("watermark %d len %d", ar.Watermark(), ar.Len())
	}
	var sum uint64
	for _, it := range items {
		sum += arena.ItemDigest(it)
	}
	if ar.Digest() != sum {
		t.Fatal("Digest differs from the sum of ItemDigest")
	}
	var seen []arena.Item
	ar.Each(func(index int, it arena.Item) bool {
		back, ok := ar.Item(index)
		if !ok || !sameItem(back, it) {
			t.Fatalf("Item(%d) = %+v, %v; Each gave %+v", index, back, ok, it)
		}
		meta, ok := ar.Meta(index)
		it.Terms, it.Freqs = nil, nil
		if !ok || !sameItem(meta, it) || meta.Terms != nil {
			t.Fatalf("Meta(%d) = %+v, %v, want %+v", index, meta, ok, it)
		}
		seen = append(seen, back) // Each reuses it.Terms: keep Item's copy
		return true
	})
	if len(seen) != 3 || seen[0].ID != 5 || seen[1].ID != 3 || seen[2].ID != 2 {
		t.Fatalf("Each order: %+v", seen)
	}
	first := seen[0] // canonical: sorted, duplicates merged, length = sum of freqs
	if !slices.Equal(first.Terms, []arena.TermID{2, 9}) || !slices.Equal(first.Freqs, []uint16{4, 3}) || first.Length != 7 ||
		first.Conv != 3 || first.BornClock != 40 || first.Tau != 1.5 || first.User != 1 {
		t.Fatalf("read back %+v", first)
	}
	if seen[1].Freqs[0] != 1 {
		t.Fatalf("zero frequency not counted as presence: %+v", seen[1])
	}
	if _, ok := ar.Item(-1); ok {
		t.Fatal("Item(-1) ok")
	}
	ar.RemoveUser(1)
	if _, ok := ar.Item(0); ok {
		t.Fatal("stale index still reads back after RemoveUser")
	}
	if st := ar.Stats(); st.Items != 1 || st.Users != 1 || st.BytesResident <= 0 {
		t.Fatalf("stats %+v", st)
	}
}

func sameItem(a, b arena.Item) bool {
	return slices.Equal(a.Terms, b.Terms) && slices.Equal(a.Freqs, b.Freqs) &&
		a.ID == b.ID && a.Seq == b.Seq && a.User == b.User && a.Conv == b.Conv &&
		a.Length == b.Length && a.BornClock == b.BornClock && a.Tau == b.Tau
}

// TestConcurrentSearchAndAdd is for the race detector: searches run while
// items are added and a user is purged.
func TestConcurrentSearchAndAdd(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(1, 2))
	shape := corpusShape{items: 2000, users: 3, vocab: 100, maxTerms: 10}
	items := randomCorpus(r, shape)
	ar := arena.New(arena.Options{Workers: 4, ChunkItems: 64})
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := 0; i < len(items); i += 100 {
			ar.Add(items[i:min(i+100, len(items))]...)
			if i == 1000 {
				ar.RemoveUser(3)
			}
		}
	}()
	for searched := 0; ; searched++ {
		select {
		case <-done:
			if searched > 0 {
				return
			}
		default:
		}
		for _, h := range ar.Search(arena.Query{Terms: []arena.TermID{1, 2, 3}, Users: []int64{1}, K: 5}) {
			if it, ok := ar.Item(h.Index); ok && it.User != 1 {
				t.Fatalf("user 1 got item of user %d", it.User)
			}
		}
	}
}

// TestRemoveItemEqualsFreshArena: an arena that drops single items (a
// redaction) is the arena a fresh load without them builds: the same
// items, frequencies and hits, whichever chunk the item sat in, and an
// unknown item changes nothing.
func TestRemoveItemEqualsFreshArena(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(11, 3))
	shape := corpusShape{items: 900, users: 3, vocab: 300, maxTerms: 20, hotTerms: 2}
	items := randomCorpus(r, shape)
	opts := arena.Options{Workers: 3, ChunkItems: 50}
	ar := arena.New(opts)
	ar.Add(items...)
	gone := map[int64]bool{}
	for _, i := range []int{0, 49, 50, 51, 400, len(items) - 1} { // chunk edges, middle, last
		it := items[i]
		if !ar.RemoveItem(it.User, it.ID) {
			t.Fatalf("RemoveItem(%d, %d) found nothing", it.User, it.ID)
		}
		if ar.RemoveItem(it.User, it.ID) {
			t.Fatalf("item %d removed twice", it.ID)
		}
		gone[it.ID] = true
	}
	if ar.RemoveItem(items[1].User+1000, items[1].ID) {
		t.Fatal("an item removed under another user")
	}
	var kept []arena.Item
	for _, it := range items {
		if !gone[it.ID] {
			kept = append(kept, it)
		}
	}
	fresh := arena.New(opts)
	fresh.Add(kept...)
	if ar.Len() != fresh.Len() || ar.Digest() != fresh.Digest() || ar.Watermark() != items[len(items)-1].Seq {
		t.Fatalf("len %d/%d digest %x/%x watermark %d", ar.Len(), fresh.Len(), ar.Digest(), fresh.Digest(), ar.Watermark())
	}
	for term := range arena.TermID(shape.vocab) {
		if ar.DF(term) != fresh.DF(term) {
			t.Fatalf("df(%d) = %d, want %d", term, ar.DF(term), fresh.DF(term))
		}
	}
	for range 50 {
		q := randomQuery(r, kept, shape)
		sameHits(t, "after remove", ar.Search(q), fresh.Search(q))
		sameHits(t, "vs reference", ar.Search(q), arena.ReferenceSearch(kept, q, opts))
	}
}

// The open chunk's counts are extended by each search with the items added
// since the previous one (visible.go): searching between additions, as
// serving does, scores as the reference does after every one of them, up to
// and past the chunk's sealing.
func TestOpenChunkCountsFollowAdditions(t *testing.T) {
	t.Parallel()
	for _, dims := range []int{0, 8} {
		t.Run(fmt.Sprintf("dims=%d", dims), func(t *testing.T) {
			t.Parallel()
			r := rand.New(rand.NewPCG(23, uint64(dims)))
			opts := arena.Options{Workers: 2, ChunkItems: 64, Dims: dims}
			ar := arena.New(opts)
			var all []arena.Item
			for step := range 80 {
				for range 1 + r.IntN(5) {
					it := arena.Item{ID: int64(len(all) + 1), User: int64(1 + r.IntN(2)), Length: uint32(3 + r.IntN(9))}
					for range 1 + r.IntN(4) {
						it.Terms = append(it.Terms, arena.TermID(1+r.IntN(30)))
					}
					all = append(all, it)
					ar.Add(it)
				}
				q := arena.Query{Users: []int64{1}, K: 10, Terms: []arena.TermID{arena.TermID(1 + r.IntN(30)), arena.TermID(1 + r.IntN(30))}}
				sameHits(t, fmt.Sprintf("step %d", step), ar.Search(q), arena.ReferenceSearch(all, q, opts))
			}
		})
	}
}
