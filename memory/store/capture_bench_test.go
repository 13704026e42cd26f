package store_test

import (
	"context"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/perpetuity/perpetuity/memory/store"
	"github.com/perpetuity/perpetuity/migrations/dbtest"
)

// BenchmarkCaptureLong: one message of n items (a long paste splits into
// items of 512 model tokens; each here holds 400 tokens and a v1 row).
// ns/item should not grow with n: it did, as n², while every item's
// tokens were sliced out of the message's one text[] in one statement
// (capture.go itemsPerStatement): 1.38 ms per item at n=1024 against
// 0.23 ms now, and 5.5 s for a 5 MB message of 2627 items.
//
//	go test -run '^$' -bench CaptureLong -benchtime 5x ./memory/store
func BenchmarkCaptureLong(b *testing.B) {
	ctx := context.Background()
	db, err := store.Open(ctx, dbtest.Shared(b))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(db.Close)
	nt, err := db.CreateTenantWith(ctx, "bench-long", "alice", store.TenantOptions{Dict: 1})
	if err != nil {
		b.Fatal(err)
	}
	for _, n := range []int{1, 16, 17, 128, 1024} {
		items := make([]store.CaptureItem, n)
		for i := range items {
			it := item(fmt.Sprintf("chunk %d of a long paste ", i), 1, 2, 3)
			it.Tokens = make([]string, 400)
			for j := range it.Tokens {
				it.Tokens[j] = "word" + strconv.Itoa((i*400+j)%997)
			}
			items[i] = it
		}
		b.Run(fmt.Sprintf("items=%d", n), func(b *testing.B) {
			conv, err := db.EnsureConversation(ctx, nt.TenantID, nt.UserID, "long-"+strconv.Itoa(n), "")
			if err != nil {
				b.Fatal(err)
			}
			pos := 0
			for b.Loop() {
				if _, err := db.Capture(ctx, store.Capture{TenantID: nt.TenantID, UserID: nt.UserID, ConversationID: conv, Role: "user",
					Position: pos, Fingerprint: []byte(strconv.Itoa(pos)), CreatedAt: time.Now(), ClockAdvance: 1, Items: items}); err != nil {
					b.Fatal(err)
				}
				pos++
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/item")
		})
	}
}
