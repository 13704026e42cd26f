package ops_test

import (
	"context"
	"errors"
	"github.com/perpetuity/perpetuity/migrations/dbtest"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/perpetuity/perpetuity/memory"
	"github.com/perpetuity/perpetuity/memory/ops"
	"github.com/perpetuity/perpetuity/memory/store"
)

func (f *fixture) rows(t *testing.T, version int) int64 {
	t.Helper()
	return f.int64(t, `SELECT count(*) FROM retrieval_rows WHERE tenant_id = $1 AND dict_version = $2`, f.nt.TenantID, version)
}

func (f *fixture) active(t *testing.T) int {
	t.Helper()
	st, err := f.db.DictStatus(context.Background(), f.nt.TenantID)
	if err != nil {
		t.Fatal(err)
	}
	return st.Active
}

func (f *fixture) snapshot(t *testing.T, eng *memory.Engine) memory.ArenaState {
	t.Helper()
	a, err := eng.ArenaSnapshot(context.Background(), f.nt.TenantID)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// TestRolloutForwardAndBack: upload dark, derive, flip, capture under the
// new version, flip back, retire. Serving follows each flip at once, and
// heat, decay constants and novelty never change.
func TestRolloutForwardAndBack(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	// Its own database: a tenant it flips would make that version the one
	// other tests' new tenants start on (the version most tenants serve).
	f := newFixtureOn(t, openDB(t, dbtest.New(t)))
	w := f.who(t, "alice", "c1")
	f.say(t, f.eng, w, 1, 0, 40)
	if _, err := f.eng.Frame(ctx, memory.FrameQuery{Who: w, Live: "tomato garden children", Now: time.Now()}); err != nil {
		t.Fatal(err) // a frame reheats: the state below includes reheats
	}
	other := f.engine()
	if a := f.snapshot(t, other); a.DictVersion != 1 || a.Count != 40 {
		t.Fatalf("warm-up arena: v%d with %d items", a.DictVersion, a.Count)
	}
	before := f.memoryState(t)

	var progress []store.Rollout
	d := &ops.Deriver{St: f.db, Batch: 7, Progress: func(r store.Rollout) { progress = append(progress, r) }}
	r, err := d.Derive(ctx, f.nt.TenantID, 2, admin)
	if err != nil {
		t.Fatal(err)
	}
	if r.State != store.RolloutReady || r.Derived != 40 || r.Total != 40 {
		t.Fatalf("rollout after derive: %+v", r)
	}
	if len(progress) < 40/7 || progress[len(progress)-1].Fraction() != 1 {
		t.Fatalf("progress reported %d times, last %+v", len(progress), progress[len(progress)-1])
	}
	for i := 1; i < len(progress); i++ {
		if progress[i].Fraction() < progress[i-1].Fraction() {
			t.Fatalf("progress went back: %v then %v", progress[i-1].Fraction(), progress[i].Fraction())
		}
	}
	// Dark: derived, but nothing serves it.
	if f.active(t) != 1 || f.snapshot(t, other).DictVersion != 1 {
		t.Fatal("a derivation changed what serves")
	}
	if f.rows(t, 2) != 40 {
		t.Fatalf("%d v2 rows, want 40", f.rows(t, 2))
	}
	f.mustBeClean(t, other)

	rep, err := f.db.Flip(ctx, f.nt.TenantID, 2, admin)
	if err != nil {
		t.Fatal(err)
	}
	if rep.From != 1 || rep.To != 2 || rep.Seq == 0 {
		t.Fatalf("flip report %+v", rep)
	}
	for _, e := range []*memory.Engine{f.eng, other, f.engine()} {
		if a := f.snapshot(t, e); a.DictVersion != 2 || a.Count != 40 || a.Watermark != rep.Seq {
			t.Fatalf("after the flip an arena holds v%d, %d items at %d", a.DictVersion, a.Count, a.Watermark)
		}
	}
	f.mustBeClean(t, other)
	if got := f.memoryState(t); got != before {
		t.Fatalf("derive and flip changed heat, decay or novelty:\n%s\n---\n%s", before, got)
	}

	// Under v2, captures keep writing v1 rows: the way back stays open.
	f.say(t, f.eng, w, 1, 40, 6)
	if f.rows(t, 1) != 46 || f.rows(t, 2) != 46 {
		t.Fatalf("rows after capture under v2: v1 %d, v2 %d", f.rows(t, 1), f.rows(t, 2))
	}
	mid := f.memoryState(t)
	back, err := f.db.Flip(ctx, f.nt.TenantID, 1, admin)
	if err != nil {
		t.Fatal(err)
	}
	if back.From != 2 || back.To != 1 {
		t.Fatalf("flip back %+v", back)
	}
	if a := f.snapshot(t, other); a.DictVersion != 1 || a.Count != 46 {
		t.Fatalf("after the flip back: v%d with %d items", a.DictVersion, a.Count)
	}
	f.mustBeClean(t, other)
	if f.memoryState(t) != mid {
		t.Fatal("the flip back changed heat, decay or novelty")
	}
	again, err := f.db.Flip(ctx, f.nt.TenantID, 1, admin)
	if err != nil || again.Seq != 0 {
		t.Fatalf("flip to the active version: %+v %v", again, err)
	}

	ret, err := f.db.Retire(ctx, f.nt.TenantID, 2, admin)
	if err != nil || ret.Rows != 46 || f.rows(t, 2) != 0 {
		t.Fatalf("retire: %+v %v, %d rows left", ret, err, f.rows(t, 2))
	}
	if f.int64(t, `SELECT count(*) FROM term_stats WHERE tenant_id = $1 AND dict_version = 2`, f.nt.TenantID) != 0 {
		t.Fatal("retire left v2 counts")
	}
	if _, err := f.db.Flip(ctx, f.nt.TenantID, 2, admin); !errors.Is(err, store.ErrNotDerived) {
		t.Fatalf("flip to a retired version: %v", err)
	}
	if _, err := f.db.Retire(ctx, f.nt.TenantID, 1, admin); !errors.Is(err, store.ErrActiveVersion) {
		t.Fatalf("retire the active version: %v", err)
	}
	f.mustBeClean(t, other)
	var actions []string
	rows, _ := f.owner.Query(ctx, `SELECT action FROM audit_log WHERE tenant_id = $1 ORDER BY id`, f.nt.TenantID)
	actions, err = pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range []string{"dict.derive", "dict.flip", "dict.retire", "integrity.check"} {
		if !slices.Contains(actions, a) {
			t.Errorf("audit log lacks %s: %v", a, actions)
		}
	}
}

// TestCaptureDuringDerivation: an engine that still believes the tenant
// keeps one version has its capture refused at commit and retried, so
// every item stored during the derivation has rows for both versions, and
// the worker skips them.
func TestCaptureDuringDerivation(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	// Its own database: a tenant it flips would make that version the one
	// other tests' new tenants start on (the version most tenants serve).
	f := newFixtureOn(t, openDB(t, dbtest.New(t)))
	w := f.who(t, "alice", "c1")
	f.say(t, f.eng, w, 2, 0, 10) // the engine now caches "v1 only"
	if _, err := f.db.StartDerive(ctx, f.nt.TenantID, 2, admin); err != nil {
		t.Fatal(err)
	}
	during := f.say(t, f.eng, w, 2, 10, 5)
	if got := f.int64(t, `SELECT count(*) FROM retrieval_rows WHERE tenant_id = $1 AND dict_version = 2 AND item_id = ANY($2)`,
		f.nt.TenantID, during); got != 5 {
		t.Fatalf("%d of 5 items captured during the derivation have v2 rows", got)
	}
	if _, err := f.db.Flip(ctx, f.nt.TenantID, 2, admin); !errors.Is(err, store.ErrNotDerived) {
		t.Fatalf("flip during derivation: %v", err)
	}
	r, err := (&ops.Deriver{St: f.db, Batch: 4}).Derive(ctx, f.nt.TenantID, 2, admin)
	if err != nil {
		t.Fatal(err)
	}
	if r.Derived != 10 || r.State != store.RolloutReady {
		t.Fatalf("worker derived %d rows (want the 10 older items), state %s", r.Derived, r.State)
	}
	f.mustBeClean(t, f.eng)
	if _, err := f.db.Flip(ctx, f.nt.TenantID, 3, admin); !errors.Is(err, store.ErrNotDerived) {
		t.Fatalf("flip to a version never derived: %v", err)
	}
	if _, err := f.db.StartDerive(ctx, f.nt.TenantID, 99, admin); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("derive a version never uploaded: %v", err)
	}
	if _, err := f.db.StartDerive(ctx, f.nt.TenantID, 1, admin); !errors.Is(err, store.ErrActiveVersion) {
		t.Fatalf("derive the active version: %v", err)
	}
}

