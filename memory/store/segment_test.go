package store_test

import (
	"context"
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/perpetuity/perpetuity/memory/store"
)

func segmentRows() []store.ArenaItem {
	return []store.ArenaItem{
		{ID: 7, Seq: 1, UserID: 2, ConvID: 3, BornClock: 10, Tau: 1000, TermIDs: []int32{5, 9, 40000}, Freqs: []int16{1, 3, 1}, Length: 5, Tokens: 12},
		// Same seq (a message's second part), ids and clocks going down,
		// terms out of order, a vector.
		{ID: 6, Seq: 1, UserID: 2, ConvID: 3, BornClock: 4, Tau: 1000, TermIDs: []int32{30, 2}, Freqs: []int16{2, 1}, Length: 3, Tokens: 8, Dense: []byte{0, 255, 7}},
		{ID: 1 << 40, Seq: 9, UserID: 1 << 33, ConvID: 1, BornClock: -5, Tau: math.Inf(1), Length: 0, Tokens: 0, Dense: []byte{}},
		{ID: 12, Seq: 1 << 50, UserID: 2, ConvID: 3, BornClock: 0, Tau: 0.25, TermIDs: []int32{math.MaxInt32, math.MinInt32}, Freqs: []int16{math.MaxInt16, -1}, Length: -1, Tokens: math.MaxInt32},
	}
}

func TestSegmentCodec(t *testing.T) {
	t.Parallel()
	rows := segmentRows()
	cases := []struct {
		name string
		rows []store.ArenaItem
	}{
		{"none", nil},
		{"one", rows[:1]},
		{"all", rows},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			enc := store.EncodeSegment(tc.rows)
			got, err := store.DecodeSegment(nil, enc)
			if err != nil {
				t.Fatal(err)
			}
			if !store.SameRows(got, tc.rows) {
				t.Fatalf("decoded %+v, want %+v", got, tc.rows)
			}
			// Every cut short and every byte too many is refused, never
			// read as fewer rows.
			for n := 0; n < len(enc); n++ {
				if _, err := store.DecodeSegment(nil, enc[:n]); err == nil {
					t.Fatalf("a payload cut to %d of %d bytes decoded", n, len(enc))
				}
			}
			if _, err := store.DecodeSegment(nil, append(enc, 0)); err == nil {
				t.Fatal("a payload with a trailing byte decoded")
			}
		})
	}
	// A vector is told from none, and a changed row from the same.
	a, b := rows[1:2], []store.ArenaItem{rows[1]}
	b[0].Dense = nil
	if store.SameRows(a, b) {
		t.Fatal("a row with a vector equals one without")
	}
}

func FuzzDecodeSegment(f *testing.F) {
	f.Add(store.EncodeSegment(segmentRows()))
	f.Add([]byte{1, 0, 0, 0})
	f.Add([]byte{1, 200, 200, 200, 1})
	f.Fuzz(func(t *testing.T, payload []byte) {
		rows, err := store.DecodeSegment(nil, payload)
		if err != nil {
			return
		}
		// What decodes encodes back to a payload that decodes the same.
		again, err := store.DecodeSegment(nil, store.EncodeSegment(rows))
		if err != nil || !store.SameRows(again, rows) {
			t.Fatalf("re-encoded rows differ: %v", err)
		}
	})
}

// segmentTenant captures n turns alternately by two users and returns the
// tenant, the second user and the items' ids.
func segmentTenant(t *testing.T, db *store.DB, n int) (store.NewTenant, int64, []int64) {
	t.Helper()
	nt, err := db.CreateTenantWith(context.Background(), "acme", "alice", store.TenantOptions{Dict: 1})
	if err != nil {
		t.Fatal(err)
	}
	bob, err := db.EnsureUser(context.Background(), nt.TenantID, "bob")
	if err != nil {
		t.Fatal(err)
	}
	return nt, bob, captureTurns(t, db, nt.TenantID, []int64{nt.UserID, bob}, 0, n)
}

// captureTurns captures n messages of two items each from position from,
// the i-th by users[i%len(users)], and returns the items' ids.
func captureTurns(t *testing.T, db *store.DB, tenantID int64, users []int64, from, n int) []int64 {
	t.Helper()
	ctx := context.Background()
	var ids []int64
	for i := from; i < from+n; i++ {
		u := users[i%len(users)]
		conv, err := db.EnsureConversation(ctx, tenantID, u, "c", "")
		if err != nil {
			t.Fatal(err)
		}
		c, err := db.Capture(ctx, store.Capture{TenantID: tenantID, UserID: u, ConversationID: conv, Role: "user",
			Position: i, Fingerprint: fmt.Appendf(nil, "m%d", i), CreatedAt: time.Now(), ClockAdvance: 1,
			Items: []store.CaptureItem{item(fmt.Sprintf("turn %d", i), int32(i+1), 1000), item(fmt.Sprintf("part %d", i), 2)}})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, c.ItemIDs...)
	}
	return ids
}

