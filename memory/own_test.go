package memory_test

import (
	"context"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/perpetuity/perpetuity/memory"
	"github.com/perpetuity/perpetuity/memory/dict"
	"github.com/perpetuity/perpetuity/memory/store"
	"github.com/perpetuity/perpetuity/memory/text"
	"github.com/perpetuity/perpetuity/migrations/dbtest"
)

// TestOwnCaptureNeedsNoCatchUp: what this process captures is in its arena
// when the capture returns, so the frame after it scans at once and finds
// its catch-up empty; and it ranks exactly as a process that read it all
// from the store.
func TestOwnCaptureNeedsNoCatchUp(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ctx := context.Background()
	w := f.who(t, "alice", "c")
	f.say(t, w, "user", "the garden shed needs paint", 0)
	if _, err := f.eng.Frame(ctx, memory.FrameQuery{Who: w, Live: "garden", Probe: true, Now: time.Now()}); err != nil {
		t.Fatal(err) // loads the arena
	}
	var last int64
	for i, s := range []string{"apples and pears", "pears and plums", "plums and cherries", "cherries and apples", "kiwi and plums"} {
		last = f.say(t, w, "user", s, i+1).Seq
		if got := f.eng.Watermark(f.nt.TenantID); got != last {
			t.Fatalf("after capture at seq %d the arena stands at %d", last, got)
		}
	}
	live := "which apples go with plums"
	got := f.say(t, w, "user", live, 6)
	q := memory.FrameQuery{Who: w, Live: live, LiveStored: true, LiveItems: got.ItemIDs, Probe: true, Now: time.Now()}
	warm, err := f.eng.Frame(ctx, q)
	if err != nil {
		t.Fatal(err)
	}
	if n := f.eng.Rescans(); n != 0 {
		t.Fatalf("%d frames scanned again after their own captures", n)
	}
	cold, err := newEngine(f.db).Frame(ctx, q)
	if err != nil {
		t.Fatal(err)
	}
	if len(warm.Retrieved) < 4 || !slices.Equal(warm.Retrieved, cold.Retrieved) || frameText(warm) != frameText(cold) {
		t.Fatalf("own captures rank otherwise than the store's rows:\n%v\n%s---\n%v\n%s", warm.Retrieved, frameText(warm), cold.Retrieved, frameText(cold))
	}
	sameArenas(t, f.eng, newEngine(f.db), f.nt.TenantID)
}

// TestOwnCaptureV3: under a version with word vectors, what own captures
// put in the arena (vectors included) is item for item what a load from
// the store puts there.
func TestOwnCaptureV3(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	// Its own database: a tenant on v3 in the shared one would make v3
	// the version other tests' new tenants start on.
	db, err := store.Open(ctx, dbtest.New(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(db.Close)
	v3, err := dict.Builtin(3)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.UploadDictionary(ctx, v3, store.Actor{Email: "test"}); err != nil {
		t.Fatal(err)
	}
	nt, err := db.CreateTenantWith(ctx, "acme", "alice", store.TenantOptions{Dict: 3})
	if err != nil {
		t.Fatal(err)
	}
	c, err := text.NewCounter()
	if err != nil {
		t.Fatal(err)
	}
	engine := func() *memory.Engine {
		return memory.New(db, memory.TextAnalyzer{C: c}, memory.DictTerms{D: v3}, memory.Options{})
	}
	f := &fixture{db: db, eng: engine(), nt: nt}
	w := f.who(t, "alice", "c")
	f.say(t, w, "user", "we adopted a puppy from the shelter", 0)
	if _, err := f.eng.Frame(ctx, memory.FrameQuery{Who: w, Live: "dog", Probe: true, Now: time.Now()}); err != nil {
		t.Fatal(err) // loads the arena
	}
	for i, s := range []string{"I planted tomatoes and carrots", "the concert was loud", "my sister paints landscapes"} {
		seq := f.say(t, w, "user", s, i+1).Seq
		if got := f.eng.Watermark(nt.TenantID); got != seq {
			t.Fatalf("after capture at seq %d the arena stands at %d", seq, got)
		}
	}
	st := sameArenas(t, f.eng, engine(), nt.TenantID)
	if st.Space == nil || st.Count != 4 {
		t.Fatalf("v3 arena: space %v, %d items", st.Space != nil, st.Count)
	}
}

// sameArenas fails unless a and b hold the tenant's arena item for item
// (arena.ItemDigest: ids, terms, clock, decay, vectors) at one watermark.
func sameArenas(t *testing.T, a, b *memory.Engine, tenantID int64) memory.ArenaState {
	t.Helper()
	sa, err := a.ArenaSnapshot(context.Background(), tenantID)
	if err != nil {
		t.Fatal(err)
	}
	sb, err := b.ArenaSnapshot(context.Background(), tenantID)
	if err != nil {
		t.Fatal(err)
	}
	if sa.Watermark != sb.Watermark || sa.Count != sb.Count || sa.Digest != sb.Digest || !maps.Equal(sa.Items, sb.Items) {
		t.Fatalf("arenas differ: at %d, %d items, digest %x; from the store at %d, %d items, digest %x",
			sa.Watermark, sa.Count, sa.Digest, sb.Watermark, sb.Count, sb.Digest)
	}
	return sa
}

// TestFrameRescansWhatAnotherProcessStored: after its own capture a
// process scans its arena while its frame's catch-up is read; when the
// catch-up brings what another process stored meanwhile, the frame scans
// again, and ranks as if it had waited. Once others wrote last, frames
// wait for their catch-up and scan once.
func TestFrameRescansWhatAnotherProcessStored(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ctx := context.Background()
	other := newEngine(f.db)
	w := f.who(t, "alice", "c")
	f.say(t, w, "user", "the garden shed needs paint", 0)
	q := memory.FrameQuery{Who: f.who(t, "alice", "q"), Live: "what is the launch code", Probe: true, Now: time.Now()}
	if _, err := f.eng.Frame(ctx, q); err != nil {
		t.Fatal(err) // loads the arena
	}
	f.say(t, w, "user", "the shed is green now", 1) // the arena's tip is its own
	for i, code := range []string{"tangerine", "mandarin"} {
		if _, err := other.Capture(ctx, memory.Message{Who: w, Role: "user", Text: "the launch code is " + code, Position: 2 + i, At: time.Now()}); err != nil {
			t.Fatal(err)
		}
		before := f.eng.Rescans()
		fr, err := f.eng.Frame(ctx, q)
		if err != nil {
			t.Fatal(err)
		}
		if n, want := f.eng.Rescans()-before, int64(1-i); n != want {
			t.Fatalf("frame %d behind another process's capture scanned again %d times, want %d", i, n, want)
		}
		if !strings.Contains(frameText(fr), code) {
			t.Fatalf("the other process's capture is not in frame %d:\n%s", i, frameText(fr))
		}
		cold, err := newEngine(f.db).Frame(ctx, q)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(fr.Retrieved, cold.Retrieved) || frameText(fr) != frameText(cold) {
			t.Fatalf("frame %d ranks otherwise than a fresh load:\n%s---\n%s", i, frameText(fr), frameText(cold))
		}
	}
}
