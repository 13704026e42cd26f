// Package arena is the resident memory of one tenant: every stored item held
// in a compact struct-of-arrays form, and an exact BM25 scan over the items a
// user may see, spread over worker goroutines with a deterministic merge.
//
// Items of one user sit together in chunks (the workers' shards), so
// visibility is decided per chunk and never per item. A search runs in two
// stages: a first pass reads only 512-bit term signatures, stored by column,
// and bounds each item's score from above; an exact rescore then reads the
// terms of the best-bounded items and stops only when no unread item can
// still enter the top K (see search.go for the argument). Results equal
// ReferenceSearch exactly, whatever the number of workers.
//
// Resident size is ~155 bytes per synthetic chat turn (20 distinct terms):
// 64 of signature, 45 of fixed fields, ~2.2 per term (codec.go).
//
// Concurrency: Search may run concurrently with other Searches; Add,
// RemoveUser and Reset take the write side of one RWMutex and so wait for
// running searches and exclude new ones (catch-up should Add in batches of
// thousands, not millions, to keep searches flowing). Each search runs its
// workers as fresh goroutines: measured against a persistent pool, both cost
// ~2 µs of dispatch, noise next to a scan, and fresh goroutines need no
// lifecycle.
package arena

import (
	"cmp"
	"math"
	"runtime"
	"slices"
	"sync"
	"unsafe"
)

// Options tune an arena. Zero values take the defaults.
type Options struct {
	Workers int     // scan goroutines (default GOMAXPROCS)
	K1      float32 // BM25 k1 (default 1.2)
	B       float32 // BM25 b (default 0.75); a negative value means 0
	// Dims is the length of the items' dense vectors (0: the arena holds
	// none and scores lexically only).
	Dims int
	// ChunkItems is the number of items per chunk, the unit of work of a
	// worker (default 4096, at most 65536).
	ChunkItems int
	// The first pass keeps max(MinCandidates, CandidatesPerK*K,
	// CandidatesPerSqrtN*sqrt(N)) candidates in all (defaults 256, 4, 8), N
	// being the live corpus the query sees (the visible users' items).
	MinCandidates      int
	CandidatesPerK     int
	CandidatesPerSqrtN float64
	// A hybrid search past DenseExact items computes the exact cosine of
	// max(MinCandidates, DenseCandidatesPerK*K, DenseCandidatesPerSqrtN*
	// sqrt(N)) candidates (defaults 6 and 12, hybrid.go).
	DenseCandidatesPerK     int
	DenseCandidatesPerSqrtN float64
	// MaxTerms caps the query terms a search scores with (default
	// DefaultMaxTerms): the rarest are kept, the rest dropped before the
	// scan. A search's work is at most about ProbeCeiling(visible items,
	// MaxTerms) signature tests, whatever the question's length.
	MaxTerms int
}

// DefaultMaxTerms is the default term cap. A question rarely holds more
// than a dozen content words; 64 keeps every word of any ordinary question
// and of its expansion, and of a pasted page the rarest 64, which are the
// ones that decide its ranking.
const DefaultMaxTerms = 64

func (o Options) withDefaults() Options {
	if o.Workers <= 0 {
		o.Workers = runtime.GOMAXPROCS(0)
	}
	if o.K1 <= 0 {
		o.K1 = 1.2
	}
	if o.B == 0 {
		o.B = 0.75
	}
	if o.B < 0 {
		o.B = 0
	}
	if o.B > 1 {
		o.B = 1
	}
	if o.ChunkItems <= 0 {
		o.ChunkItems = 4096
	}
	o.ChunkItems = min(o.ChunkItems, 1<<posBits)
	if o.MinCandidates <= 0 {
		o.MinCandidates = 256
	}
	if o.CandidatesPerK <= 0 {
		o.CandidatesPerK = 4
	}
	if o.CandidatesPerSqrtN <= 0 {
		o.CandidatesPerSqrtN = 8
	}
	if o.DenseCandidatesPerK <= 0 {
		o.DenseCandidatesPerK = 6
	}
	if o.DenseCandidatesPerSqrtN <= 0 {
		o.DenseCandidatesPerSqrtN = 12
	}
	if o.MaxTerms <= 0 {
		o.MaxTerms = DefaultMaxTerms
	}
	return o
}

// denseTerms bounds the term ids whose df lives in a slice; dictionary ids
// are small, hashed unknown words go to a map.
const denseTerms = 1 << 22

// Arena holds every item of one tenant.
type Arena struct {
	opts Options

	mu        sync.RWMutex
	chunks    []*chunk           // by slot; nil once removed
	users     map[int64][]*chunk // each user's chunks in arrival order
	n         int
	totalLen  uint64
	postings  int
	watermark int64
	dfDense   []uint32
	dfSparse  map[TermID]uint32

	cands   sync.Pool // *[]cand scratch of searches
	scores  sync.Pool // *[]float32 scratch of hybrid searches
	accs    sync.Pool // *[]float64 scratch of hybrid searches' inverted scoring
	hitBufs sync.Pool // *[]Hit candidate buffers of two-stage hybrid searches
	rot     *rotation // the dense codes' rotation (binary.go); nil without vectors
}