// reading is what one reader saw: the version its arena served and how far
// it had read, with the digest of everything it held.
type reading struct {
	version   int
	watermark int64
	count     int
	digest    uint64
}

// TestFlipUnderLoad: readers of two serving processes catch up and read
// their arenas without pause while a writer captures and the tenant is
// derived, flipped, flipped back and flipped again. Every reading must be
// exactly the store's items up to its watermark under one version: a mix
// of versions (or a missed item) would not add up to any such digest.
func TestFlipUnderLoad(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	// Its own database: a tenant it flips would make that version the one
	// other tests' new tenants start on (the version most tenants serve).
	f := newFixtureOn(t, openDB(t, dbtest.New(t)))
	w := f.who(t, "alice", "c1")
	f.say(t, f.eng, w, 3, 0, 30)
	engines := []*memory.Engine{f.eng, f.engine()}

	stop := make(chan struct{})
	var wg sync.WaitGroup
	var mu sync.Mutex
	var history []reading
	for i := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			eng := engines[i%len(engines)]
			for {
				select {
				case <-stop:
					return
				default:
				}
				a, err := eng.ArenaSnapshot(ctx, f.nt.TenantID)
				if err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				history = append(history, reading{a.DictVersion, a.Watermark, a.Count, a.Digest})
				mu.Unlock()
			}
		}()
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 30; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			f.say(t, engines[i%2], w, 3, i, 1)
		}
	}()
	if _, err := (&ops.Deriver{St: f.db, Batch: 5}).Derive(ctx, f.nt.TenantID, 2, admin); err != nil {
		t.Fatal(err)
	}
	for _, v := range []int{2, 1, 2} {
		time.Sleep(100 * time.Millisecond)
		if _, err := f.db.Flip(ctx, f.nt.TenantID, v, admin); err != nil {
			t.Fatal(err)
		}
	}
	time.Sleep(100 * time.Millisecond)
	close(stop)
	wg.Wait()

	items := f.arenaItems(t)
	seen := map[int]int{}
	for _, h := range history {
		var want uint64
		n := 0
		for _, it := range items {
			if it.seq <= h.watermark {
				row, ok := it.digest[h.version]
				if !ok {
					t.Fatalf("item %d has no v%d row", it.id, h.version)
				}
				want += row
				n++
			}
		}
		if h.digest != want || h.count != n {
			t.Fatalf("a reader at %d under v%d held %d items (digest %x), the store had %d (digest %x)",
				h.watermark, h.version, h.count, h.digest, n, want)
		}
		seen[h.version]++
	}
	if seen[1] == 0 || seen[2] == 0 {
		t.Fatalf("readings per version %v: the test did not see both", seen)
	}
	same := 0
	for _, it := range items {
		if it.digest[1] == it.digest[2] {
			same++
		}
	}
	if same == len(items) {
		t.Fatal("v1 and v2 rows are identical: a mix of versions would go unnoticed")
	}
	t.Logf("%d readings (%v), %d items", len(history), seen, len(items))
	f.mustBeClean(t, f.eng)
}

