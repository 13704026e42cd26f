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
			swapEvery := 0
			if tc.swap {
				swapEvery = 7
			}
			items := conversations(r, 300, 3, swapEvery)
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

// TestNeighborsWindow: with a window shorter than the user's items,
// Neighbors looks only at the window places before and after the item in
// its owner's arrival order, across chunk boundaries, and a neighbour's
// Index finds it.
func TestNeighborsWindow(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name          string
		chunk, window int
	}{{"window 1", 3, 1}, {"window 2", 3, 2}, {"window inside a chunk", 64, 5}, {"window over chunks", 4, 11}, {"window of a chunk", 7, 7}} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r := rand.New(rand.NewPCG(11, uint64(tc.chunk*100+tc.window)))
			a := arena.New(arena.Options{ChunkItems: tc.chunk, Workers: 1})
			items := conversations(r, 400, 4, 5)
			a.Add(items...)
			// Each walks the users one after another, each in arrival order.
			type placed struct {
				it    arena.Item
				index int
			}
			byUser := map[int64][]placed{}
			a.Each(func(index int, it arena.Item) bool {
				byUser[it.User] = append(byUser[it.User], placed{it, index})
				return true
			})
			checked := 0
			for _, order := range byUser {
				for p, x := range order {
					var wp, wn int64
					for q := max(0, p-tc.window); q <= min(len(order)-1, p+tc.window); q++ {
						o := order[q].it
						if q == p || o.Conv != x.it.Conv {
							continue
						}
						if o.ID < x.it.ID && o.ID > wp {
							wp = o.ID
						}
						if o.ID > x.it.ID && (wn == 0 || o.ID < wn) {
							wn = o.ID
						}
					}
					prev, next, ok := a.Neighbors(x.index, x.it.ID, tc.window)
					if !ok || prev.ID != wp || next.ID != wn {
						t.Fatalf("item %d: got %d/%d (ok %v), want %d/%d", x.it.ID, prev.ID, next.ID, ok, wp, wn)
					}
					for _, n := range []arena.Neighbor{prev, next} {
						if n.ID == 0 {
							continue
						}
						if got, ok := a.Item(n.Index); !ok || got.ID != n.ID {
							t.Fatalf("item %d: neighbour %d's index finds %d (ok %v)", x.it.ID, n.ID, got.ID, ok)
						}
					}
					checked++
				}
			}
			if checked != len(items) {
				t.Fatalf("checked %d of %d", checked, len(items))
			}
		})
	}
}

// conversations are n items of three users, each in one of its convs
// conversations at random, arriving in id order but for every swapEvery-th
// pair (0: none), which arrives in reverse.
func conversations(r *rand.Rand, n, convs, swapEvery int) []arena.Item {
	var items []arena.Item
	for i := range n {
		user := int64(1 + r.IntN(3))
		items = append(items, arena.Item{ID: int64(1000 + i), Seq: int64(i + 1), User: user,
			Conv: user*10 + int64(r.IntN(convs)), Terms: []arena.TermID{1}, Tokens: uint32(i)})
	}
	for i := 0; swapEvery > 0 && i+1 < len(items); i += swapEvery {
		items[i].ID, items[i+1].ID = items[i+1].ID, items[i].ID
	}
	return items
}
