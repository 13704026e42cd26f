package chain

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/perpetuity/perpetuity/memory/guard"
	"github.com/perpetuity/perpetuity/memory/store"
)

// BatchReader reads the tenant log in batches: all a rebuild needs.
type BatchReader interface {
	ReadChainBatch(ctx context.Context, tenantID, after, upto int64) (store.ChainBatch, error)
}

// Store is what the writer reads and writes.
type Store interface {
	BatchReader
	ChainHead(ctx context.Context, tenantID int64) (int64, error)
	WriteChainEdges(ctx context.Context, tenantID, from, to, seen int64, edges []store.ChainEdge) error
	ChainEdges(ctx context.Context, tenantID int64) ([]store.ChainEdgeSized, error)
}

// batchSeqs bounds one read and one write of the writer: this many log
// positions (captures and purges).
const batchSeqs = 2000

// Writer is the one writer of the chain graph. Captures kick it after they
// commit; it reads the tenant log from its stored watermark, derives the
// new items' edges and stores them with the new watermark in one
// transaction, off every request's path. It also keeps each tenant's
// edges in memory for retrieval (Around). Every serving process runs one:
// the rules are deterministic, so two writers derive the same edges, and
// the watermark check makes the second one reload instead of writing.
type Writer struct {
	st    Store
	lex   Lexicon
	rules Rules
	errs  func(error)

	settle time.Duration

	mu      sync.Mutex
	tenants map[int64]*tenant
	dirty   map[int64]bool
	wake    chan struct{}
}

// tenant is one tenant's graph state in this process.
type tenant struct {
	mu     sync.Mutex // serialises catch-up
	loaded bool
	graph  *Graph
	seen   int64 // the log position the graph and the stored watermark are at
	// fresh is the tenant head read before the graph was loaded: every
	// redaction at or below it is reflected in the graph (its item was
	// gone when the replay read the items). A later one rewrote its
	// owner's edges without the item, so the graph must be loaded again.
	fresh int64
	links *links
}

// NewWriter builds a writer; errs (nil: dropped) receives failures of the
// background catch-up, which retries them.
func NewWriter(st Store, lex Lexicon, rules Rules, errs func(error)) *Writer {
	return &Writer{st: st, lex: lex, rules: rules, errs: errs, settle: settle,
		tenants: map[int64]*tenant{}, dirty: map[int64]bool{}, wake: make(chan struct{}, 1)}
}

func (w *Writer) get(tenantID int64) *tenant {
	w.mu.Lock()
	defer w.mu.Unlock()
	t := w.tenants[tenantID]
	if t == nil {
		t = &tenant{links: newLinks()}
		w.tenants[tenantID] = t
	}
	return t
}

// Kick asks for the tenant's catch-up; it never blocks.
func (w *Writer) Kick(tenantID int64) {
	w.mu.Lock()
	w.dirty[tenantID] = true
	w.mu.Unlock()
	select {
	case w.wake <- struct{}{}:
	default:
	}
}

// Forget lets the tenant's graph go (the engine evicted its arena under a
// memory budget): the writer stops polling it, and the next Kick loads it
// again from the stored watermark. A catch-up running meanwhile finishes on
// the state it holds; the stored watermark keeps the two apart.
func (w *Writer) Forget(tenantID int64) {
	w.mu.Lock()
	defer w.mu.Unlock()
	delete(w.tenants, tenantID)
	delete(w.dirty, tenantID)
}

// A failed catch-up is tried again after retryAfter, doubling while it
// keeps failing up to retryMax: a lasting fault must not become a replay of
// the whole tenant every second.
const (
	retryAfter = time.Second
	retryMax   = time.Minute
)

// pollEvery is how often the writer looks, for every tenant it holds, for
// what no capture of this process kicked it for: other processes'
// captures, purges, flips.
const pollEvery = 3 * time.Second

// settle is how long a kicked writer waits before it catches up: in
// serving a tenant's captures come seconds apart (a model's reply between
// them), so the graph lags them by this, while a burst of captures (an
// import, many users of one tenant) is caught up in a few transactions,
// not one per capture.
const settle = 20 * time.Millisecond

