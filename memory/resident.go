package memory

import (
	"context"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/perpetuity/perpetuity/memory/arena"
	"github.com/perpetuity/perpetuity/memory/dict"
	"github.com/perpetuity/perpetuity/memory/store"
)

// CatchUpStore is what resident arenas read from.
type CatchUpStore interface {
	ReadHead(ctx context.Context, tenantID int64) (store.Head, error)
	ReadCatchUp(ctx context.Context, tenantID, watermark int64, dictVersion int) (store.CatchUp, error)
}

// residents holds the resident arenas of the tenants this process serves:
// loaded on a tenant's first use (or by Warm), and, under a budget, evicted
// least recently used first (budget.go).
type residents struct {
	st   CatchUpStore
	opts arena.Options
	vecs *vectorCache
	// texts is what frames render of the arenas' items; the catch-ups that
	// apply purges to the arenas apply them here too.
	texts *itemCache
	mu    sync.Mutex
	by    map[int64]*resident
	warm  atomic.Bool // the tenants Warm was given are loaded
	obs   Observer    // set before serving; nil means none
	lru   residency   // under mu
	// evicted (nil: nothing) hears of each tenant evicted, outside mu: the
	// chain writer lets its graph go with the arena.
	evicted func(tenantID int64)
	// segs (nil: none) keeps what a cold load read as segments for the
	// next one (segments.go).
	segs *segmentWriter
	// rescans counts the frames that scanned an arena their catch-up then
	// moved on (frameread.go), so scanned again.
	rescans atomic.Int64
}

// resident is one tenant's arena and how far it has read the tenant's log.
type resident struct {
	tenant    int64
	mu        sync.Mutex // serialises catch-up; Search runs under the arena's own lock
	arena     *arena.Arena
	watermark int64
	dict      int // dictionary version the arena's rows come from
	// space is the arena's dense space (nil: the version has no vectors),
	// fixed when the arena was loaded: the tenant's component is frozen.
	space *dict.Space
	// tip says the last thing that moved the arena was this process's own
	// capture (own.go): it is then likely current, and a frame scans it
	// while its catch-up is read. A catch-up that brought others' writes
	// clears it, and the frames after wait for theirs before scanning, so
	// replicas taking turns on a tenant do not scan twice a frame.
	tip bool
	use usage // under residents.mu
}

func newResidents(st CatchUpStore, opts arena.Options, vecs *vectorCache, texts *itemCache, budget int64) *residents {
	rs := &residents{st: st, opts: opts, vecs: vecs, texts: texts, by: map[int64]*resident{}}
	rs.lru.init(budget)
	return rs
}

// view is what one scan uses: an arena and the dictionary version its rows
// come from, read together, so a request never pairs one version's query
// terms with another version's arena.
type view struct {
	arena     *arena.Arena
	dict      int
	watermark int64
	space     *dict.Space
}

