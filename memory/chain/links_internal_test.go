package chain

import (
	"fmt"
	"runtime"
	"slices"
	"testing"
	"time"

	"github.com/perpetuity/perpetuity/memory/store"
)

func edge(src, dst, user int64, rel string, w float32) Edge {
	return Edge{ChainEdge: store.ChainEdge{Src: src, Dst: dst, Relation: rel, UserID: user, Weight: w},
		SrcTokens: int32(src * 10), DstTokens: int32(dst * 10)}
}

// TestLinks: an item's links read back heaviest first (of equal weight the
// newer), each way with its relation, direction and the other end's
// tokens; an edge given twice is kept once, the same ends under another
// relation twice; an item keeps its 16 heaviest; per cuts the read; an id
// read as another user's gets nothing; a purge drops the user's items; a
// replaced links reads the other's edges and relations.
func TestLinks(t *testing.T) {
	t.Parallel()
	type got = map[int64][]Link
	for _, tc := range []struct {
		name  string
		edges []Edge
		then  func(l *links)
		user  int64
		ids   []int64
		per   int
		want  got
	}{
		{"both ways", []Edge{edge(2, 1, 7, Thread, 1.5)}, nil, 7, []int64{1, 2}, 0, got{
			1: {{ID: 2, Relation: Thread, Later: true, Weight: 1.5, Tokens: 20}},
			2: {{ID: 1, Relation: Thread, Weight: 1.5, Tokens: 10}},
		}},
		{"heaviest first, then the newer", []Edge{edge(5, 1, 7, Thread, 1), edge(3, 1, 7, Evidence, 2), edge(4, 1, 7, Thread, 1)}, nil, 7, []int64{1}, 0, got{
			1: {{ID: 3, Relation: Evidence, Later: true, Weight: 2, Tokens: 30}, {ID: 5, Relation: Thread, Later: true, Weight: 1, Tokens: 50},
				{ID: 4, Relation: Thread, Later: true, Weight: 1, Tokens: 40}},
		}},
		{"twice is once; another relation is another link", []Edge{edge(2, 1, 7, Thread, 1), edge(2, 1, 7, Thread, 1), edge(2, 1, 7, Evidence, 1)}, nil, 7, []int64{2}, 0, got{
			2: {{ID: 1, Relation: Thread, Weight: 1, Tokens: 10}, {ID: 1, Relation: Evidence, Weight: 1, Tokens: 10}},
		}},
		{"per", []Edge{edge(2, 1, 7, Thread, 1), edge(3, 1, 7, Thread, 3), edge(4, 1, 7, Thread, 2)}, nil, 7, []int64{1}, 2, got{
			1: {{ID: 3, Relation: Thread, Later: true, Weight: 3, Tokens: 30}, {ID: 4, Relation: Thread, Later: true, Weight: 2, Tokens: 40}},
		}},
		{"another user's item", []Edge{edge(2, 1, 7, Thread, 1)}, nil, 8, []int64{1, 2}, 0, got{}},
		{"a purge", []Edge{edge(2, 1, 7, Thread, 1), edge(12, 11, 8, Thread, 1)}, func(l *links) { l.removeUser(7) }, 8, []int64{11}, 0, got{
			11: {{ID: 12, Relation: Thread, Later: true, Weight: 1, Tokens: 120}},
		}},
		{"a purged user's items are gone", []Edge{edge(2, 1, 7, Thread, 1)}, func(l *links) { l.removeUser(7) }, 7, []int64{1, 2}, 0, got{}},
		{"replaced", []Edge{edge(2, 1, 7, Thread, 1)}, func(l *links) {
			o := newLinks()
			o.add1(edge(4, 3, 7, Evidence, 2))
			o.add1(edge(5, 3, 7, Thread, 1))
			l.replace(o)
		}, 7, []int64{1, 3}, 0, got{
			3: {{ID: 4, Relation: Evidence, Later: true, Weight: 2, Tokens: 40}, {ID: 5, Relation: Thread, Later: true, Weight: 1, Tokens: 50}},
		}},
	} {
		l := newLinks()
		l.add(tc.edges)
		if tc.then != nil {
			tc.then(l)
		}
		if g := l.around(tc.user, tc.ids, tc.per); fmt.Sprint(g) != fmt.Sprint(tc.want) {
			t.Errorf("%s: %v, want %v", tc.name, g, tc.want)
		}
	}
	// The 16 heaviest of 40, in order.
	l := newLinks()
	for i := range int64(40) {
		l.add([]Edge{edge(100+i, 1, 7, Thread, float32(i%20))})
	}
	var ws []float32
	var ids []int64
	for _, k := range l.around(7, []int64{1}, 0)[1] {
		ws, ids = append(ws, k.Weight), append(ids, k.ID)
	}
	wantW := []float32{19, 19, 18, 18, 17, 17, 16, 16, 15, 15, 14, 14, 13, 13, 12, 12}
	wantIDs := []int64{139, 119, 138, 118, 137, 117, 136, 116, 135, 115, 134, 114, 133, 113, 132, 112}
	if !slices.Equal(ws, wantW) || !slices.Equal(ids, wantIDs) {
		t.Errorf("kept %v %v, want %v %v", ws, ids, wantW, wantIDs)
	}
}

// BenchmarkLinksHeap: a tenant of 250k items, each continuing up to three
// earlier ones (1, 8 and 15 back), held as links; reports how long
// building them took, the heap they take per item and how long a full
// collection takes with them live.
func BenchmarkLinksHeap(b *testing.B) {
	const n = 250_000
	var es []Edge
	for i := int64(1); i <= n; i++ {
		for j := int64(0); j < 3 && 1+7*j < i; j++ {
			es = append(es, edge(i, i-1-7*j, i%10, []string{Thread, Evidence}[j%2], float32(j+1)))
		}
	}
	var build, gc time.Duration
	var heap uint64
	for b.Loop() {
		runtime.GC()
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		t0 := time.Now()
		l := newLinks()
		l.add(es)
		build += time.Since(t0)
		runtime.GC()
		runtime.ReadMemStats(&after)
		t0 = time.Now()
		runtime.GC()
		gc += time.Since(t0)
		heap += after.HeapAlloc - before.HeapAlloc
		runtime.KeepAlive(l)
	}
	b.ReportMetric(float64(build.Milliseconds())/float64(b.N), "ms/build")
	b.ReportMetric(float64(heap)/float64(b.N)/n, "B/item")
	b.ReportMetric(float64(gc.Microseconds())/float64(b.N), "µs/GC")
}
