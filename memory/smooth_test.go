package memory

import (
	"math"
	"testing"

	"github.com/perpetuity/perpetuity/memory/arena"
)

// TestSmoothHits: a match gains smoothing times the better positive score
// of its conversation neighbours that matched too, never from a turn of
// another conversation, an unmatched turn or a negative score, and the
// ranking follows the new scores.
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
	got, around := smoothHits(a, hits)
	want := []struct {
		id    int64
		score float64
	}{
		{1, 1 + smoothing*0.1},
		{3, 0.92 + smoothing*0.1}, // 4 is its other neighbour, unmatched
		{5, 0.93},                 // its neighbour 6 scores below zero
		{2, 0.1 + smoothing*1},
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
	if nb := around[3]; nb.prev.ID != 2 || nb.next.ID != 4 {
		t.Errorf("neighbours of 3 = %d, %d, want 2, 4", nb.prev.ID, nb.next.ID)
	}
	if nb := around[5]; nb.prev.ID != 0 || nb.next.ID != 6 {
		t.Errorf("neighbours of 5 = %d, %d, want none, 6", nb.prev.ID, nb.next.ID)
	}
}
