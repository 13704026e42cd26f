package arena_test

import (
	"math/rand/v2"
	"testing"

	"github.com/perpetuity/perpetuity/memory/arena"
)

// TestNeighbors: with a window that covers the user, Neighbors equals the
// store's definition (closest ids of the same conversation) for every item,
// across chunk boundaries, interleaved conversations, out-of-order ids and
// other users' items in between.
func TestNeighbors(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		chunk int
		swap  bool // some neighbouring arrivals in reverse id order
	}{{"one chunk", 4096, false}, {"small chunks", 3, false}, {"out of order", 5, true}} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r := rand.New(rand.NewPCG(7, uint64(tc.chunk)))
			a := arena.New(arena.Options{ChunkItems: tc.chunk, Workers: 1})
			var items []arena.Item
			for i := range 300 {
				user := int64(1 + r.IntN(3))
				items = append(items, arena.Item{ID: int64(1000 + i), Seq: int64(i + 1), User: user,
					Conv: user*10 + int64(r.IntN(3)), Terms: []arena.TermID{1}, Tokens: uint32(i)})
			}
			if tc.swap {
				for i := 0; i+1 < len(items); i += 7 {
					items[i].ID, items[i+1].ID = items[i+1].ID, items[i].ID
				}
			}
			a.Add(items...)
			want := func(it arena.Item) (p, n int64) {
				for _, o := range items {
					if o.Conv != it.Conv {
						continue
					}
					if o.ID < it.ID && o.ID > p {
						p = o.ID
					}
					if o.ID > it.ID && (n == 0 || o.ID < n) {
						n = o.ID
					}
				}
				return p, n
			}
			byID := map[int64]arena.Item{}
			for _, it := range items {
				byID[it.ID] = it
			}
			checked := 0
			a.Each(func(index int, it arena.Item) bool {
				prev, next, ok := a.Neighbors(index, it.ID, len(items))
				wp, wn := want(it)
				if !ok || prev.ID != wp || next.ID != wn {
					t.Errorf("item %d: got %d/%d (ok %v), want %d/%d", it.ID, prev.ID, next.ID, ok, wp, wn)
				}
				if prev.ID != 0 && prev.Tokens != byID[prev.ID].Tokens || next.ID != 0 && next.Tokens != byID[next.ID].Tokens {
					t.Errorf("item %d: neighbour token counts %d/%d", it.ID, prev.Tokens, next.Tokens)
				}
				checked++
				return true
			})
			if checked != len(items) {
				t.Fatalf("checked %d of %d", checked, len(items))
			}
			if _, _, ok := a.Neighbors(-1, 1000, 10); ok {
				t.Fatal("a bad index must not be ok")
			}
			if _, _, ok := a.Neighbors(0, -5, 10); ok {
				t.Fatal("an index that no longer holds the item must not be ok")
			}
		})
	}
}