// Run catches kicked tenants up until ctx ends.
func (w *Writer) Run(ctx context.Context) {
	tick := time.NewTicker(pollEvery)
	defer tick.Stop()
	backoff := map[int64]time.Duration{}
	for {
		select {
		case <-ctx.Done():
			return
		case <-w.wake:
			// Let the captures of the next moments kick it too: under load
			// one catch-up then takes many captures' items, each catch-up's
			// fixed statements paid once, off the cores those captures run on.
			select {
			case <-ctx.Done():
				return
			case <-time.After(w.settle):
			}
		case <-tick.C:
			w.mu.Lock()
			for id := range w.tenants {
				if _, waiting := backoff[id]; !waiting {
					w.dirty[id] = true
				}
			}
			w.mu.Unlock()
		}
		w.mu.Lock()
		todo := make([]int64, 0, len(w.dirty))
		for id := range w.dirty {
			todo = append(todo, id)
		}
		clear(w.dirty)
		w.mu.Unlock()
		for _, id := range todo {
			err := w.CatchUp(ctx, id)
			if err == nil {
				delete(backoff, id)
				continue
			}
			if ctx.Err() != nil {
				return
			}
			if errors.Is(err, store.ErrNotFound) {
				// The tenant has no head: it was deleted. There is nothing
				// to link, and retrying would log a failure every minute
				// for as long as the process runs.
				w.Forget(id)
				delete(backoff, id)
				continue
			}
			if w.errs != nil {
				w.errs(err)
			}
			d := min(max(2*backoff[id], retryAfter), retryMax)
			backoff[id] = d
			time.AfterFunc(d, func() { w.Kick(id) })
		}
	}
}

// CatchUp derives and stores the edges of everything the tenant committed
// so far. A tenant this process has not loaded is replayed first from its
// items up to the stored watermark (their edges are read, not derived).
func (w *Writer) CatchUp(ctx context.Context, tenantID int64) error {
	t := w.get(tenantID)
	t.mu.Lock()
	defer t.mu.Unlock()
	for attempt := 0; ; attempt++ {
		// A panic here would recur at every start if an item caused it:
		// it fails this tenant's catch-up, which reloads and backs off.
		err := guard.Run(func() error { return w.catchUp(ctx, tenantID, t) })
		if err == nil {
			return nil
		}
		// Another writer moved the watermark, or a purge removed items read
		// for this batch: start over from what is stored.
		if attempt < 3 && (errors.Is(err, store.ErrChainMoved) || errors.Is(err, store.ErrChainGone)) {
			t.loaded = false
			continue
		}
		t.loaded = false
		return fmt.Errorf("chain catch-up of tenant %d: %w", tenantID, err)
	}
}

func (w *Writer) catchUp(ctx context.Context, tenantID int64, t *tenant) error {
	if !t.loaded {
		if err := w.load(ctx, tenantID, t); err != nil {
			return err
		}
	}
	for {
		cb, err := w.st.ReadChainBatch(ctx, tenantID, t.seen, t.seen+batchSeqs)
		if err != nil {
			return err
		}
		if redactedAfter(cb, t.fresh) {
			if err := w.load(ctx, tenantID, t); err != nil {
				return err
			}
			continue
		}
		if cb.Upto == t.seen {
			return nil
		}
		edges, purged := apply(t.graph, cb)
		rows := make([]store.ChainEdge, len(edges))
		for i, e := range edges {
			rows[i] = e.ChainEdge
		}
		if err := w.write(ctx, tenantID, t, t.seen, cb, rows); err != nil {
			return err
		}
		for _, u := range purged {
			t.links.removeUser(u)
		}
		t.links.add(edges)
		t.seen = cb.Upto
	}
}

// write stores a batch's edges from the watermark from. Another writer
// moving the watermark meanwhile stored edges for part or all of the batch:
// they are the same edges (the rules are deterministic), so only those of
// the items past its watermark are written, from there. Each such retry
// follows the other writer's progress, so the loop ends; a watermark moved
// back (a rebuild) is ErrChainMoved and a redaction ErrChainRedacted, and
// the caller reloads.
func (w *Writer) write(ctx context.Context, tenantID int64, t *tenant, from int64, cb store.ChainBatch, rows []store.ChainEdge) error {
	for {
		err := w.st.WriteChainEdges(ctx, tenantID, from, cb.Upto, t.fresh, rows)
		if !errors.Is(err, store.ErrChainMoved) || errors.Is(err, store.ErrChainRedacted) {
			// A redaction is past any retry from the watermark: the caller
			// reloads the graph.
			return err
		}
		mark, err := w.st.ChainHead(ctx, tenantID)
		if err != nil {
			return err
		}
		if mark < from {
			return store.ErrChainMoved
		}
		if mark >= cb.Upto {
			return nil
		}
		seq := make(map[int64]int64, len(cb.Items))
		for _, it := range cb.Items {
			seq[it.ID] = it.Seq
		}
		rest := rows[:0:0]
		for _, e := range rows {
			if seq[e.Src] > mark {
				rest = append(rest, e)
			}
		}
		from, rows = mark, rest
	}
}

