package store_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/perpetuity/perpetuity/memory/store"
)

// TestFrameLabels: a frame reads its viewer's labels up front, all of them
// or, past the limit, as many as it may and says so; ReadItemTexts resolves
// the rest, an unbound label as empty, as renderSQL does.
func TestFrameLabels(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name     string
		speakers int // extra speakers bound in alice's memory
		complete bool
	}{{"few speakers", 3, true}, {"more speakers than a frame reads", 300, false}} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			db := openDB(t)
			nt, conv := aliceIn(t, db, "acme", "c")
			got, err := db.Capture(ctx, store.Capture{TenantID: nt.TenantID, UserID: nt.UserID, ConversationID: conv, Role: "user",
				Speaker: "Dana", Fingerprint: []byte("a"), CreatedAt: time.Now(), ClockAdvance: 1, Items: []store.CaptureItem{item("hello", 1)}})
			if err != nil {
				t.Fatal(err)
			}
			owner := ownerOf(t, db)
			if _, err := owner.Exec(ctx, `INSERT INTO bindings (tenant_id, kind, user_id, subject, value, source)
				SELECT $1, 'speaker', $2, 's' || lpad(g::text, 4, '0'), 'S' || g, 'test' FROM generate_series(1, $3) g`,
				nt.TenantID, nt.UserID, tc.speakers); err != nil {
				t.Fatal(err)
			}
			if err := db.RenameUser(ctx, nt.TenantID, nt.UserID, "Alice Martin", "console"); err != nil {
				t.Fatal(err)
			}
			in, err := db.ReadFrameInputs(ctx, nt.TenantID, store.FrameRead{ViewerID: nt.UserID, ConvID: conv, Recent: 1})
			if err != nil {
				t.Fatal(err)
			}
			l := in.Labels
			if (l.Of == nt.UserID) != tc.complete {
				t.Fatalf("labels of %d (viewer %d), %d read", l.Of, nt.UserID, len(l.By))
			}
			user := store.LabelKey{UserID: nt.UserID, Kind: store.BindUser}
			if v, ok := l.Resolve(user); !ok || v != "Alice Martin" {
				t.Fatalf("the viewer's name resolves to %q, %v", v, ok)
			}
			last := store.LabelKey{UserID: nt.UserID, Kind: store.BindSpeaker, Subject: fmt.Sprintf("s%04d", tc.speakers)}
			unbound := store.LabelKey{UserID: nt.UserID, Kind: store.BindSpeaker, Subject: "nobody"}
			if v, ok := l.Resolve(last); ok != tc.complete || (ok && v != fmt.Sprintf("S%d", tc.speakers)) {
				t.Fatalf("the last speaker resolves to %q, %v", v, ok)
			}
			if v, ok := l.Resolve(unbound); ok != tc.complete || v != "" {
				t.Fatalf("an unbound speaker resolves to %q, %v", v, ok)
			}
			rs, err := db.ReadItemTexts(ctx, nt.TenantID, got.ItemIDs, []store.LabelKey{last, unbound}, l)
			if err != nil {
				t.Fatal(err)
			}
			if len(rs.Items) != 1 || !rs.Items[0].BornAt.Equal(got.Items[0].BornAt) {
				t.Fatalf("item texts %+v, captured %+v", rs.Items, got.Items)
			}
			read, stored := rs.Items[0], got.Items[0]
			read.BornAt = stored.BornAt // equal instants, locations may differ
			if read != stored {
				t.Fatalf("item text read %+v, captured %+v", read, stored)
			}
			dana := store.LabelKey{UserID: nt.UserID, Kind: store.BindSpeaker, Subject: "Dana"}
			if v, ok := rs.Labels[dana]; ok == tc.complete || (ok && v != "Dana") {
				t.Fatalf("the item's own label read back %q, %v (the viewer's labels complete: %v)", v, ok, tc.complete)
			}
			if rs.Labels[last] != fmt.Sprintf("S%d", tc.speakers) || rs.Labels[unbound] != "" {
				t.Fatalf("labels read %v", rs.Labels)
			}
		})
	}
}
