package chain_test

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/perpetuity/perpetuity/memory/chain"
	"github.com/perpetuity/perpetuity/memory/guard"
	"github.com/perpetuity/perpetuity/memory/store"
	"github.com/perpetuity/perpetuity/migrations/dbtest"
)

func TestMain(m *testing.M) { os.Exit(dbtest.RunMain(m)) }

// rules are loose enough that a few dozen turns form many edges.
var rules = chain.Rules{MaxDF: 4, MinWeight: 1, Near: 3, Links: 2, EvidenceLinks: 2, MinEvidence: 1}

// scene is a tenant with alice (two conversations) and bob.
type scene struct {
	db         *store.DB
	id         int64
	alice, bob int64
	a1, a2, b1 int64
	pos        int
	mu         sync.Mutex
	said       map[int64][]int64 // items by user, for replies' sources
	rnd        *rand.Rand
}

func newScene(t *testing.T) *scene {
	t.Helper()
	ctx := context.Background()
	db, err := store.Open(ctx, dbtest.Shared(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(db.Close)
	nt, err := db.CreateTenantWith(ctx, "chain "+t.Name(), "alice", store.TenantOptions{Dict: 1})
	if err != nil {
		t.Fatal(err)
	}
	s := &scene{db: db, id: nt.TenantID, alice: nt.UserID, said: map[int64][]int64{}, rnd: rand.New(rand.NewPCG(seedOf(t.Name()), 1))}
	if s.bob, err = db.EnsureUser(ctx, s.id, "bob"); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		user int64
		key  string
		id   *int64
	}{{s.alice, "a1", &s.a1}, {s.alice, "a2", &s.a2}, {s.bob, "b1", &s.b1}} {
		if *c.id, err = db.EnsureConversation(ctx, s.id, c.user, c.key, ""); err != nil {
			t.Fatal(err)
		}
	}
	return s
}

// seedOf makes a test's turns the same on every run.
func seedOf(name string) uint64 {
	h := fnv.New64a()
	h.Write([]byte(name))
	return h.Sum64()
}

var voc = strings.Fields("lake kayak lesson saturday adoption agency portland guitar concert pottery " +
	"passport trip museum sunset garden tomato recipe marathon knee doctor the and of")

// talk captures n turns spread over alice's two conversations and bob's;
// every third is a reply that was shown the speaker's last three items.
func (s *scene) talk(t testing.TB, n int) {
	t.Helper()
	for range n {
		s.mu.Lock()
		s.pos++
		pos := s.pos
		user, conv := s.alice, s.a1
		switch s.rnd.IntN(3) {
		case 1:
			conv = s.a2
		case 2:
			user, conv = s.bob, s.b1
		}
		ws := make([]string, 2+s.rnd.IntN(5))
		for j := range ws {
			ws[j] = voc[s.rnd.IntN(len(voc))]
		}
		role, sources := "user", []int64(nil)
		if pos%3 == 0 {
			mine := s.said[user]
			role, sources = "assistant", slices.Clone(mine[max(0, len(mine)-3):])
		}
		s.mu.Unlock()
		words := strings.Join(ws, " ")
		got, err := s.db.Capture(context.Background(), store.Capture{TenantID: s.id, UserID: user, ConversationID: conv,
			Role: role, Position: pos, Fingerprint: []byte(fmt.Sprint(pos, words)), CreatedAt: time.Now(), ClockAdvance: 3,
			Items: []store.CaptureItem{{Body: words, Tokens: ws, TokenCount: len(ws) + 1, Tau: 1000, Novelty: 0.5,
				Rows: []store.RetrievalRow{{DictVersion: 1, TermIDs: []int32{1}, Freqs: []int16{1}, Length: 1}}}},
			Sources: sources})
		if err != nil {
			t.Error(err) // may run on a goroutine
			return
		}
		s.mu.Lock()
		s.said[user] = append(s.said[user], got.ItemIDs...)
		s.mu.Unlock()
	}
}

func (s *scene) head(t *testing.T) int64 {
	t.Helper()
	h, err := s.db.ReadHead(context.Background(), s.id)
	if err != nil {
		t.Fatal(err)
	}
	return h.Seq
}

func sortEdges(es []store.ChainEdge) []store.ChainEdge {
	slices.SortFunc(es, func(a, b store.ChainEdge) int {
		return cmp.Or(cmp.Compare(a.Src, b.Src), cmp.Compare(a.Relation, b.Relation), cmp.Compare(a.Dst, b.Dst))
	})
	return es
}

// stored reads the tenant's edges.
func (s *scene) stored(t *testing.T) []store.ChainEdge {
	t.Helper()
	es, err := s.db.ChainEdges(context.Background(), s.id)
	if err != nil {
		t.Fatal(err)
	}
	out := make([]store.ChainEdge, len(es))
	for i, e := range es {
		out[i] = e.ChainEdge
	}
	return sortEdges(out)
}

// rebuilt is every edge derived from scratch up to upto.
func (s *scene) rebuilt(t *testing.T, upto int64) []store.ChainEdge {
	t.Helper()
	es, err := chain.Rebuild(context.Background(), s.db, fakeLex{}, rules, s.id, upto)
	if err != nil {
		t.Fatal(err)
	}
	out := make([]store.ChainEdge, len(es))
	for i, e := range es {
		out[i] = e.ChainEdge
	}
	return sortEdges(out)
}

// caughtUp fails unless the watermark is at the head and the stored edges
// are exactly a rebuild's; it returns the edges.
func (s *scene) caughtUp(t *testing.T) []store.ChainEdge {
	t.Helper()
	head := s.head(t)
	mark, err := s.db.ChainHead(context.Background(), s.id)
	if err != nil {
		t.Fatal(err)
	}
	got, want := s.stored(t), s.rebuilt(t, head)
	if mark != head {
		t.Fatalf("watermark %d, head %d", mark, head)
	}
	if !slices.Equal(got, want) {
		t.Fatalf("stored %d edges, a rebuild derives %d:\n%v\n%v", len(got), len(want), got, want)
	}
	if len(got) == 0 {
		t.Fatal("no edge: the scene shows nothing")
	}
	return got
}

// spy records the writer's store calls and can act between a read and a
// write.
type spy struct {
	*store.DB
	mu        sync.Mutex
	writes    []spyWrite
	reads     [][2]int64
	beforeOne func() // run once, before the next write
}

type spyWrite struct {
	from, to int64
	edges    int
	err      error
}

func (p *spy) ReadChainBatch(ctx context.Context, tenantID, after, upto int64) (store.ChainBatch, error) {
	p.mu.Lock()
	p.reads = append(p.reads, [2]int64{after, upto})
	p.mu.Unlock()
	return p.DB.ReadChainBatch(ctx, tenantID, after, upto)
}

func (p *spy) WriteChainEdges(ctx context.Context, tenantID, from, to, seen int64, edges []store.ChainEdge) error {
	p.mu.Lock()
	hook := p.beforeOne
	p.beforeOne = nil
	p.mu.Unlock()
	if hook != nil {
		hook()
	}
	err := p.DB.WriteChainEdges(ctx, tenantID, from, to, seen, edges)
	p.mu.Lock()
	p.writes = append(p.writes, spyWrite{from, to, len(edges), err})
	p.mu.Unlock()
	return err
}

func (s *scene) links(w *chain.Writer, ids []int64) int {
	n := 0
	for _, user := range []int64{s.alice, s.bob} {
		for _, ls := range w.Around(s.id, user, ids, 0) {
			n += len(ls)
		}
	}
	return n
}

// TestWriterCatchUp: a catch-up stores every edge of what was committed,
// with the watermark at the head, exactly what a rebuild derives; its
// in-memory links are the stored edges both ways; the next catch-up adds
// only the new items' edges.
func TestWriterCatchUp(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := newScene(t)
	s.talk(t, 30)
	p := &spy{DB: s.db}
	w := chain.NewWriter(p, fakeLex{}, rules, nil)
	if got := w.Around(s.id, s.alice, []int64{1}, 0); got != nil {
		t.Fatalf("links of a tenant never loaded: %v", got)
	}
	if err := w.CatchUp(ctx, s.id); err != nil {
		t.Fatal(err)
	}
	first := s.caughtUp(t)
	var ids []int64
	for _, e := range first {
		ids = append(ids, e.Src, e.Dst)
	}
	if n := s.links(w, ids); n != 2*len(first) {
		t.Fatalf("%d links in memory for %d stored edges", n, len(first))
	}
	e := first[0]
	got := w.Around(s.id, e.UserID, []int64{e.Dst}, 0)[e.Dst]
	if !slices.ContainsFunc(got, func(l chain.Link) bool { return l.ID == e.Src && l.Later && l.Relation == e.Relation }) {
		t.Fatalf("item %d's links %+v lack the later %d", e.Dst, got, e.Src)
	}
	if err := w.CatchUp(ctx, s.id); err != nil {
		t.Fatal(err)
	}
	if len(p.writes) != 1 {
		t.Fatalf("a catch-up with nothing new wrote: %+v", p.writes)
	}
	mark := p.writes[0].to
	s.talk(t, 20)
	if err := w.CatchUp(ctx, s.id); err != nil {
		t.Fatal(err)
	}
	second := s.caughtUp(t)
	if len(p.writes) != 2 || p.writes[1].from != mark || len(second) != len(first)+p.writes[1].edges {
		t.Fatalf("the second catch-up wrote %+v: %d edges then %d", p.writes, len(first), len(second))
	}
	for _, e := range first {
		if !slices.Contains(second, e) {
			t.Fatalf("edge %+v went", e)
		}
	}
}

// TestWriterResumesAfterRestart: a new writer (a restarted process)
// replays to the stored watermark and writes only what came after it,
// ending with exactly the edges a rebuild derives.
func TestWriterResumesAfterRestart(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := newScene(t)
	s.talk(t, 25)
	if err := chain.NewWriter(s.db, fakeLex{}, rules, nil).CatchUp(ctx, s.id); err != nil {
		t.Fatal(err)
	}
	before := s.caughtUp(t)
	mark := s.head(t)
	s.talk(t, 25)
	p := &spy{DB: s.db}
	w := chain.NewWriter(p, fakeLex{}, rules, nil)
	if err := w.CatchUp(ctx, s.id); err != nil {
		t.Fatal(err)
	}
	after := s.caughtUp(t)
	if len(p.writes) != 1 || p.writes[0].from != mark || p.writes[0].to != s.head(t) || p.writes[0].err != nil {
		t.Fatalf("the restarted writer wrote %+v, want one write from %d", p.writes, mark)
	}
	if len(after) != len(before)+p.writes[0].edges {
		t.Fatalf("%d edges before, %d after, %d written", len(before), len(after), p.writes[0].edges)
	}
	// Its links hold the edges the first writer stored, read, not derived.
	var ids []int64
	for _, e := range before {
		ids = append(ids, e.Src)
	}
	if s.links(w, ids) == 0 {
		t.Fatal("the restarted writer holds none of the stored edges")
	}
}

// TestTwoWritersOneTenant: two writers on one tenant (two serving
// processes) end with one set of edges, no duplicate and no error, whether
// they take turns or race the captures.
func TestTwoWritersOneTenant(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	t.Run("turns", func(t *testing.T) {
		t.Parallel()
		s := newScene(t)
		p1, p2 := &spy{DB: s.db}, &spy{DB: s.db}
		w1, w2 := chain.NewWriter(p1, fakeLex{}, rules, nil), chain.NewWriter(p2, fakeLex{}, rules, nil)
		for _, w := range []*chain.Writer{w1, w2, w1, w2, w2, w1} {
			s.talk(t, 8)
			if err := w.CatchUp(ctx, s.id); err != nil {
				t.Fatal(err)
			}
		}
		s.caughtUp(t)
		// A writer that finds the watermark moved writes the rest of its
		// batch from there, without a reload.
		moved := 0
		for _, p := range []*spy{p1, p2} {
			for i, wr := range p.writes {
				if !errors.Is(wr.err, store.ErrChainMoved) {
					continue
				}
				moved++
				if i+1 == len(p.writes) || p.writes[i+1].err != nil || p.writes[i+1].from <= wr.from || p.writes[i+1].to != wr.to {
					t.Fatalf("after a moved watermark the writer wrote %+v", p.writes[i:])
				}
			}
		}
		if moved == 0 {
			t.Fatal("no writer found the watermark moved: the test shows nothing")
		}
	})
	t.Run("race", func(t *testing.T) {
		t.Parallel()
		// Two serving processes: each capture kicks the writer of the
		// process that took it; both run in the background.
		s := newScene(t)
		rctx, cancel := context.WithCancel(ctx)
		defer cancel()
		var mu sync.Mutex
		var failed []error
		errs := func(err error) { mu.Lock(); failed = append(failed, err); mu.Unlock() }
		ws := []*chain.Writer{chain.NewWriter(s.db, fakeLex{}, rules, errs), chain.NewWriter(s.db, fakeLex{}, rules, errs)}
		for _, w := range ws {
			go w.Run(rctx)
		}
		for i := range 60 {
			s.talk(t, 1)
			ws[i%2].Kick(s.id)
		}
		for _, w := range ws {
			if err := w.CatchUp(ctx, s.id); err != nil {
				t.Fatal(err)
			}
		}
		s.caughtUp(t)
		mu.Lock()
		defer mu.Unlock()
		if len(failed) != 0 {
			t.Fatalf("%d catch-ups failed: %v", len(failed), failed[0])
		}
	})
}

// TestWriterPurgeBetweenReadAndWrite: alice is purged after the writer
// read her items and before it writes their edges. The write is refused,
// the writer reloads, and no edge of hers is ever stored.
func TestWriterPurgeBetweenReadAndWrite(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := newScene(t)
	s.talk(t, 45)
	alice := s.said[s.alice]
	p := &spy{DB: s.db}
	p.beforeOne = func() {
		if _, err := s.db.PurgeUser(ctx, s.id, s.alice, store.Actor{Email: "test"}); err != nil {
			t.Error(err)
		}
	}
	w := chain.NewWriter(p, fakeLex{}, rules, nil)
	if err := w.CatchUp(ctx, s.id); err != nil {
		t.Fatal(err)
	}
	if len(p.writes) < 2 || !errors.Is(p.writes[0].err, store.ErrChainGone) || p.writes[len(p.writes)-1].err != nil {
		t.Fatalf("writes %+v, want a refused one then a stored one", p.writes)
	}
	es := s.caughtUp(t)
	for _, e := range es {
		if e.UserID == s.alice {
			t.Fatalf("an edge of purged alice: %+v", e)
		}
	}
	if n := s.links(w, alice); n != 0 {
		t.Fatalf("the writer holds %d links of alice's purged items", n)
	}
}

// TestPurgeTakesEdgesInItsTransaction: a purge leaves no edge of its user
// the moment it commits, before any writer runs; the writer then drops
// the user's links, and what the user says afterwards links afresh.
func TestPurgeTakesEdgesInItsTransaction(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := newScene(t)
	s.talk(t, 40)
	w := chain.NewWriter(s.db, fakeLex{}, rules, nil)
	if err := w.CatchUp(ctx, s.id); err != nil {
		t.Fatal(err)
	}
	var mine, bobs int64
	for _, e := range s.caughtUp(t) {
		if e.UserID == s.alice {
			mine++
		} else {
			bobs++
		}
	}
	alice := s.said[s.alice]
	if mine == 0 || bobs == 0 || s.links(w, alice) == 0 {
		t.Fatalf("alice has %d edges, bob %d: the scene shows nothing", mine, bobs)
	}
	rep, err := s.db.PurgeUser(ctx, s.id, s.alice, store.Actor{Email: "test"})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Edges != mine {
		t.Fatalf("the purge counted %d edges, alice had %d", rep.Edges, mine)
	}
	left := s.stored(t)
	if int64(len(left)) != bobs || slices.ContainsFunc(left, func(e store.ChainEdge) bool { return e.UserID == s.alice }) {
		t.Fatalf("after the purge %d edges, want bob's %d", len(left), bobs)
	}
	if err := w.CatchUp(ctx, s.id); err != nil {
		t.Fatal(err)
	}
	s.caughtUp(t)
	if n := s.links(w, alice); n != 0 {
		t.Fatalf("%d links of alice's purged items in memory", n)
	}
	// The purge took her conversations; she starts new ones.
	delete(s.said, s.alice)
	for _, c := range []*int64{&s.a1, &s.a2} {
		if *c, err = s.db.EnsureConversation(ctx, s.id, s.alice, fmt.Sprint("again", *c), ""); err != nil {
			t.Fatal(err)
		}
	}
	s.talk(t, 30)
	if err := w.CatchUp(ctx, s.id); err != nil {
		t.Fatal(err)
	}
	s.caughtUp(t)
}

// TestRunCatchesUpKickedTenants: the background loop catches up a kicked
// tenant and stops with its context.
func TestRunCatchesUpKickedTenants(t *testing.T) {
	t.Parallel()
	s := newScene(t)
	s.talk(t, 20)
	ctx, cancel := context.WithCancel(context.Background())
	var mu sync.Mutex
	var failed []error
	w := chain.NewWriter(s.db, fakeLex{}, rules, func(err error) { mu.Lock(); failed = append(failed, err); mu.Unlock() })
	stopped := make(chan struct{})
	go func() { w.Run(ctx); close(stopped) }()
	w.Kick(s.id)
	s.awaitWatermark(t)
	s.caughtUp(t)
	cancel()
	select {
	case <-stopped:
	case <-time.After(10 * time.Second):
		t.Fatal("Run did not stop with its context")
	}
	mu.Lock()
	defer mu.Unlock()
	if len(failed) != 0 {
		t.Fatalf("catch-up failures: %v", failed)
	}
}

// TestRunForgetsADeletedTenant: a tenant deleted while the writer holds it
// is let go, not retried (and reported as failing) for ever.
func TestRunForgetsADeletedTenant(t *testing.T) {
	t.Parallel()
	s := newScene(t)
	s.talk(t, 4)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var mu sync.Mutex
	var failed []error
	w := chain.NewWriter(s.db, fakeLex{}, rules, func(err error) { mu.Lock(); failed = append(failed, err); mu.Unlock() })
	if err := w.CatchUp(ctx, s.id); err != nil {
		t.Fatal(err)
	}
	if err := s.db.DeleteTenant(ctx, s.id); err != nil {
		t.Fatal(err)
	}
	go w.Run(ctx)
	w.Kick(s.id)
	// Past one poll: a tenant still held would be tried again by then.
	time.Sleep(pollWait)
	mu.Lock()
	defer mu.Unlock()
	if len(failed) != 0 {
		t.Fatalf("catch-up failures for a deleted tenant: %v", failed)
	}
}

// pollWait outlasts the writer's poll (3 s) and first retry (1 s).
const pollWait = 4 * time.Second

// TestWriterRefusesWatermarkPastHead: a watermark past the tenant head
// (a corrupt graph) is an error, not a graph silently short of edges.
func TestWriterRefusesWatermarkPastHead(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := newScene(t)
	s.talk(t, 5)
	head := s.head(t)
	if err := s.db.WriteChainEdges(ctx, s.id, 0, head+3, head+3, nil); err != nil {
		t.Fatal(err)
	}
	err := chain.NewWriter(s.db, fakeLex{}, rules, nil).CatchUp(ctx, s.id)
	if err == nil || !strings.Contains(err.Error(), "past the tenant head") {
		t.Fatalf("catch-up over a watermark past the head: %v", err)
	}
}

// TestWriterRedactionBetweenReadAndWrite: a redaction that commits after the
// writer read its batch leaves the watermark where it was, so a retry from
// the watermark would be refused for ever; the writer reloads instead and
// ends caught up, holding the owner's edges without the redacted item.
func TestWriterRedactionBetweenReadAndWrite(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := newScene(t)
	s.talk(t, 30)
	w0 := chain.NewWriter(s.db, fakeLex{}, rules, nil)
	if err := w0.CatchUp(ctx, s.id); err != nil {
		t.Fatal(err)
	}
	s.talk(t, 10)
	gone := s.said[s.alice][0]
	p := &spy{DB: s.db}
	p.beforeOne = func() {
		if _, err := s.db.RedactItem(ctx, s.id, gone, store.Actor{Email: "test"}, func(items []store.ChainItem) []store.ChainEdge {
			return chain.OwnerEdges(fakeLex{}, rules, items)
		}); err != nil {
			t.Error(err)
		}
	}
	w := chain.NewWriter(p, fakeLex{}, rules, nil)
	done := make(chan error, 1)
	go func() { done <- w.CatchUp(ctx, s.id) }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(time.Minute):
		t.Fatal("the writer did not end its catch-up after a redaction")
	}
	if len(p.writes) < 2 || !errors.Is(p.writes[0].err, store.ErrChainRedacted) || p.writes[len(p.writes)-1].err != nil {
		t.Fatalf("writes %+v, want a refused one then a stored one", p.writes)
	}
	for _, e := range s.caughtUp(t) {
		if e.Src == gone || e.Dst == gone {
			t.Fatalf("an edge of the redacted item: %+v", e)
		}
	}
}