// current returns the tenant's arena after catching it up with everything
// committed so far: new items, purges and dictionary flips, including those
// made by other processes. A cold arena (never loaded, or evicted) loads the
// whole tenant. A flip loads the new version into a fresh arena and swaps it
// in whole: scans still running on the old one finish on a complete arena
// of the old version. r is held (use) by the caller.
func (rs *residents) current(ctx context.Context, r *resident) (view, error) {
	tenantID := r.tenant
	r.mu.Lock()
	defer r.mu.Unlock()
	defer rs.forgetOnPanic(r)
	if r.dict != 0 {
		// A loaded arena asks for what is new straight away: one round trip
		// that reads the head too, and usually finds this turn's own capture.
		start := time.Now()
		cu, err := rs.st.ReadCatchUp(ctx, tenantID, r.watermark, r.dict)
		if err != nil {
			return view{}, err
		}
		if cu.Head.DictVersion == r.dict {
			if cu.Head.Seq != r.watermark {
				rs.apply(tenantID, r.arena, cu, r.space)
				r.watermark, r.tip = cu.Head.Seq, false
				rs.resize(r)
				rs.observe("catchup", time.Since(start))
			}
			return r.view(), nil
		}
	}
	head, err := rs.st.ReadHead(ctx, tenantID)
	if err != nil {
		return view{}, err
	}
	if head.Seq == r.watermark && head.DictVersion == r.dict {
		return r.view(), nil
	}
	start := time.Now()
	defer func() { rs.observe("catchup", time.Since(start)) }()
	target, watermark, space := r.arena, r.watermark, r.space
	if head.DictVersion != r.dict && r.dict != 0 {
		target, watermark = arena.New(rs.opts), 0
	}
	for {
		cu, err := rs.st.ReadCatchUp(ctx, tenantID, watermark, head.DictVersion)
		if err != nil {
			return view{}, err
		}
		if cu.Head.DictVersion != head.DictVersion {
			// A flip landed between the two reads: start over under the new version.
			head = cu.Head
			target, watermark = arena.New(rs.opts), 0
			continue
		}
		if watermark == 0 {
			// A load from scratch: the space comes with it, and the arena
			// (still empty) is made to hold its vectors.
			if space, err = rs.vecs.space(head.DictVersion, cu.Component); err != nil {
				return view{}, err
			}
			opts := rs.opts
			if space != nil {
				opts.Dims = space.V.Dims
			}
			target = arena.New(opts)
		}
		rs.apply(tenantID, target, cu, space)
		r.arena, r.watermark, r.dict, r.space, r.tip = target, cu.Head.Seq, head.DictVersion, space, false
		rs.resize(r)
		if watermark == 0 {
			rs.loaded(time.Since(start))
			rs.segs.loaded(tenantID, head.DictVersion, cu)
		}
		return r.view(), nil
	}
}

// forgetOnPanic, deferred (under r.mu) by whoever applies a catch-up into
// r's arena in place, makes r load afresh on its next use when the apply
// panicked: some items would be in and the watermark not moved, so the
// next catch-up would add them again. The panic goes on to the caller's
// recovery (memory/guard, Echo's).
func (rs *residents) forgetOnPanic(r *resident) {
	if p := recover(); p != nil {
		r.arena, r.watermark, r.dict, r.space, r.tip = arena.New(rs.opts), 0, 0, nil, false
		panic(p)
	}
}

// position is the tenant's loaded arena as it stands; loaded is false when
// none is loaded yet (or it was evicted); tip is resident.tip.
func (rs *residents) position(r *resident) (v view, loaded, tip bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.view(), r.dict != 0 && r.watermark != 0, r.tip
}

// advance applies a catch-up read without the arena's lock (a frame's
// read, store.ReadFrame) from a position position returned. Other catch-ups
// may have moved the arena on meanwhile: only what lies past it is applied
// (the read holds everything up to its head). False when the arena or the
// read is on another version than dictVersion: a flip, for current.
func (rs *residents) advance(r *resident, dictVersion int, cu store.CatchUp, start time.Time) (view, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	defer rs.forgetOnPanic(r)
	if r.dict != dictVersion || cu.Head.DictVersion != dictVersion {
		return view{}, false
	}
	if cu.Head.Seq > r.watermark {
		rs.apply(r.tenant, r.arena, after(cu, r.watermark), r.space)
		r.watermark, r.tip = cu.Head.Seq, false
		rs.resize(r)
		rs.observe("catchup", time.Since(start))
	}
	return r.view(), true
}

// after is the part of a catch-up past seq.
func after(cu store.CatchUp, seq int64) store.CatchUp {
	i := 0
	for i < len(cu.Items) && cu.Items[i].Seq <= seq {
		i++
	}
	j := 0
	for j < len(cu.Events) && cu.Events[j].Seq <= seq {
		j++
	}
	cu.Items, cu.Events = cu.Items[i:], cu.Events[j:]
	return cu
}