// load replays the tenant's items up to the stored watermark into a fresh
// graph and reads the stored edges.
func (w *Writer) load(ctx context.Context, tenantID int64, t *tenant) error {
	// The head first: a redaction at or below it committed before any
	// item below is read.
	at0, err := w.st.ReadChainBatch(ctx, tenantID, 0, 0)
	if err != nil {
		return err
	}
	mark, err := w.st.ChainHead(ctx, tenantID)
	if err != nil {
		return err
	}
	g := NewGraph(w.lex, w.rules)
	for at := int64(0); at < mark; {
		cb, err := w.st.ReadChainBatch(ctx, tenantID, at, min(at+batchSeqs, mark))
		if err != nil {
			return err
		}
		if cb.Upto == at {
			return fmt.Errorf("chain watermark %d is past the tenant head %d", mark, cb.Head)
		}
		apply(g, cb)
		at = cb.Upto
	}
	stored, err := w.st.ChainEdges(ctx, tenantID)
	if err != nil {
		return err
	}
	l := newLinks()
	for _, e := range stored {
		l.add1(e)
	}
	t.links.replace(l)
	t.graph, t.seen, t.fresh, t.loaded = g, mark, at0.Head, true
	return nil
}

// redactedAfter reports whether the batch holds a redaction past seq.
func redactedAfter(cb store.ChainBatch, seq int64) bool {
	for _, p := range cb.Purges {
		if p.Kind == store.LogRedact && p.Seq > seq {
			return true
		}
	}
	return false
}

// apply runs a batch through the graph in log order: a purge forgets its
// user before anything they stored after it. A redaction needs nothing
// here: its item is gone from every read after it committed, and a writer
// whose graph counted it reloads first (redactedAfter).
func apply(g *Graph, cb store.ChainBatch) (edges []Edge, purged []int64) {
	items := cb.Items
	for _, p := range cb.Purges {
		if p.Kind != store.LogPurge {
			continue
		}
		for len(items) > 0 && items[0].Seq < p.Seq {
			edges = append(edges, g.Add(items[0])...)
			items = items[1:]
		}
		if p.UserID != nil {
			g.Purge(*p.UserID)
			purged = append(purged, *p.UserID)
			// Edges of this batch among the purged user's items are gone too.
			edges = withoutUser(edges, *p.UserID)
		}
	}
	for _, it := range items {
		edges = append(edges, g.Add(it)...)
	}
	return edges, purged
}

func withoutUser(es []Edge, user int64) []Edge {
	return slices.DeleteFunc(es, func(e Edge) bool { return e.UserID == user })
}

// Rebuild derives every edge of the tenant from scratch, without writing,
// up to the log position upto: what integrity compares the stored edges with.
func Rebuild(ctx context.Context, st BatchReader, lex Lexicon, rules Rules, tenantID, upto int64) ([]Edge, error) {
	g := NewGraph(lex, rules)
	var all []Edge
	for at := int64(0); at < upto; {
		cb, err := st.ReadChainBatch(ctx, tenantID, at, min(at+batchSeqs, upto))
		if err != nil {
			return nil, err
		}
		if cb.Upto == at {
			break
		}
		edges, purged := apply(g, cb)
		for _, u := range purged {
			all = withoutUser(all, u)
		}
		all = append(all, edges...)
		at = cb.Upto
	}
	return all, nil
}

// Link is one chain neighbour of an item.
type Link struct {
	ID       int64
	Relation string
	// Later: the neighbour continues the item (thread), or answered from
	// it (evidence); otherwise the item continues or drew on it.
	Later  bool
	Weight float32
	Tokens int32
}

// Around returns, per item of the user, its chain neighbours in memory,
// heaviest first, at most per of them; nothing for a tenant not loaded yet.
func (w *Writer) Around(tenantID, userID int64, ids []int64, per int) map[int64][]Link {
	w.mu.Lock()
	t := w.tenants[tenantID]
	w.mu.Unlock()
	if t == nil {
		return nil
	}
	return t.links.around(userID, ids, per)
}