// New returns an empty arena.
func New(opts Options) *Arena {
	a := &Arena{opts: opts.withDefaults()}
	if a.opts.Dims > 0 {
		a.rot = newRotation()
	}
	a.reset()
	return a
}

func (a *Arena) reset() {
	a.chunks = nil
	a.users = map[int64][]*chunk{}
	a.n, a.totalLen, a.postings, a.watermark = 0, 0, 0, 0
	a.dfDense = nil
	a.dfSparse = map[TermID]uint32{}
}

// Add appends items (in increasing Seq; ids need not increase).
func (a *Arena) Add(items ...Item) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.add(items)
}

func (a *Arena) add(items []Item) {
	if len(items) >= parallelAddMin && a.opts.Workers > 1 {
		a.addParallel(items)
		return
	}
	for i := range items {
		it := &items[i]
		terms, freqs, length := canonical(*it)
		c := a.chunkFor(it.User, nil)
		c.add(it, terms, freqs, length, a.rot)
		if c.n() == a.opts.ChunkItems {
			c.seal()
		}
		a.counted(it, terms, length)
	}
}

// chunkFor is the chunk user's next item goes into, its open chunk or a
// new one; pending (nil: none) counts the items already bound for a chunk
// but not yet in it.
func (a *Arena) chunkFor(user int64, pending map[*chunk]int) *chunk {
	cs := a.users[user]
	if k := len(cs); k > 0 && cs[k-1].n()+pending[cs[k-1]] < a.opts.ChunkItems {
		return cs[k-1]
	}
	c := newChunk(len(a.chunks), user, a.opts.Dims, len(cs)*a.opts.ChunkItems)
	a.chunks = append(a.chunks, c)
	a.users[user] = append(cs, c)
	return c
}

// counted adds an item's terms and length to the arena's statistics.
func (a *Arena) counted(it *Item, terms []TermID, length uint32) {
	for _, t := range terms {
		a.dfAdd(t, 1)
	}
	a.n++
	a.totalLen += uint64(length)
	a.postings += len(terms)
	a.watermark = max(a.watermark, it.Seq)
}

func (a *Arena) dfAdd(t TermID, d int) {
	if t < denseTerms {
		if int(t) >= len(a.dfDense) {
			a.dfDense = slices.Grow(a.dfDense, int(t)+1-len(a.dfDense))
			a.dfDense = a.dfDense[:cap(a.dfDense)]
		}
		a.dfDense[t] = uint32(int(a.dfDense[t]) + d)
		return
	}
	v := int(a.dfSparse[t]) + d
	if v <= 0 {
		delete(a.dfSparse, t)
		return
	}
	a.dfSparse[t] = uint32(v)
}

func (a *Arena) df(t TermID) int {
	if t < denseTerms {
		if int(t) < len(a.dfDense) {
			return int(a.dfDense[t])
		}
		return 0
	}
	return int(a.dfSparse[t])
}

// RemoveUser drops every item of user (a purge) and returns how many.
func (a *Arena) RemoveUser(user int64) int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.removeUser(user)
}

// RemoveItem drops one item of user (a redaction) and reports whether the
// arena held it. Chunks are never modified in place, so the user's other
// items are laid out again in their arrival order: the arena ends as a
// fresh load without the item would, and the Hit indexes of the user's
// old chunks go stale (Item reports them so).
func (a *Arena) RemoveItem(user, id int64) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	var keep []Item
	found := false
	for _, c := range a.users[user] {
		if id < c.idMin || id > c.idMax {
			for i := range c.n() {
				keep = append(keep, c.item(i, nil, nil))
			}
			continue
		}
		for i := range c.n() {
			if c.ids[i] == id {
				found = true
				continue
			}
			keep = append(keep, c.item(i, nil, nil))
		}
	}
	if !found {
		return false
	}
	watermark := a.watermark
	a.removeUser(user)
	a.add(keep)
	a.watermark = watermark // the removed item's position was read too
	return true
}

func (a *Arena) removeUser(user int64) int {
	removed := 0
	var terms []TermID
	var freqs []uint16
	for _, c := range a.users[user] {
		for i := range c.n() {
			terms, freqs = decodeTerms(c.terms(i), terms[:0], freqs[:0])
			for _, t := range terms {
				a.dfAdd(t, -1)
			}
			a.postings -= len(terms)
		}
		for _, l := range c.lens {
			a.totalLen -= uint64(l)
		}
		removed += c.n()
		a.chunks[c.slot] = nil
	}
	delete(a.users, user)
	a.n -= removed
	return removed
}

// Reset empties the arena (dictionary flip: the caller reloads everything).
func (a *Arena) Reset() {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.reset()
}

// Len is the number of items held.
func (a *Arena) Len() int {
	a.mu.RLock()
	defer a.mu.RUnlock()
	return a.n
}

// Watermark is the largest Seq added since the last Reset (0 if none).
func (a *Arena) Watermark() int64 {
	a.mu.RLock()
	defer a.mu.RUnlock()
	return a.watermark
}

