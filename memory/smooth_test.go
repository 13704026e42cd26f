package memory

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/perpetuity/perpetuity/memory/arena"
)

// TestSmoothHits: a match gains smoothing times the better positive score
// of its conversation neighbours that matched too, never from a turn of
// another conversation, an unmatched turn or a negative score; an unmatched
// neighbour of a match joins with that share alone (never an excluded
// one), the ranking follows the new scores and keeps the best keep.
func TestSmoothHits(t *testing.T) {
	t.Parallel()
	a := arena.New(arena.Options{Workers: 1})
	var items []arena.Item
	for i, conv := range []int64{10, 10, 10, 10, 20, 20} {
		items = append(items, arena.Item{ID: int64(i + 1), Seq: int64(i + 1), User: 1, Conv: conv, Terms: []arena.TermID{1}, Tokens: 5})
	}
	a.Add(items...)
	found := a.Search(arena.Query{Terms: []arena.TermID{1}, Users: []int64{1}, K: 10})
	scores := map[int64]float32{1: 1, 2: 0.1, 3: 0.92, 5: 0.93, 6: -0.5} // 4 did not match
	var hits []arena.Hit
	for _, h := range found {
		if s, ok := scores[h.ID]; ok {
			h.Score = s
			hits = append(hits, h)
		}
	}
	if len(hits) != len(scores) {
		t.Fatalf("%d hits, want %d", len(hits), len(scores))
	}
	got, around, joined := smoothHits(a, hits, 10, nil)
	want := []struct {
		id    int64
		score float64
	}{
		{1, 1 + smoothing*0.1},
		{3, 0.92 + smoothing*0.1}, // 4 is its other neighbour, unmatched
		{5, 0.93},                 // its neighbour 6 scores below zero
		{2, 0.1 + smoothing*1},
		{4, smoothing * 0.92}, // unmatched: by its neighbour 3 alone
		{6, -0.5 + smoothing*0.93},
	}
	if len(got) != len(want) {
		t.Fatalf("%d hits, want %d", len(got), len(want))
	}
	for i, w := range want {
		if got[i].ID != w.id || math.Abs(float64(got[i].Score)-w.score) > 1e-6 {
			t.Errorf("hit %d = #%d %.4f, want #%d %.4f", i, got[i].ID, got[i].Score, w.id, w.score)
		}
	}
	if len(joined) != 1 || !joined[4] {
		t.Errorf("joined = %v, want only 4", joined)
	}
	if nb := around[3]; nb.prev.ID != 2 || nb.next.ID != 4 {
		t.Errorf("neighbours of 3 = %d, %d, want 2, 4", nb.prev.ID, nb.next.ID)
	}
	if nb := around[5]; nb.prev.ID != 0 || nb.next.ID != 6 {
		t.Errorf("neighbours of 5 = %d, %d, want none, 6", nb.prev.ID, nb.next.ID)
	}
}

// TestSmoothHitsKeepAndExclude: the ranking is cut to keep after the
// unmatched neighbours joined, and an excluded item (the live message)
// never joins, whatever its neighbour scored.
func TestSmoothHitsKeepAndExclude(t *testing.T) {
	t.Parallel()
	a := arena.New(arena.Options{Workers: 1})
	var items []arena.Item
	for i := range 5 {
		items = append(items, arena.Item{ID: int64(i + 1), Seq: int64(i + 1), User: 1, Conv: 10, Terms: []arena.TermID{1}, Tokens: 5})
	}
	a.Add(items...)
	found := a.Search(arena.Query{Terms: []arena.TermID{1}, Users: []int64{1}, K: 10})
	scores := map[int64]float32{1: 0.2, 3: 2} // 2 and 4 unmatched neighbours of 3, 5 of nothing
	var hits []arena.Hit
	for _, h := range found {
		if s, ok := scores[h.ID]; ok {
			h.Score = s
			hits = append(hits, h)
		}
	}
	tests := []struct {
		name    string
		keep    int
		exclude []int64
		want    []int64
	}{
		{"all", 10, nil, []int64{3, 2, 4, 1}},
		{"cut", 2, nil, []int64{3, 2}},
		{"live excluded", 10, []int64{4}, []int64{3, 2, 1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, _, joined := smoothHits(a, hits, tt.keep, tt.exclude)
			var ids []int64
			for _, h := range got {
				ids = append(ids, h.ID)
			}
			if !slices.Equal(ids, tt.want) {
				t.Fatalf("ranking %v, want %v", ids, tt.want)
			}
			for _, id := range tt.exclude {
				if joined[id] {
					t.Errorf("excluded %d joined", id)
				}
			}
		})
	}
}

