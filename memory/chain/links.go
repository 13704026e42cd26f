package chain

import (
	"sort"
	"sync"
)

// links is a tenant's edges in memory, both ways, for retrieval: what an
// item continues or drew on, and what continues it or answered from it.
type links struct {
	mu sync.RWMutex
	by map[int64]*node
}

type node struct {
	user int64
	out  []Link
}

func newLinks() *links { return &links{by: map[int64]*node{}} }

func (l *links) at(id, user int64) *node {
	n := l.by[id]
	if n == nil {
		n = &node{user: user}
		l.by[id] = n
	}
	return n
}

// add1 adds one edge once; the caller holds the lock, or builds a fresh
// links. An edge can come twice: a load that read edges another writer
// stored past the watermark it replayed to derives them again.
func (l *links) add1(e Edge) {
	l.at(e.Src, e.UserID).put(Link{ID: e.Dst, Relation: e.Relation, Weight: e.Weight, Tokens: e.DstTokens})
	l.at(e.Dst, e.UserID).put(Link{ID: e.Src, Relation: e.Relation, Later: true, Weight: e.Weight, Tokens: e.SrcTokens})
}

// maxLinks is how many neighbours an item keeps in memory, its heaviest:
// a frame reads a few of them (Context.ChainPer), and an item many later
// turns continue must not cost every frame that finds it a sort of
// thousands (the store keeps them all).
const maxLinks = 16

// put keeps n.out sorted, heaviest first (of equal weight the newer),
// without duplicates, and at most maxLinks long.
func (n *node) put(k Link) {
	for _, o := range n.out {
		if o.ID == k.ID && o.Relation == k.Relation && o.Later == k.Later {
			return
		}
	}
	i := sort.Search(len(n.out), func(i int) bool { return heavier(k, n.out[i]) })
	if i >= maxLinks {
		return
	}
	if len(n.out) < maxLinks {
		n.out = append(n.out, Link{})
	}
	copy(n.out[i+1:], n.out[i:])
	n.out[i] = k
}

func heavier(a, b Link) bool {
	if a.Weight != b.Weight {
		return a.Weight > b.Weight
	}
	return a.ID > b.ID
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
	l.by = o.by
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
		n := l.by[id]
		if n == nil || n.user != user || len(n.out) == 0 {
			continue
		}
		ls := n.out
		if per > 0 && len(ls) > per {
			ls = ls[:per]
		}
		out[id] = append([]Link(nil), ls...)
	}
	return out
}
