// Package chain derives the chain graph: edges between stored items of one
// owner that say "these belong to one thread". The rules (this file) are a
// pure function of the items in the tenant log's order, so the writer
// (writer.go, the only code that stores edges) can resume after a crash and
// a rebuild from scratch gives the same edges, which integrity checks.
//
// Two relations:
//
//   - thread: an item continues an earlier item of its owner's memory that
//     shares words rare in that memory (names, places, numbers, a subject:
//     "my adoption meeting went well" and "we applied to the adoption
//     agency"), in another conversation or far back in the same one (the
//     turns next to it are the conversation's own adjacency);
//   - evidence: a captured reply drew on an item its request showed the
//     model (a frame item or a memory tool's result) whose rare words it
//     uses.
//
// Rarity is the owner's own: a word is rare for an item while it occurred
// in at most MaxDF of the owner's earlier items, and weighs
// ln(1 + n/df) with n the owner's earlier items. Statistics are per owner,
// so another user's turns, or their purge, never change an owner's edges.
// Words are the content terms of a fixed shipped lexicon (Lexicon), not the
// tenant's active dictionary, so a dictionary flip changes no edge.
package chain

import (
	"math"
	"slices"
	"sort"

	"github.com/perpetuity/perpetuity/memory/store"
)

// Relations, as stored.
const (
	Thread   = "thread"
	Evidence = "evidence"
)

// LexiconVersion is the shipped dictionary whose terms the rules read.
// Changing it changes edges: that is a rebuild, not a flip.
const LexiconVersion = 2

// Lexicon maps stored tokens to content terms (stopwords dropped, forms
// folded to their lemma).
type Lexicon interface {
	Terms(tokens []string) (ids []uint32, freqs []uint16, length int)
}

// Rules tune the graph. Zero values take the defaults.
type Rules struct {
	// MaxDF: a word is rare while at most this many earlier items of the
	// owner held it.
	MaxDF int
	// Links is the most thread edges an item gets (its best).
	Links int
	// MinWeight is the least summed weight of the rare words a thread edge
	// rests on.
	MinWeight float64
	// Near: an earlier item of the same conversation fewer than Near of the
	// owner's items back is adjacency, not a thread.
	Near int
	// EvidenceLinks and MinEvidence are Links and MinWeight for evidence.
	EvidenceLinks int
	MinEvidence   float64
}

func (r Rules) withDefaults() Rules {
	if r.MaxDF <= 0 {
		r.MaxDF = 8
	}
	if r.Links <= 0 {
		r.Links = 3
	}
	if r.MinWeight <= 0 {
		r.MinWeight = 8
	}
	if r.Near <= 0 {
		r.Near = 16
	}
	if r.EvidenceLinks <= 0 {
		r.EvidenceLinks = 5
	}
	if r.MinEvidence <= 0 {
		r.MinEvidence = 4
	}
	return r
}

// ref is an earlier item in a rare word's postings.
type ref struct {
	id     int64
	conv   int64
	n      int32 // the owner's item count before it
	tokens int32
}

// owner is one memory user's statistics.
type owner struct {
	n    int32
	df   map[uint32]int32
	post map[uint32][]ref // only while the word is rare
}

// Graph applies the rules to items in log order.
type Graph struct {
	rules  Rules
	lex    Lexicon
	owners map[int64]*owner
}

// NewGraph starts an empty graph.
func NewGraph(lex Lexicon, rules Rules) *Graph {
	return &Graph{rules: rules.withDefaults(), lex: lex, owners: map[int64]*owner{}}
}

// Edge is a derived edge with both ends' token counts: the shape the
// store reads edges back in.
type Edge = store.ChainEdgeSized

// Purge forgets an owner: what they store after a purge starts afresh.
func (g *Graph) Purge(user int64) { delete(g.owners, user) }

// Add derives the edges of it, the next item in log order, and then counts
// it in its owner's statistics.
func (g *Graph) Add(it store.ChainItem) []Edge {
	o := g.owners[it.UserID]
	if o == nil {
		o = &owner{df: map[uint32]int32{}, post: map[uint32][]ref{}}
		g.owners[it.UserID] = o
	}
	terms, _, _ := g.lex.Terms(it.Tokens)
	var out []Edge
	if o.n > 0 && len(terms) > 0 {
		// A reply's link to what it drew on says more than a thread does:
		// an item it drew on is not also a thread of it.
		ws := g.weights(o, terms)
		if len(it.Sources) > 0 {
			out = g.evidence(o, it, ws)
		}
		out = append(out, g.thread(o, it, ws, out)...)
	}
	me := ref{id: it.ID, conv: it.ConvID, n: o.n, tokens: it.TokenCount}
	for _, t := range terms {
		d := o.df[t] + 1
		o.df[t] = d
		switch {
		case int(d) <= g.rules.MaxDF:
			o.post[t] = append(o.post[t], me)
		case int(d) == g.rules.MaxDF+1:
			delete(o.post, t) // no longer rare: never a candidate again
		}
	}
	o.n++
	return out
}