// awaitWatermark waits until a running writer's stored watermark reaches
// the tenant head.
func (s *scene) awaitWatermark(t *testing.T) {
	t.Helper()
	head := s.head(t)
	deadline := time.Now().Add(20 * time.Second)
	for {
		mark, err := s.db.ChainHead(context.Background(), s.id)
		if err != nil {
			t.Fatal(err)
		}
		if mark == head {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("watermark %d of %d after 20s", mark, head)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// countingStore counts the writer's write transactions.
type countingStore struct {
	*store.DB
	writes atomic.Int32
}

func (c *countingStore) WriteChainEdges(ctx context.Context, tenantID, from, to, seen int64, edges []store.ChainEdge) error {
	c.writes.Add(1)
	return c.DB.WriteChainEdges(ctx, tenantID, from, to, seen, edges)
}

// TestRunSettlesBeforeCatchingUp: captures that kick the writer within its
// settle are caught up by one transaction, not one each, to the same
// edges.
func TestRunSettlesBeforeCatchingUp(t *testing.T) {
	t.Parallel()
	s := newScene(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	cs := &countingStore{DB: s.db}
	w := chain.NewWriter(cs, fakeLex{}, rules, func(err error) { t.Error(err) })
	// Wide enough that the kicks below fall inside it on a loaded machine;
	// each kick is followed by a pause in which a writer that did not
	// settle would have caught up.
	w.SetSettle(3 * time.Second)
	go w.Run(ctx)
	const kicks = 4
	for range kicks {
		s.talk(t, 3)
		w.Kick(s.id)
		time.Sleep(50 * time.Millisecond)
	}
	s.awaitWatermark(t)
	if n := cs.writes.Load(); n != 1 {
		t.Fatalf("%d write transactions for %d kicks within the settle, want 1", n, kicks)
	}
	s.caughtUp(t)
}

// panicOnce is fakeLex but for one call, the nth, which panics: an item
// the rules cannot take.
type panicOnce struct {
	calls atomic.Int64
	nth   int64
}

func (l *panicOnce) Terms(tokens []string) ([]uint32, []uint16, int) {
	if l.calls.Add(1) == l.nth {
		var m map[string]int
		m["boom"]++ // a nil map: a runtime error, as a bug in the rules would be
	}
	return fakeLex{}.Terms(tokens)
}

// TestWriterPanicFailsTheCatchUp: a panic deriving a tenant's edges is that
// catch-up's error (the process goes on, and Run backs off and retries):
// nothing of the batch is stored, and the next catch-up, from what is
// stored, ends with the edges a rebuild derives.
func TestWriterPanicFailsTheCatchUp(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := newScene(t)
	s.talk(t, 30)
	p := &spy{DB: s.db}
	w := chain.NewWriter(p, &panicOnce{nth: 20}, rules, nil)
	err := w.CatchUp(ctx, s.id)
	var pe *guard.Panic
	if !errors.As(err, &pe) || !strings.Contains(pe.What, "nil map") {
		t.Fatalf("err = %v, want the panic as an error", err)
	}
	if len(p.writes) != 0 {
		t.Fatalf("the failed catch-up wrote %+v", p.writes)
	}
	if mark, err := s.db.ChainHead(ctx, s.id); err != nil || mark != 0 {
		t.Fatalf("watermark %d (%v) after the failed catch-up, want 0", mark, err)
	}
	if err := w.CatchUp(ctx, s.id); err != nil {
		t.Fatal(err)
	}
	s.caughtUp(t)
}