// TestSmoothHitsEqualsReference: the frame's ranking over a hybrid scan
// (the scan's best smoothPool, smoothed, cut to the candidates) is the
// same for 1..8 scan workers, bit for bit, and equals the one computed
// from the brute-force scorer (arena.ReferenceHybrid) with each turn's
// conversation neighbours found by id in the item list.
func TestSmoothHitsEqualsReference(t *testing.T) {
	t.Parallel()
	const dims, keep = 8, 150
	for seed := range uint64(4) {
		r := rand.New(rand.NewPCG(seed, 7))
		var items []arena.Item
		conv := map[int64]int64{1: 1, 2: 2} // each user's open conversation
		for i := range 900 {
			u := int64(1 + r.IntN(2))
			if r.IntN(40) == 0 {
				conv[u] = int64(10*i + int(u))
			}
			var terms []arena.TermID
			for range r.IntN(5) {
				terms = append(terms, arena.TermID(1+r.IntN(30)))
			}
			slices.Sort(terms)
			terms = slices.Compact(terms)
			vec := make([]int8, dims)
			var n2 int64
			for d := range vec {
				vec[d] = int8(r.IntN(255) - 127)
				n2 += int64(vec[d]) * int64(vec[d])
			}
			items = append(items, arena.Item{ID: int64(i + 1), Seq: int64(i + 1), User: u, Conv: conv[u],
				Terms: terms, Tokens: 5, Dense: vec, DenseInv: float32(1 / math.Sqrt(float64(n2)))})
		}
		qv := make([]int8, dims)
		for d := range qv {
			qv[d] = int8(r.IntN(255) - 127)
		}
		q := arena.Query{Terms: []arena.TermID{3, 7, 11}, Users: []int64{1}, K: smoothPool, Dense: qv, DenseInv: 1 / 200.0}

		ref := arena.ReferenceHybrid(items, q, arena.Options{Dims: dims})
		want := referenceSmooth(items, ref, keep)
		// The case must hold both ways into the ranking: a pool cut short
		// of the matches, and unmatched turns among the kept.
		joinedIn := 0
		for _, h := range want {
			if !slices.ContainsFunc(ref, func(x arena.Hit) bool { return x.ID == h.ID }) {
				joinedIn++
			}
		}
		if len(ref) < smoothPool || joinedIn == 0 {
			t.Fatalf("seed %d: %d matches, %d unmatched turns kept: the case tests nothing", seed, len(ref), joinedIn)
		}
		var first []arena.Hit
		for w := 1; w <= 8; w++ {
			a := arena.New(arena.Options{Workers: w, Dims: dims, ChunkItems: 64})
			a.Add(items...)
			got, _, _ := smoothHits(a, a.Search(q), keep, nil)
			if len(got) != len(want) {
				t.Fatalf("seed %d, %d workers: %d hits, want %d", seed, w, len(got), len(want))
			}
			for i := range got {
				if got[i].ID != want[i].ID || math.Abs(float64(got[i].Score-want[i].Score)) > 1e-4 {
					t.Fatalf("seed %d, %d workers: hit %d = #%d %.6f, want #%d %.6f", seed, w, i, got[i].ID, got[i].Score, want[i].ID, want[i].Score)
				}
			}
			if first == nil {
				first = got
			} else if !slices.Equal(got, first) {
				t.Fatalf("seed %d: %d workers rank otherwise than 1", seed, w)
			}
		}
	}
}

// referenceSmooth is smoothHits' law by brute force over the item list.
func referenceSmooth(items []arena.Item, hits []arena.Hit, keep int) []arena.Hit {
	byID := map[int64]arena.Item{}
	for _, it := range items {
		byID[it.ID] = it
	}
	neighbours := func(id int64) (prev, next int64) {
		it := byID[id]
		for _, x := range items {
			if x.User != it.User || x.Conv != it.Conv {
				continue
			}
			if x.ID < id && x.ID > prev {
				prev = x.ID
			}
			if x.ID > id && (next == 0 || x.ID < next) {
				next = x.ID
			}
		}
		return prev, next
	}
	score := map[int64]float32{}
	for _, h := range hits {
		score[h.ID] = h.Score
	}
	gain := map[int64]float32{}
	for _, h := range hits {
		p, n := neighbours(h.ID)
		for _, x := range []int64{p, n} {
			if x != 0 && h.Score > gain[x] {
				gain[x] = h.Score
			}
		}
	}
	var out []arena.Hit
	for id, g := range gain {
		if _, ok := score[id]; !ok {
			out = append(out, arena.Hit{ID: id, Score: smoothing * g})
		}
	}
	for _, h := range hits {
		out = append(out, arena.Hit{ID: h.ID, Score: h.Score + smoothing*gain[h.ID]})
	}
	slices.SortFunc(out, func(x, y arena.Hit) int {
		if x.Score != y.Score {
			if x.Score > y.Score {
				return -1
			}
			return 1
		}
		return int(x.ID - y.ID)
	})
	return out[:min(keep, len(out))]
}
