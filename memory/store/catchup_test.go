package store_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/perpetuity/perpetuity/memory/store"
)

func captureN(t *testing.T, db *store.DB, nt store.NewTenant, conv int64, tag string) store.Captured {
	t.Helper()
	c, err := db.Capture(context.Background(), store.Capture{TenantID: nt.TenantID, UserID: nt.UserID, ConversationID: conv,
		Role: "user", Fingerprint: []byte(tag), CreatedAt: time.Now(), ClockAdvance: 1, Items: []store.CaptureItem{item(tag, 1)}})
	if err != nil {
		t.Error(err) // may run on a writer goroutine: no Fatal there
	}
	return c
}

// TestCatchUpOutOfIDOrder: a capture that took its ids first but commits
// last is not skipped by a reader that caught up in between.
func TestCatchUpOutOfIDOrder(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	slow := openDB(t)
	fast, err := store.Open(ctx, slow.Pool.Config().ConnString())
	if err != nil {
		t.Fatal(err)
	}
	defer fast.Close()
	nt, _ := slow.CreateTenantWith(ctx, "acme", "alice", store.TenantOptions{Dict: 1})
	conv, _ := slow.EnsureConversation(ctx, nt.TenantID, nt.UserID, "c", "")

	paused, resume := make(chan struct{}), make(chan struct{})
	slow.SetAfterMessageHook(func() { close(paused); <-resume })
	done := make(chan store.Captured)
	go func() { done <- captureN(t, slow, nt, conv, "slow") }()
	<-paused // the slow capture holds a message id but no head position yet

	fastC := captureN(t, fast, nt, conv, "fast")
	cu, err := fast.ReadCatchUp(ctx, nt.TenantID, 0, 1)
	if err != nil {
		t.Fatal(err)
	}
	if len(cu.Items) != 1 || cu.Items[0].ID != fastC.ItemIDs[0] {
		t.Fatalf("first catch-up: %+v", cu.Items)
	}
	close(resume)
	slowC := <-done
	var slowMsg, fastMsg int64 = slowC.MessageID, fastC.MessageID
	if slowMsg >= fastMsg {
		t.Fatalf("test did not force out-of-order ids: slow message %d, fast %d", slowMsg, fastMsg)
	}
	next, err := fast.ReadCatchUp(ctx, nt.TenantID, cu.Head.Seq, 1)
	if err != nil {
		t.Fatal(err)
	}
	if len(next.Items) != 1 || next.Items[0].ID != slowC.ItemIDs[0] {
		t.Fatalf("the late commit was skipped: %+v", next.Items)
	}
}

// TestCatchUpUnderConcurrentWriters: many writers, one reader catching up
// all the while; every snapshot the reader took holds exactly the items the
// store has at or below its watermark, and the end state holds them all.
func TestCatchUpUnderConcurrentWriters(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := openDB(t)
	nt, _ := db.CreateTenantWith(ctx, "acme", "alice", store.TenantOptions{Dict: 1})
	conv, _ := db.EnsureConversation(ctx, nt.TenantID, nt.UserID, "c", "")
	const writers, each = 6, 25
	var wg sync.WaitGroup
	for w := 0; w < writers; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for i := 0; i < each; i++ {
				captureN(t, db, nt, conv, fmt.Sprintf("w%d-%d", w, i))
			}
		}(w)
	}
	stop := make(chan struct{})
	go func() { wg.Wait(); close(stop) }()

	type snap struct {
		watermark int64
		ids       map[int64]bool
	}
	seen := map[int64]bool{}
	var snaps []snap
	var watermark int64
	for finished := false; !finished; {
		select {
		case <-stop:
			finished = true
		default:
		}
		cu, err := db.ReadCatchUp(ctx, nt.TenantID, watermark, 1)
		if err != nil {
			t.Fatal(err)
		}
		for _, it := range cu.Items {
			if seen[it.ID] {
				t.Fatalf("item %d delivered twice", it.ID)
			}
			seen[it.ID] = true
		}
		watermark = cu.Head.Seq
		cp := make(map[int64]bool, len(seen))
		for k := range seen {
			cp[k] = true
		}
		snaps = append(snaps, snap{watermark, cp})
	}
	var all []struct{ ID, Seq int64 }
	rows, err := ownerOf(t, db).Query(ctx, `SELECT id, seq FROM items WHERE tenant_id = $1`, nt.TenantID)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var x struct{ ID, Seq int64 }
		if err := rows.Scan(&x.ID, &x.Seq); err != nil {
			t.Fatal(err)
		}
		all = append(all, x)
	}
	if len(all) != writers*each || len(seen) != writers*each {
		t.Fatalf("store has %d items, reader saw %d, want %d", len(all), len(seen), writers*each)
	}
	for _, s := range snaps {
		for _, it := range all {
			if (it.Seq <= s.watermark) != s.ids[it.ID] {
				t.Fatalf("at watermark %d item %d (seq %d) presence=%v", s.watermark, it.ID, it.Seq, s.ids[it.ID])
			}
		}
	}
	if len(snaps) < 3 {
		t.Logf("reader caught up only %d times; the race was short", len(snaps))
	}
}
