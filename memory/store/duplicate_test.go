package store_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/perpetuity/perpetuity/memory/store"
)

// TestDuplicateReportsWhatWasStored: a capture that finds its message
// stored (a retry, or a tool loop's next round) reports the message's
// items, and the items of the turns stored since from the positions the
// request sends after it; nothing of other conversations, of earlier
// turns, or of positions past the request's; and the tenant's latest
// erasure.
func TestDuplicateReportsWhatWasStored(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := openDB(t)
	nt, err := db.CreateTenantWith(ctx, "loop", "alice", store.TenantOptions{Dict: 1})
	if err != nil {
		t.Fatal(err)
	}
	conv, err := db.EnsureConversation(ctx, nt.TenantID, nt.UserID, "c1", "loop")
	if err != nil {
		t.Fatal(err)
	}
	other, err := db.EnsureConversation(ctx, nt.TenantID, nt.UserID, "c2", "other")
	if err != nil {
		t.Fatal(err)
	}
	at := time.Now().Add(-time.Hour)
	capture := func(conv int64, role string, pos int, fp string, bodies ...string) []int64 {
		t.Helper()
		at = at.Add(time.Second)
		c := store.Capture{TenantID: nt.TenantID, UserID: nt.UserID, ConversationID: conv, Role: role,
			Position: pos, Fingerprint: []byte(fp), CreatedAt: at, ClockAdvance: 3}
		for _, b := range bodies {
			c.Items = append(c.Items, item(b, 1))
		}
		got, err := db.Capture(ctx, c)
		if err != nil || got.Duplicate {
			t.Fatalf("capture %s: %+v %v", fp, got, err)
		}
		return got.ItemIDs
	}
	earlier := capture(conv, "assistant", 0, "earlier", "an earlier reply")
	question := capture(conv, "user", 1, "question", "why does the parser ", "reject trailing commas?")
	said := capture(conv, "assistant", 2, "said", "I'll read parser.go first.")
	elsewhere := capture(other, "assistant", 2, "elsewhere", "another conversation")
	later := capture(conv, "assistant", 4, "later", "past what the request sends")

	for _, tc := range []struct {
		name      string
		sentAfter int
		want      []int64
	}{
		{"a retry: nothing follows", 0, nil},
		{"a tool loop's round: positions 2 and 3 follow", 4, said},
		{"the request ends before the reply's position", 2, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			again := store.Capture{TenantID: nt.TenantID, UserID: nt.UserID, ConversationID: conv, Role: "user",
				Position: 1, Fingerprint: []byte("question"), CreatedAt: time.Now(), ClockAdvance: 3,
				Items: []store.CaptureItem{item("why does the parser reject trailing commas?", 1)}, SentAfter: tc.sentAfter}
			got, err := db.Capture(ctx, again)
			if err != nil {
				t.Fatal(err)
			}
			if !got.Duplicate || !slices.Equal(got.ItemIDs, question) || len(got.Items) != 0 {
				t.Fatalf("duplicate reported %+v, want the question's items %v", got, question)
			}
			if got.Erased != 0 {
				t.Fatalf("erased at %d in a tenant nothing was erased of", got.Erased)
			}
			if !slices.Equal(got.SentAfter, tc.want) {
				t.Fatalf("sent after: %v, want %v (earlier %v, elsewhere %v, later %v)", got.SentAfter, tc.want, earlier, elsewhere, later)
			}
		})
	}
	// A redaction of any item is what a duplicate reports as erased: a
	// frame read before it may quote what it removed.
	rep, err := db.RedactItem(ctx, nt.TenantID, elsewhere[0], store.Actor{Email: "admin@loop.test"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	got, err := db.Capture(ctx, store.Capture{TenantID: nt.TenantID, UserID: nt.UserID, ConversationID: conv, Role: "user",
		Position: 1, Fingerprint: []byte("question"), CreatedAt: time.Now(), ClockAdvance: 3,
		Items: []store.CaptureItem{item("why does the parser reject trailing commas?", 1)}, SentAfter: 4})
	if err != nil || !got.Duplicate || got.Erased != rep.Seq || rep.Seq == 0 {
		t.Fatalf("after a redaction at %d: %+v %v", rep.Seq, got, err)
	}
}