type storedItem struct {
	id, seq int64
	digest  map[int]uint64 // by version
}

// arenaItems reads every item with the digest the arena would give it
// under each version.
func (f *fixture) arenaItems(t *testing.T) []storedItem {
	t.Helper()
	rows, err := f.owner.Query(context.Background(), `SELECT i.id, i.seq, i.user_id, i.conversation_id, i.born_clock, i.tau,
			r.dict_version, r.term_ids, r.term_freqs, r.length
		FROM items i JOIN retrieval_rows r ON r.tenant_id = i.tenant_id AND r.item_id = i.id
		WHERE i.tenant_id = $1 ORDER BY i.id`, f.nt.TenantID)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []storedItem
	for rows.Next() {
		var a store.ArenaItem
		var v int
		if err := rows.Scan(&a.ID, &a.Seq, &a.UserID, &a.ConvID, &a.BornClock, &a.Tau, &v, &a.TermIDs, &a.Freqs, &a.Length); err != nil {
			t.Fatal(err)
		}
		if len(out) == 0 || out[len(out)-1].id != a.ID {
			out = append(out, storedItem{id: a.ID, seq: a.Seq, digest: map[int]uint64{}})
		}
		out[len(out)-1].digest[v] = memory.ArenaDigest(a)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// cancelOnWrite cancels the derivation's context as its nth batch starts
// writing: the batch's transaction fails and rolls back, as it would if
// the process died in it.
type cancelOnWrite struct {
	ops.DeriveStore
	n      int
	calls  int
	cancel context.CancelFunc
}

func (c *cancelOnWrite) WriteDerived(ctx context.Context, tenantID int64, version int, l store.Lease, rows []store.DerivedRow, upto int64) (store.Rollout, error) {
	c.calls++
	if c.calls == c.n {
		c.cancel()
	}
	return c.DeriveStore.WriteDerived(ctx, tenantID, version, l, rows, upto)
}

// TestDeriveResumesAfterCancel: a derivation stopped in its fourth batch
// keeps its three committed batches, leaves the old version serving, and
// the next run finishes it to rows and counts equal to their recount.
func TestDeriveResumesAfterCancel(t *testing.T) {
	t.Parallel()
	// Its own database: a tenant it flips would make that version the one
	// other tests' new tenants start on (the version most tenants serve).
	f := newFixtureOn(t, openDB(t, dbtest.New(t)))
	w := f.who(t, "alice", "c1")
	ids := f.say(t, f.eng, w, 4, 0, 23)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	st := &cancelOnWrite{DeriveStore: f.db, n: 4, cancel: cancel}
	_, err := (&ops.Deriver{St: st, Batch: 5}).Derive(ctx, f.nt.TenantID, 2, admin)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled derivation: %v", err)
	}
	r, err := f.db.Rollout(context.Background(), f.nt.TenantID, 2)
	if err != nil {
		t.Fatal(err)
	}
	if r.State != store.RolloutDeriving || r.DerivedUpto != ids[14] || r.Derived != 15 || r.LeaseOwner != "" {
		t.Fatalf("rollout after the cancel: %+v (want cursor at item %d, 15 derived, lease released)", r, ids[14])
	}
	if f.rows(t, 2) != 15 || f.active(t) != 1 {
		t.Fatalf("%d v2 rows, v%d active", f.rows(t, 2), f.active(t))
	}
	f.mustBeClean(t, f.eng) // rows up to the cursor, counts of exactly those
	if _, err := f.db.Flip(context.Background(), f.nt.TenantID, 2, admin); !errors.Is(err, store.ErrNotDerived) {
		t.Fatalf("flip to a half-derived version: %v", err)
	}
	r, err = (&ops.Deriver{St: f.db, Batch: 5}).Derive(context.Background(), f.nt.TenantID, 2, admin)
	if err != nil {
		t.Fatal(err)
	}
	if r.State != store.RolloutReady || r.Derived != 23 || f.rows(t, 2) != 23 {
		t.Fatalf("resumed rollout %+v, %d rows", r, f.rows(t, 2))
	}
	f.mustBeClean(t, f.eng)
}
