package memory_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/perpetuity/perpetuity/memory"
	"github.com/perpetuity/perpetuity/memory/store"
)

// TestConcurrentFramesCatchUpOnce: frames of one tenant catch its arena up
// from their own reads at once, while another process captures and purges;
// the arena ends holding each item once, exactly what a fresh process
// loads.
func TestConcurrentFramesCatchUpOnce(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ctx := context.Background()
	otherDB, err := store.Open(ctx, f.db.Pool.Config().ConnString())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(otherDB.Close)
	other := newEngine(otherDB)
	first := f.who(t, "alice", "warm")
	f.say(t, first, "user", "the garden needs water", 0)
	if _, err := f.eng.Frame(ctx, memory.FrameQuery{Who: first, Live: "garden", Now: time.Now()}); err != nil {
		t.Fatal(err) // the arena is loaded: frames now catch up from their own reads
	}
	var wg sync.WaitGroup
	for _, name := range []string{"alice", "bob", "carol"} {
		w := f.who(t, name, "c")
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 12 {
				text := fmt.Sprintf("%s waters the garden on day %d", name, i)
				c, err := f.eng.Capture(ctx, memory.Message{Who: w, Role: "user", Text: text, Position: i})
				if err != nil {
					t.Error(err)
					return
				}
				if _, err := f.eng.Frame(ctx, memory.FrameQuery{Who: w, Live: text, LiveStored: true, LiveItems: c.ItemIDs, Now: time.Now()}); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	erin := f.who(t, "erin", "e")
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := range 12 {
			if _, err := other.Capture(ctx, memory.Message{Who: erin, Role: "user", Text: fmt.Sprintf("erin waters the garden %d", i), Position: i}); err != nil {
				t.Error(err)
				return
			}
			if i%4 == 3 {
				if _, err := otherDB.PurgeUser(ctx, f.nt.TenantID, erin.UserID, store.Actor{Email: "test"}); err != nil {
					t.Error(err)
					return
				}
				erin = f.who(t, "erin", fmt.Sprintf("e%d", i)) // the purge took the conversation
			}
		}
	}()
	wg.Wait()
	f.eng.WaitReheats()
	warm, err := f.eng.ArenaSnapshot(ctx, f.nt.TenantID)
	if err != nil {
		t.Fatal(err)
	}
	cold, err := newEngine(f.db).ArenaSnapshot(ctx, f.nt.TenantID)
	if err != nil {
		t.Fatal(err)
	}
	if warm.Count != len(warm.Items) || warm.Count != cold.Count || warm.Digest != cold.Digest || warm.Watermark != cold.Watermark {
		t.Fatalf("the frames' arena holds %d items (%d distinct, digest %x, at %d); a fresh load %d (digest %x, at %d)",
			warm.Count, len(warm.Items), warm.Digest, warm.Watermark, cold.Count, cold.Digest, cold.Watermark)
	}
}