// maxRare bounds the rare words one item is linked by.
const maxRare = 256

type scored struct {
	ref
	w float64
}

// weights sums, per earlier item, the weights of the rare words it shares
// with terms.
func (g *Graph) weights(o *owner, terms []uint32) []scored {
	type rareTerm struct {
		t  uint32
		df int32
	}
	rare := make([]rareTerm, 0, len(terms))
	for _, t := range terms {
		if d := o.df[t]; d > 0 && int(d) <= g.rules.MaxDF {
			rare = append(rare, rareTerm{t, d})
		}
	}
	if len(rare) > maxRare {
		// A huge turn (a pasted file, a 20k-word question) links by its
		// rarest words only: the writer's cost per item stays bounded.
		sort.Slice(rare, func(i, j int) bool {
			if rare[i].df != rare[j].df {
				return rare[i].df < rare[j].df
			}
			return rare[i].t < rare[j].t
		})
		rare = rare[:maxRare]
	}
	idx := make(map[int64]int, 4*len(rare))
	var out []scored
	for _, rt := range rare {
		w := math.Log1p(float64(o.n) / float64(rt.df))
		for _, r := range o.post[rt.t] {
			i, ok := idx[r.id]
			if !ok {
				i = len(out)
				idx[r.id] = i
				out = append(out, scored{ref: r})
			}
			out[i].w += w
		}
	}
	return out
}

func (g *Graph) thread(o *owner, it store.ChainItem, ws []scored, drewOn []Edge) []Edge {
	far := func(r ref) bool {
		for _, e := range drewOn {
			if e.Dst == r.id {
				return false
			}
		}
		return r.conv != it.ConvID || o.n-r.n >= int32(g.rules.Near)
	}
	return g.pick(it, Thread, ws, far, g.rules.Links, g.rules.MinWeight)
}

func (g *Graph) evidence(o *owner, it store.ChainItem, ws []scored) []Edge {
	src := slices.Clone(it.Sources)
	slices.Sort(src)
	// The reply's own question and the turns just before it were shown
	// too, but they are what it answers, not memory it drew on.
	shown := func(r ref) bool {
		if r.conv == it.ConvID && o.n-r.n < int32(g.rules.Near) {
			return false
		}
		_, ok := slices.BinarySearch(src, r.id)
		return ok
	}
	return g.pick(it, Evidence, ws, shown, g.rules.EvidenceLinks, g.rules.MinEvidence)
}

// pick keeps the limit heaviest of the ws keep accepts at min or above; of equal weight the
// nearer in time, so the choice never depends on the order of ws. A few
// links of thousands of candidates are selected, not sorted.
func (g *Graph) pick(it store.ChainItem, rel string, ws []scored, keep func(ref) bool, limit int, min float64) []Edge {
	best := make([]scored, 0, limit+1)
	for _, s := range ws {
		if s.w < min || !keep(s.ref) {
			continue
		}
		i := sort.Search(len(best), func(i int) bool {
			return s.w > best[i].w || (s.w == best[i].w && s.id > best[i].id)
		})
		if i == limit {
			continue
		}
		best = append(best, scored{})
		copy(best[i+1:], best[i:])
		best[i] = s
		if len(best) > limit {
			best = best[:limit]
		}
	}
	out := make([]Edge, 0, len(best))
	for _, s := range best {
		out = append(out, Edge{ChainEdge: store.ChainEdge{Src: it.ID, Dst: s.id, Relation: rel, UserID: it.UserID,
			Weight: float32(s.w)}, SrcTokens: it.TokenCount, DstTokens: s.tokens})
	}
	return out
}

// OwnerEdges derives one owner's whole graph from their items in log
// order: what a rebuild derives for them, since an owner's edges depend on
// their own items only. A redaction stores it in place of the owner's
// edges.
func OwnerEdges(lex Lexicon, rules Rules, items []store.ChainItem) []store.ChainEdge {
	g := NewGraph(lex, rules)
	var out []store.ChainEdge
	for _, it := range items {
		for _, e := range g.Add(it) {
			out = append(out, e.ChainEdge)
		}
	}
	return out
}
