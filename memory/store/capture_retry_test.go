package store_test

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/perpetuity/perpetuity/memory/store"
)

// captureState is every row a capture may write, as text.
func captureState(t *testing.T, db *store.DB, tenantID int64) string {
	t.Helper()
	var b strings.Builder
	for _, q := range []string{
		`SELECT count(*)::text FROM messages WHERE tenant_id = $1`,
		`SELECT coalesce(string_agg(id || ':' || message_id || ':' || part || ':' || seq || ':' || born_clock, ',' ORDER BY id), '') FROM items WHERE tenant_id = $1`,
		`SELECT count(*)::text FROM retrieval_rows WHERE tenant_id = $1`,
		`SELECT count(*)::text FROM item_births WHERE tenant_id = $1`,
		`SELECT coalesce(string_agg(item_id || ':' || t_last || ':' || peak, ',' ORDER BY item_id), '') FROM activations WHERE tenant_id = $1`,
		`SELECT coalesce(string_agg(term_id || ':' || df, ',' ORDER BY term_id), '') FROM term_stats WHERE tenant_id = $1`,
		`SELECT coalesce(string_agg(items || ':' || total_length, ','), '') FROM corpus_stats WHERE tenant_id = $1`,
		`SELECT coalesce(string_agg(message_id || ':' || dict_version || ':' || items || ':' || total_length || ':' || term_ids::text || ':' || dfs::text,
			',' ORDER BY message_id, dict_version), '') FROM stat_deltas WHERE tenant_id = $1`,
		`SELECT coalesce(string_agg(kind || ':' || subject || '=' || value, ',' ORDER BY id), '') FROM bindings WHERE tenant_id = $1`,
		`SELECT coalesce(string_agg(message_id || ':' || item_ids::text, ',' ORDER BY message_id), '') FROM reply_sources WHERE tenant_id = $1`,
		`SELECT string_agg(clock::text, ',' ORDER BY id) FROM memory_users WHERE tenant_id = $1`,
		`SELECT seq::text FROM tenant_heads WHERE tenant_id = $1`,
	} {
		var s string
		if err := ownerOf(t, db).QueryRow(context.Background(), q, tenantID).Scan(&s); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
		b.WriteString(s + "\n")
	}
	return b.String()
}

// TestCaptureRetryWritesNothing: the capture is one batch whose statements
// after the message write only when it stored the message; a retry of a
// message with a speaker, hints and sources changes no row, and a capture
// for a user that does not exist fails whole.
func TestCaptureRetryWritesNothing(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := openDB(t)
	nt, conv := aliceIn(t, db, "acme", "c1")
	first, err := db.Capture(ctx, store.Capture{TenantID: nt.TenantID, UserID: nt.UserID, ConversationID: conv, Role: "user",
		Fingerprint: []byte("q"), CreatedAt: time.Now(), ClockAdvance: 2, Items: []store.CaptureItem{item("question", 7)}})
	if err != nil {
		t.Fatal(err)
	}
	reply := store.Capture{TenantID: nt.TenantID, UserID: nt.UserID, ConversationID: conv, Role: "assistant", Speaker: "Concierge",
		Position: 1, Fingerprint: []byte("r"), CreatedAt: time.Now(), ClockAdvance: 5,
		Hints:   []store.Hint{{Subject: "x-session", Value: "s1"}},
		Sources: first.ItemIDs,
		Items:   []store.CaptureItem{item("reply one ", 7, 8), item("reply two", 9)}}
	for _, tc := range []struct {
		name      string
		capture   store.Capture
		duplicate bool
		err       error
	}{
		{"stored", reply, false, nil},
		{"retried", reply, true, nil},
		{"no such user", func() store.Capture { c := reply; c.UserID, c.Fingerprint = 1<<40, []byte("x"); return c }(), false, store.ErrNotFound},
	} {
		before := captureState(t, db, nt.TenantID)
		got, err := db.Capture(ctx, tc.capture)
		if !errors.Is(err, tc.err) || (err == nil) != (tc.err == nil) {
			t.Fatalf("%s: error %v, want %v", tc.name, err, tc.err)
		}
		after := captureState(t, db, nt.TenantID)
		if written := after != before; written != (tc.err == nil && !tc.duplicate) || got.Duplicate != tc.duplicate {
			t.Fatalf("%s: duplicate %v, rows before:\n%s\nafter:\n%s", tc.name, got.Duplicate, before, after)
		}
		if tc.name == "stored" && (len(got.ItemIDs) != 2 || got.Seq != first.Seq+1 || got.Clock != 7 ||
			!strings.Contains(after, "speaker:Concierge=Concierge") || !strings.Contains(after, "hint:x-session=s1") ||
			!strings.Contains(after, ":{"+int64s(first.ItemIDs)+"}")) {
			t.Fatalf("stored %+v:\n%s", got, after)
		}
	}
}

func int64s(ids []int64) string {
	out := make([]string, len(ids))
	for i, id := range ids {
		out[i] = strconv.FormatInt(id, 10)
	}
	return strings.Join(out, ",")
}