// locked catches the tenant up and runs fn while no other catch-up can
// change the arena, for readers that need it to stand still (integrity).
func (rs *residents) locked(ctx context.Context, tenantID int64, fn func(v view)) error {
	r := rs.use(tenantID)
	defer rs.done(r)
	if _, err := rs.current(ctx, r); err != nil {
		return err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	fn(r.view())
	return nil
}

// loadNow catches the tenant up (loading it when cold) and lets it go, for
// callers that scan nothing (Warm, tests).
func (rs *residents) loadNow(ctx context.Context, tenantID int64) error {
	r := rs.use(tenantID)
	defer rs.done(r)
	_, err := rs.current(ctx, r)
	return err
}

func (rs *residents) observe(stage string, d time.Duration) {
	if rs.obs != nil {
		rs.obs.Duration(stage, d)
	}
}

func (r *resident) view() view {
	return view{arena: r.arena, dict: r.dict, watermark: r.watermark, space: r.space}
}

// apply merges new items and log events in log order: a purge removes what
// its user had before it, never what they stored after, from the arena and
// from the cached item texts; a redaction removes its one item from both.
func (rs *residents) apply(tenantID int64, a *arena.Arena, cu store.CatchUp, sp *dict.Space) {
	items := cu.Items
	flush := func(upTo int64) {
		n := 0
		for n < len(items) && items[n].Seq < upTo {
			n++
		}
		if n == 0 {
			return
		}
		a.Add(toArenaItems(items[:n], sp)...)
		items = items[n:]
	}
	for _, ev := range cu.Events {
		flush(ev.Seq)
		switch {
		case ev.Kind == store.LogPurge && ev.UserID != nil:
			a.RemoveUser(*ev.UserID)
			rs.texts.purge(tenantID, *ev.UserID)
		case ev.Kind == store.LogRedact && ev.UserID != nil && ev.ItemID != nil:
			a.RemoveItem(*ev.UserID, *ev.ItemID)
			rs.texts.redact(tenantID, *ev.ItemID)
		}
	}
	flush(cu.Head.Seq + 1)
}

// convertMin is the batch from which toArenaItems converts on every core:
// a cold load converts the whole tenant, and a vector's projection costs
// about as much as reading its row.
const convertMin = 2048

// toArenaItems converts rows in order, a large batch on every core.
func toArenaItems(rows []store.ArenaItem, sp *dict.Space) []arena.Item {
	out := make([]arena.Item, len(rows))
	workers := runtime.GOMAXPROCS(0)
	if len(rows) < convertMin || workers < 2 {
		for i, it := range rows {
			out[i] = toArenaItem(it, sp)
		}
		return out
	}
	per := (len(rows) + workers - 1) / workers
	var wg sync.WaitGroup
	for lo := 0; lo < len(rows); lo += per {
		hi := min(lo+per, len(rows))
		wg.Go(func() {
			for i := lo; i < hi; i++ {
				out[i] = toArenaItem(rows[i], sp)
			}
		})
	}
	wg.Wait()
	return out
}

// ToArenaItems is the catch-up's conversion of a batch of rows (on every
// core when large), for code outside the engine that must load an arena
// exactly as serving does (the benchmarks' cold start).
func ToArenaItems(rows []store.ArenaItem, sp *dict.Space) []arena.Item { return toArenaItems(rows, sp) }

// ToArenaItem is the catch-up's conversion of a stored row into what the
// arena holds, for code outside the engine that must build an arena exactly
// as serving does (the benchmarks' cold start and scan).
func ToArenaItem(it store.ArenaItem, sp *dict.Space) arena.Item { return toArenaItem(it, sp) }

// toArenaItem converts a stored row; sp (nil: none) turns its raw vector
// into the arena's. A row whose vector cannot be read keeps none: the
// integrity check, loading the same bytes the same way, reports the row.
func toArenaItem(it store.ArenaItem, sp *dict.Space) arena.Item {
	terms := make([]arena.TermID, len(it.TermIDs))
	for i, t := range it.TermIDs {
		terms[i] = arena.TermID(uint32(t))
	}
	freqs := make([]uint16, len(it.Freqs))
	for i, f := range it.Freqs {
		freqs[i] = uint16(f)
	}
	out := arena.Item{
		ID: it.ID, Seq: it.Seq, User: it.UserID, Conv: it.ConvID,
		Terms: terms, Freqs: freqs, Length: uint32(it.Length),
		BornClock: it.BornClock, Tau: float32(it.Tau), Tokens: uint32(max(it.Tokens, 0)),
	}
	if sp != nil {
		if q, inv, err := sp.Row(it.Dense); err == nil {
			out.Dense, out.DenseInv = q, inv
		}
	}
	return out
}
