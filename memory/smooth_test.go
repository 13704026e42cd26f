package memory

import (
	"math"
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