// DF is the tenant-wide document frequency of t.
func (a *Arena) DF(t TermID) int {
	a.mu.RLock()
	defer a.mu.RUnlock()
	return a.df(t)
}

// Stats describe what the arena holds.
type Stats struct {
	Items         int
	Users         int
	Chunks        int
	TotalLength   uint64 // sum of item lengths
	Postings      int    // sum of distinct terms per item
	DistinctTerms int    // terms with df > 0
	BytesResident int    // arrays by capacity, df tables and bookkeeping
	BytesPerItem  float64
}

// Stats reports sizes; BytesResident is what the scan has to keep in memory.
func (a *Arena) Stats() Stats {
	a.mu.RLock()
	defer a.mu.RUnlock()
	s := Stats{Items: a.n, Users: len(a.users), TotalLength: a.totalLen, Postings: a.postings}
	b := a.bytes()
	for _, c := range a.chunks {
		if c != nil {
			s.Chunks++
		}
	}
	for _, d := range a.dfDense {
		if d > 0 {
			s.DistinctTerms++
		}
	}
	s.DistinctTerms += len(a.dfSparse)
	s.BytesResident = b
	if a.n > 0 {
		s.BytesPerItem = float64(b) / float64(a.n)
	}
	return s
}

// Bytes is Stats().BytesResident without the rest of Stats (which walks
// the df table): cheap enough to take after every catch-up, which is how
// the engine keeps its arenas within a memory budget.
func (a *Arena) Bytes() int {
	a.mu.RLock()
	defer a.mu.RUnlock()
	return a.bytes()
}

// bytes is the resident size: arrays by capacity, df tables and
// bookkeeping. The caller holds a.mu.
func (a *Arena) bytes() int {
	b := int(unsafe.Sizeof(*a)) + 8*cap(a.chunks) + 4*cap(a.dfDense) + 16*len(a.dfSparse)
	for _, c := range a.chunks {
		if c != nil {
			b += c.bytes()
		}
	}
	for _, cs := range a.users {
		b += 8*cap(cs) + 48
	}
	return b
}

// Item reads back the item behind a Hit.Index (its terms canonical: sorted,
// distinct). ok is false for an index that does not address an item (stale
// after RemoveUser or Reset).
func (a *Arena) Item(index int) (Item, bool) {
	a.mu.RLock()
	defer a.mu.RUnlock()
	c, pos, ok := a.at(index)
	if !ok {
		return Item{}, false
	}
	return c.item(pos, nil, nil), true
}

// Meta is Item without Terms and Freqs: what the frame needs of a hit (user,
// conversation, clock, decay), without decoding or allocating.
func (a *Arena) Meta(index int) (Item, bool) {
	a.mu.RLock()
	defer a.mu.RUnlock()
	c, pos, ok := a.at(index)
	if !ok {
		return Item{}, false
	}
	return c.meta(pos), true
}

func (a *Arena) at(index int) (*chunk, int, bool) {
	slot, pos := unhandle(index)
	if index < 0 || slot >= len(a.chunks) || a.chunks[slot] == nil || pos >= a.chunks[slot].n() {
		return nil, 0, false
	}
	return a.chunks[slot], pos, true
}

// Each calls fn for every item, by user id ascending then arrival order,
// until fn returns false. Terms and Freqs are reused from one call to the
// next: copy them to keep them. The arena is read-locked meanwhile: fn must
// not call Add, RemoveUser or Reset.
func (a *Arena) Each(fn func(index int, it Item) bool) {
	a.mu.RLock()
	defer a.mu.RUnlock()
	users := make([]int64, 0, len(a.users))
	for u := range a.users {
		users = append(users, u)
	}
	slices.SortFunc(users, cmp.Compare[int64])
	var terms []TermID
	var freqs []uint16
	for _, u := range users {
		for _, c := range a.users[u] {
			for i := range c.n() {
				it := c.item(i, terms, freqs)
				terms, freqs = it.Terms, it.Freqs
				if !fn(handle(c.slot, i), it) {
					return
				}
			}
		}
	}
}

// Digest is the sum of ItemDigest over every item: equal to the same sum over
// the store's rows exactly when both hold the same items (up to collisions).
func (a *Arena) Digest() uint64 {
	var d uint64
	a.Each(func(_ int, it Item) bool {
		d += ItemDigest(it)
		return true
	})
	return d
}

// candidateBudget grows with the live corpus: false positives of the
// signatures grow linearly with it, but most rescoring stops long before the
// budget is used up, and a larger budget lowers the first pass's cutoff,
// which is what lets it skip items after testing only their heaviest terms.
// sqrt(N) balances the two.
func (o Options) denseBudget(k, n int) int {
	return max(o.MinCandidates, o.DenseCandidatesPerK*k, int(math.Ceil(o.DenseCandidatesPerSqrtN*math.Sqrt(float64(n)))))
}

func (o Options) candidateBudget(k, n int) int {
	return max(o.MinCandidates, o.CandidatesPerK*k, int(math.Ceil(o.CandidatesPerSqrtN*math.Sqrt(float64(n)))))
}
