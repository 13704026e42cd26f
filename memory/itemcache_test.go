package memory_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/perpetuity/perpetuity/memory"
	"github.com/perpetuity/perpetuity/memory/store"
)

// TestCachedItemsFollowOtherProcesses: a serving process keeps the text of
// the items it stored and rendered, and still shows another process's
// rename on its very next frame and never renders an item another process
// purged, not even when asked for it by id.
func TestCachedItemsFollowOtherProcesses(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ctx := context.Background()
	// The other process: its own engine and its own connections.
	otherDB, err := store.Open(ctx, f.db.Pool.Config().ConnString())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(otherDB.Close)
	other := newEngine(otherDB)

	a := f.who(t, "alice", "a1")
	var old []int64
	for i, s := range []string{"the launch code is tangerine", "tangerine crates go to the harbour", "the harbour opens at dawn"} {
		old = append(old, f.say(t, a, "user", s, i).ItemIDs...)
	}
	q := memory.FrameQuery{Who: f.who(t, "alice", "a2"), Live: "what is the launch code tangerine harbour", Now: time.Now()}
	frame := func(e *memory.Engine) string {
		t.Helper()
		fr, err := e.Frame(ctx, q)
		if err != nil {
			t.Fatal(err)
		}
		return frameText(fr)
	}
	if txt := frame(f.eng); !strings.Contains(txt, "【alice】 the launch code is tangerine") {
		t.Fatalf("first frame:\n%s", txt)
	}
	if got := f.eng.CachedItems(f.nt.TenantID, old); len(got) != len(old) {
		t.Fatalf("the process keeps %d of the %d items it stored and rendered", len(got), len(old))
	}
	if txt := frame(other); !strings.Contains(txt, "tangerine") {
		t.Fatalf("the other process's frame:\n%s", txt)
	}

	if err := otherDB.RenameUser(ctx, f.nt.TenantID, a.UserID, "Alice Martin", "console"); err != nil {
		t.Fatal(err)
	}
	if txt := frame(f.eng); !strings.Contains(txt, "【Alice Martin】 the launch code is tangerine") || strings.Contains(txt, "【alice】 t") {
		t.Fatalf("the rename did not reach the cached items' labels:\n%s", txt)
	}

	if _, err := otherDB.PurgeUser(ctx, f.nt.TenantID, a.UserID, store.Actor{Email: "test"}); err != nil {
		t.Fatal(err)
	}
	later := f.say(t, f.who(t, "alice", "a3"), "user", "the launch code is now papaya", 0).ItemIDs
	txt := frame(f.eng)
	if strings.Contains(txt, "is tangerine") || strings.Contains(txt, "crates") || strings.Contains(txt, "dawn") {
		t.Fatalf("a purged item rendered from the cache:\n%s", txt)
	}
	if !strings.Contains(txt, "papaya") {
		t.Fatalf("what alice stored after the purge is missing:\n%s", txt)
	}
	if got := f.eng.CachedItems(f.nt.TenantID, old); len(got) != 0 {
		t.Fatalf("the cache keeps purged items %v", got)
	}
	byID, err := f.eng.FrameItems(ctx, f.nt.TenantID, a.UserID, append(old, later...))
	if err != nil {
		t.Fatal(err)
	}
	if len(byID) != len(later) {
		t.Fatalf("asked for purged items by id, got %d items: %v", len(byID), byID)
	}
	for _, id := range old {
		if _, ok := byID[id]; ok {
			t.Fatalf("purged item %d read back", id)
		}
	}
}

// TestCachedItemsRenderAsStored: every rendered field of a cached item, its
// label included, equals what the store reads back, for each kind of label,
// with the viewer's labels read up front or not, for the viewer's own items
// and another user's.
func TestCachedItemsRenderAsStored(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		viewer string // whose labels a frame reads up front ("": none)
	}{{"no labels up front", ""}, {"the owner's labels", "alice"}, {"another user's labels", "bob"}} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			renderAsStored(t, tc.viewer)
		})
	}
}

func renderAsStored(t *testing.T, viewer string) {
	f := newFixture(t)
	ctx := context.Background()
	w := f.who(t, "alice", "c")
	var viewerID int64
	if viewer != "" {
		viewerID = f.who(t, viewer, "v").UserID
	}
	msgs := []memory.Message{
		{Role: "user", Text: "plain user turn"},
		{Role: "assistant", Text: "plain assistant turn"},
		{Role: "user", Speaker: "Dana", Text: "a named speaker"},
		{Role: "assistant", Speaker: "Concierge", Text: "a named assistant", Interrupted: true},
	}
	var ids []int64
	for i, m := range msgs {
		m.Who, m.Position = w, i
		m.At = time.Date(2026, 1, 2, 3, 4, 5, 123456789, time.UTC) // below the stored microsecond
		c, err := f.eng.Capture(ctx, m)
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, c.ItemIDs...)
	}
	if got := f.eng.CachedItems(f.nt.TenantID, ids); len(got) != len(ids) {
		t.Fatalf("captures cached %d of %d items", len(got), len(ids))
	}
	// A label bound after the capture: what the store resolves now.
	if err := f.db.RenameUser(ctx, f.nt.TenantID, w.UserID, "Alice Martin", "console"); err != nil {
		t.Fatal(err)
	}
	cached, err := f.eng.FrameItems(ctx, f.nt.TenantID, viewerID, ids)
	if err != nil {
		t.Fatal(err)
	}
	stored, err := f.db.RenderItems(ctx, f.nt.TenantID, ids)
	if err != nil {
		t.Fatal(err)
	}
	if len(stored) != len(ids) {
		t.Fatalf("the store read %d of %d items", len(stored), len(ids))
	}
	for _, s := range stored {
		c := cached[s.ID]
		s.ConvTitle = "" // frames do not show it
		if !c.BornAt.Equal(s.BornAt) {
			t.Fatalf("item %d born %v cached, %v stored", s.ID, c.BornAt, s.BornAt)
		}
		c.BornAt = s.BornAt
		if c != s {
			t.Fatalf("item %d cached %+v, stored %+v", s.ID, c, s)
		}
	}
}
