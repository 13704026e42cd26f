package memory_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/perpetuity/perpetuity/memory"
	"github.com/perpetuity/perpetuity/memory/store"
)

// TestColdLoadLeavesSegments: a cold load leaves arena segments in the
// background, and a fresh engine that loads from them frames exactly as
// the one that loaded from rows.
func TestColdLoadLeavesSegments(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newFixture(t)
	w := f.who(t, "alice", "garden")
	for i := range 40 {
		f.say(t, w, "user", fmt.Sprintf("note %d about the garden: tomatoes, basil and row %d of beans", i, i%7), i)
	}
	opts := memory.Options{Ceiling: 4000, Floor: 200, Recent: 2, BaseTau: 200, SegmentItems: 6}
	q := memory.FrameQuery{Who: w, Live: "what about the beans in row 3?", Probe: true, Now: time.Date(2026, 1, 5, 0, 0, 0, 0, time.UTC)}
	frame := func(e *memory.Engine) memory.Frame {
		t.Helper()
		fr, err := e.Frame(ctx, q)
		if err != nil {
			t.Fatal(err)
		}
		return fr
	}
	segments := func() (n int, rows int) {
		t.Helper()
		if err := f.owner.QueryRow(ctx, `SELECT count(*), COALESCE(sum(items), 0) FROM arena_segments WHERE tenant_id = $1`,
			f.nt.TenantID).Scan(&n, &rows); err != nil {
			t.Fatal(err)
		}
		return n, rows
	}

	off := memory.New(f.db, wordAnalysis{}, wordAnalysis{}, memory.Options{Ceiling: 4000, Floor: 200, Recent: 2, BaseTau: 200, SegmentItems: -1})
	want := frame(off)
	off.WaitReheats()
	if n, _ := segments(); n != 0 {
		t.Fatalf("an engine told to write none wrote %d segments", n)
	}

	first := memory.New(f.db, wordAnalysis{}, wordAnalysis{}, opts)
	frame(first)
	first.WaitReheats()
	n, rows := segments()
	if n < 5 || rows < 36 {
		t.Fatalf("the first cold load left %d segments of %d rows, want the 40 items' whole segments", n, rows)
	}
	fresh := memory.New(f.db, wordAnalysis{}, wordAnalysis{}, opts)
	got := frame(fresh)
	fresh.WaitReheats()
	if !slices.Equal(got.Retrieved, want.Retrieved) || frameText(got) != frameText(want) {
		t.Fatalf("a load from segments frames differently:\n%s\nwant\n%s", frameText(got), frameText(want))
	}
	if n2, _ := segments(); n2 != n {
		t.Fatalf("a load from segments wrote %d more", n2-n)
	}
	// A purge takes them away; the next cold load reads rows and leaves
	// new ones.
	other := f.who(t, "bob", "b")
	f.say(t, other, "user", "bob's beans are in row 3 as well", 0)
	if _, err := f.db.PurgeUser(ctx, f.nt.TenantID, other.UserID, store.Actor{Email: "test"}); err != nil {
		t.Fatal(err)
	}
	if n, _ := segments(); n != 0 {
		t.Fatalf("a purge left %d segments", n)
	}
	again := memory.New(f.db, wordAnalysis{}, wordAnalysis{}, opts)
	if got := frame(again); !slices.Equal(got.Retrieved, want.Retrieved) {
		t.Fatalf("after the purge: retrieved %v, want %v", got.Retrieved, want.Retrieved)
	}
	again.WaitReheats()
	if n, _ := segments(); n < 5 {
		t.Fatalf("the load after the purge left %d segments", n)
	}
}