// TestColdLoadReadsSegments: a cold load reads the chain of segments and
// the rows past it, and gets exactly what the rows alone give; segments
// that do not continue the chain, of another version, or cut before a
// purge are not written; a purge and a redaction take them away.
func TestColdLoadReadsSegments(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := openDB(t)
	nt, bob, ids := segmentTenant(t, db, 20)
	rows, err := db.ReadCatchUp(ctx, nt.TenantID, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	if rows.Segmented != 0 || len(rows.Items) != 40 {
		t.Fatalf("before any segment: segmented %d, %d items", rows.Segmented, len(rows.Items))
	}
	// Size 3 over two-item messages: a segment never splits a message's seq.
	segs := store.CutSegments(rows.Items, 0, rows.Head.Seq, 3)
	if len(segs) != 10 || segs[0].Items != 4 || segs[0].FirstSeq != 0 || segs[1].FirstSeq != segs[0].LastSeq {
		t.Fatalf("cut: %d segments, first %+v", len(segs), segs[0])
	}
	if n, err := db.WriteSegments(ctx, nt.TenantID, 2, rows.Head.Seq, segs); err != nil || n != 0 {
		t.Fatalf("segments of a version the tenant is not on: %d written, %v", n, err)
	}
	if n, err := db.WriteSegments(ctx, nt.TenantID, 1, rows.Head.Seq, segs[1:]); err != nil || n != 0 {
		t.Fatalf("segments that do not start the chain: %d written, %v", n, err)
	}
	if n, err := db.WriteSegments(ctx, nt.TenantID, 1, rows.Head.Seq, segs[:9]); err != nil || n != 9 {
		t.Fatalf("write: %d of 9, %v", n, err)
	}
	if n, err := db.WriteSegments(ctx, nt.TenantID, 1, rows.Head.Seq, segs[:9]); err != nil || n != 0 {
		t.Fatalf("the same again: %d written, %v", n, err)
	}
	more := captureTurns(t, db, nt.TenantID, []int64{nt.UserID}, 20, 3)
	seg, err := db.ReadCatchUp(ctx, nt.TenantID, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	tail, err := db.ReadCatchUp(ctx, nt.TenantID, rows.Head.Seq, 0)
	if err != nil {
		t.Fatal(err)
	}
	want := append(append([]store.ArenaItem(nil), rows.Items...), tail.Items...)
	if seg.Segmented != segs[8].LastSeq || !store.SameRows(seg.Items, want) || len(want) != 40+len(more) {
		t.Fatalf("load from segments: segmented %d (want %d), %d items, want %d equal", seg.Segmented, segs[8].LastSeq, len(seg.Items), len(want))
	}

	// Cut before a purge, written after it: refused.
	late := store.CutSegments(seg.Items, seg.Segmented, seg.Head.Seq, 3)
	if _, err := db.PurgeUser(ctx, nt.TenantID, bob, store.Actor{Email: "test"}); err != nil {
		t.Fatal(err)
	}
	after, err := db.ReadCatchUp(ctx, nt.TenantID, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	if after.Segmented != 0 {
		t.Fatalf("a purge left segments up to %d", after.Segmented)
	}
	for _, it := range after.Items {
		if it.UserID == bob {
			t.Fatalf("the purged user's item %d is read", it.ID)
		}
	}
	if n, err := db.WriteSegments(ctx, nt.TenantID, 1, seg.Head.Seq, late); err != nil || n != 0 {
		t.Fatalf("segments cut before a purge: %d written, %v", n, err)
	}
	// Cut after it: written, and a redaction takes them away.
	fresh := store.CutSegments(after.Items, 0, after.Head.Seq, 3)
	if n, err := db.WriteSegments(ctx, nt.TenantID, 1, after.Head.Seq, fresh); err != nil || n != len(fresh) || n == 0 {
		t.Fatalf("segments after the purge: %d of %d, %v", n, len(fresh), err)
	}
	if _, err := db.RedactItem(ctx, nt.TenantID, ids[0], store.Actor{Email: "test"}, nil); err != nil {
		t.Fatal(err)
	}
	if cu, err := db.ReadCatchUp(ctx, nt.TenantID, 0, 0); err != nil || cu.Segmented != 0 {
		t.Fatalf("after a redaction: segmented %d, %v", cu.Segmented, err)
	}
}

// TestColdLoadPassesOverABadSegment: a segment that does not decode costs
// the load its speed, never the tenant's memory.
func TestColdLoadPassesOverABadSegment(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := openDB(t)
	nt, _, _ := segmentTenant(t, db, 6)
	rows, err := db.ReadCatchUp(ctx, nt.TenantID, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	segs := store.CutSegments(rows.Items, 0, rows.Head.Seq, 2)
	if n, err := db.WriteSegments(ctx, nt.TenantID, 1, rows.Head.Seq, segs); err != nil || n != len(segs) {
		t.Fatalf("write: %d of %d, %v", n, len(segs), err)
	}
	owner := ownerOf(t, db)
	cases := []struct{ name, sql string }{
		{"truncated", `UPDATE arena_segments SET payload = substr(payload, 1, 5) WHERE tenant_id = $1 AND first_seq = $2`},
		{"row count", `UPDATE arena_segments SET items = items + 1 WHERE tenant_id = $1 AND first_seq = $2`},
	}
	for _, tc := range cases {
		if _, err := owner.Exec(ctx, `DELETE FROM arena_segments WHERE tenant_id = $1`, nt.TenantID); err != nil {
			t.Fatal(err)
		}
		if _, err := db.WriteSegments(ctx, nt.TenantID, 1, rows.Head.Seq, segs); err != nil {
			t.Fatal(err)
		}
		if _, err := owner.Exec(ctx, tc.sql, nt.TenantID, segs[1].FirstSeq); err != nil {
			t.Fatal(err)
		}
		got, err := db.ReadCatchUp(ctx, nt.TenantID, 0, 0)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if got.Segmented != 0 || !store.SameRows(got.Items, rows.Items) {
			t.Fatalf("%s: segmented %d, %d items, want the %d rows", tc.name, got.Segmented, len(got.Items), len(rows.Items))
		}
	}
}
