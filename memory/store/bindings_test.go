package store_test

import (
	"context"
	"testing"
	"time"

	"github.com/perpetuity/perpetuity/memory/store"
)

// TestBindingLog: creation, capture and renames append bindings; a frame's
// labels read the latest, so a rename shows in the very next render while
// the log keeps what came before; hints are recorded once per pairing;
// purge takes the user's history away in its transaction.
func TestBindingLog(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := openDB(t)
	nt, err := db.CreateTenantWith(ctx, "acme", "alice", store.TenantOptions{Dict: 1})
	if err != nil {
		t.Fatal(err)
	}
	conv, err := db.EnsureConversation(ctx, nt.TenantID, nt.UserID, "c1", "Trip planning")
	if err != nil {
		t.Fatal(err)
	}
	if again, err := db.EnsureConversation(ctx, nt.TenantID, nt.UserID, "c1", "other title"); err != nil || again != conv {
		t.Fatalf("ensure again: %d %v", again, err)
	}
	hints := []store.Hint{{Subject: "x-claude-code-session-id", Value: "019ad0f1-7c2e-7d41-9a5e-1f2b3c4d5e6f"}, {Subject: "metadata.user_id", Value: `{"device_id":"5e1f"}`}}
	capture := func(fp, speaker string) []int64 {
		t.Helper()
		got, err := db.Capture(ctx, store.Capture{TenantID: nt.TenantID, UserID: nt.UserID, ConversationID: conv, Role: "user",
			Speaker: speaker, Fingerprint: []byte(fp), CreatedAt: time.Now(), ClockAdvance: 3, Hints: hints,
			Items: []store.CaptureItem{item("lisbon "+fp, 1)}})
		if err != nil {
			t.Fatal(err)
		}
		return got.ItemIDs
	}
	ids := append(capture("a", ""), capture("b", "Dana")...)
	ids = append(ids, capture("c", "")...)

	labels := func() (speakers []string, title string) {
		t.Helper()
		rows, err := db.RenderItems(ctx, nt.TenantID, ids)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range rows {
			speakers, title = append(speakers, r.Speaker), r.ConvTitle
		}
		return speakers, title
	}
	if sp, title := labels(); len(sp) != 3 || title != "Trip planning" || sp[0] != "alice" || sp[1] != "Dana" {
		t.Fatalf("labels before renames %q %q", sp, title)
	}
	if err := db.RenameUser(ctx, nt.TenantID, nt.UserID, "Alice Martin", "console"); err != nil {
		t.Fatal(err)
	}
	if err := db.RenameConversation(ctx, nt.TenantID, conv, "Lisbon, May", "console"); err != nil {
		t.Fatal(err)
	}
	if sp, title := labels(); title != "Lisbon, May" || sp[0] != "Alice Martin" || sp[1] != "Dana" || sp[2] != "Alice Martin" {
		t.Fatalf("labels after renames %q %q", sp, title)
	}
	if err := db.RenameUser(ctx, nt.TenantID, 1<<40, "nobody", "console"); err == nil {
		t.Fatal("renamed a user that does not exist")
	}

	ub, err := db.UserBindings(ctx, nt.TenantID, nt.UserID, 50)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, b := range ub {
		got = append(got, b.Kind+":"+b.Subject+"="+b.Value+"/"+b.Source)
	}
	if want := []string{"user:=Alice Martin/console", "speaker:Dana=Dana/capture", "hint:metadata.user_id=" + hints[1].Value + "/capture",
		"hint:x-claude-code-session-id=" + hints[0].Value + "/capture", "user:=alice/created"}; !equal(got, want) {
		t.Fatalf("user bindings %q, want %q", got, want)
	}
	cb, err := db.ConversationBindings(ctx, nt.TenantID, conv, 50)
	if err != nil {
		t.Fatal(err)
	}
	got = got[:0]
	for _, b := range cb {
		got = append(got, b.Kind+":"+b.Subject+"="+b.Value)
	}
	if want := []string{"title:=Lisbon, May", "hint:metadata.user_id=" + hints[1].Value,
		"hint:x-claude-code-session-id=" + hints[0].Value, "title:=Trip planning"}; !equal(got, want) {
		t.Fatalf("conversation bindings %q, want %q (three captures, each hint once)", got, want)
	}

	rep, err := db.PurgeUser(ctx, nt.TenantID, nt.UserID, store.Actor{Email: "cli"})
	if err != nil {
		t.Fatal(err)
	}
	var left int
	if err := ownerOf(t, db).QueryRow(ctx, `SELECT count(*) FROM bindings WHERE tenant_id = $1 AND NOT (kind = 'user' AND source = 'purge')`, nt.TenantID).Scan(&left); err != nil {
		t.Fatal(err)
	}
	if left != 0 || rep.Bindings != 7 {
		t.Fatalf("after purge %d bindings left, %d reported purged (want 0, 7)", left, rep.Bindings)
	}
	if ub, err := db.UserBindings(ctx, nt.TenantID, nt.UserID, 50); err != nil || len(ub) != 1 || ub[0].Value != "Alice Martin" {
		t.Fatalf("after purge the user's name is bound once again: %+v %v", ub, err)
	}
}

func equal(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
