package chain

import (
	"math"
	"slices"
	"sort"
	"sync"
)

// links is a tenant's edges in memory, both ways, for retrieval: what an
// item continues or drew on, and what continues it or answered from it.
//
// An item's node is held in the map by value and its links hold no
// pointer (the relation is a code into rels), so the collector finds one
// pointer an item here and scans no link: at 2×250k items a map of
// pointers to nodes whose links held their relation as a string was
// ~100 MB of the process's 520 MB live heap, all of it scanned.
type links struct {
	mu   sync.RWMutex
	by   map[int64]node
	rels []string // relation names by code (graph.go's two, or what the store holds)
}

type node struct {
	user int64
	out  []link
}

// link is a Link as links keep it.
type link struct {
	id     int64
	weight float32
	tokens int32
	rel    uint8
	later  bool
}

func newLinks() *links { return &links{by: map[int64]node{}} }

// code is rel's code; false when 256 names have codes already (the store
// then keeps such an edge, memory does not).
func (l *links) code(rel string) (uint8, bool) {
	if i := slices.Index(l.rels, rel); i >= 0 {
		return uint8(i), true
	}
	if len(l.rels) > math.MaxUint8 {
		return 0, false
	}
	l.rels = append(l.rels, rel)
	return uint8(len(l.rels) - 1), true
}

// add1 adds one edge once; the caller holds the lock, or builds a fresh
// links. An edge can come twice: a load that read edges another writer
// stored past the watermark it replayed to derives them again.
func (l *links) add1(e Edge) {
	rel, ok := l.code(e.Relation)
	if !ok {
		return
	}
	l.put(e.Src, e.UserID, link{id: e.Dst, rel: rel, weight: e.Weight, tokens: e.DstTokens})
	l.put(e.Dst, e.UserID, link{id: e.Src, rel: rel, later: true, weight: e.Weight, tokens: e.SrcTokens})
}

// maxLinks is how many neighbours an item keeps in memory, its heaviest:
// a frame reads a few of them (Context.ChainPer), and an item many later
// turns continue must not cost every frame that finds it a sort of
// thousands (the store keeps them all).
const maxLinks = 16

// put keeps id's links sorted, heaviest first (of equal weight the newer),
// without duplicates, and at most maxLinks long.
func (l *links) put(id, user int64, k link) {
	n, ok := l.by[id]
	if !ok {
		n.user = user
	}
	for _, o := range n.out {
		if o.id == k.id && o.rel == k.rel && o.later == k.later {
			return
		}
	}
	i := sort.Search(len(n.out), func(i int) bool { return heavier(k, n.out[i]) })
	if i >= maxLinks {
		return // never for a new node: it has no links to be lighter than
	}
	if len(n.out) < maxLinks {
		n.out = append(n.out, link{})
	}
	copy(n.out[i+1:], n.out[i:])
	n.out[i] = k
	l.by[id] = n
}

func heavier(a, b link) bool {
	if a.weight != b.weight {
		return a.weight > b.weight
	}
	return a.id > b.id
}

func (l *links) add(es []Edge) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, e := range es {
		l.add1(e)
	}
}

// replace takes over another links' edges (a reload), for readers holding l.
func (l *links) replace(o *links) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.by, l.rels = o.by, o.rels
}

// removeUser drops a purged user's edges.
func (l *links) removeUser(user int64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for id, n := range l.by {
		if n.user == user {
			delete(l.by, id)
		}
	}
}

// around reads the neighbours of the user's items; an id of another owner
// gets none, whatever the graph says.
func (l *links) around(user int64, ids []int64, per int) map[int64][]Link {
	l.mu.RLock()
	defer l.mu.RUnlock()
	out := make(map[int64][]Link, len(ids))
	for _, id := range ids {
		n, ok := l.by[id]
		if !ok || n.user != user || len(n.out) == 0 {
			continue
		}
		ls := n.out
		if per > 0 && len(ls) > per {
			ls = ls[:per]
		}
		got := make([]Link, len(ls))
		for i, k := range ls {
			got[i] = Link{ID: k.id, Relation: l.rels[k.rel], Later: k.later, Weight: k.weight, Tokens: k.tokens}
		}
		out[id] = got
	}
	return out
}
