package store_test

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/perpetuity/perpetuity/memory/store"
)

// erasureWaiterSQL counts the sessions waiting for an advisory lock that
// the session pid holds.
const erasureWaiterSQL = `SELECT count(*) FROM pg_locks w JOIN pg_locks h
	ON h.locktype = 'advisory' AND w.locktype = 'advisory'
	AND h.classid = w.classid AND h.objid = w.objid AND h.objsubid = w.objsubid
	WHERE h.pid = $1 AND h.granted AND NOT w.granted`

// TestErasureAndQuotingRecord: a purge or redaction that comes while a
// record quoting the memory it erases is being written waits for that
// record and then removes it; a record written after the erasure by a
// request that read memory before it keeps its figures and no
// inspection; one whose request read after it keeps its inspection.
func TestErasureAndQuotingRecord(t *testing.T) {
	t.Parallel()
	for _, kind := range []string{"purge", "redact"} {
		t.Run(kind, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			db := openDB(t)
			owner := ownerOf(t, db)
			nt, err := db.CreateTenantWith(ctx, "erasure-"+kind, "alice", store.TenantOptions{Dict: 1})
			if err != nil {
				t.Fatal(err)
			}
			conv, err := db.EnsureConversation(ctx, nt.TenantID, nt.UserID, "c1", "")
			if err != nil {
				t.Fatal(err)
			}
			got, err := db.Capture(ctx, store.Capture{TenantID: nt.TenantID, UserID: nt.UserID, ConversationID: conv, Role: "user",
				Fingerprint: []byte("fp"), CreatedAt: time.Now(), ClockAdvance: 3, Items: []store.CaptureItem{item("the vault code is 4417", 1)}})
			if err != nil {
				t.Fatal(err)
			}
			record := func(rid string, seen int64) store.RequestRecord {
				return store.RequestRecord{TenantID: nt.TenantID, RequestID: rid, UserID: nt.UserID, Dialect: "openai-chat",
					Provider: "openai", Model: rid, Status: 200, FrameTokens: 40, InspectRetention: time.Hour, Seen: seen,
					Inspection: &store.Inspection{Question: "what is the vault code " + rid, Reply: "4417",
						Turns: []store.InspectTurn{{Role: "user", Text: "the vault code is 4417"}},
						Items: []store.InspectItem{{ID: got.ItemIDs[0], Shown: true, Rank: 0, Heat: 2, Reasons: []string{"match"}}}}}
			}

			// A record in flight: its lock and statement, not committed.
			lock, stmt, args, err := store.QuoteRecord(record("in-flight", got.Seq))
			if err != nil {
				t.Fatal(err)
			}
			tx, err := owner.Begin(ctx)
			if err != nil {
				t.Fatal(err)
			}
			defer func() { _ = tx.Rollback(ctx) }()
			var pid int
			if err := tx.QueryRow(ctx, `SELECT pg_backend_pid()`).Scan(&pid); err != nil {
				t.Fatal(err)
			}
			for _, q := range []struct {
				sql  string
				args []any
			}{{lock, []any{nt.TenantID}}, {stmt, args}} {
				if _, err := tx.Exec(ctx, q.sql, q.args...); err != nil {
					t.Fatal(err)
				}
			}
			done := make(chan erasureResult, 1)
			go func() {
				actor := store.Actor{Email: "admin@example.test"}
				if kind == "purge" {
					rep, err := db.PurgeUser(ctx, nt.TenantID, nt.UserID, actor)
					done <- erasureResult{rep.Seq, rep.Inspections, err}
					return
				}
				rep, err := db.RedactItem(ctx, nt.TenantID, got.ItemIDs[0], actor, nil)
				done <- erasureResult{rep.Seq, rep.Inspections, err}
			}()
			waitForWaiter(ctx, t, owner, pid, done)
			if err := tx.Commit(ctx); err != nil {
				t.Fatal(err)
			}
			res := <-done
			if res.err != nil {
				t.Fatal(res.err)
			}
			if res.inspections != 1 {
				t.Errorf("the %s removed %d records, want the one committed while it waited", kind, res.inspections)
			}
			// Records written after it: the request read before it, or after.
			for _, r := range []store.RequestRecord{record("read-before", got.Seq), record("read-after", res.seq)} {
				if err := db.RecordRequest(ctx, r); err != nil {
					t.Fatal(err)
				}
			}
			rows, err := db.Requests(ctx, nt.TenantID, nt.UserID, 10)
			if err != nil {
				t.Fatal(err)
			}
			want := map[string]bool{"in-flight": false, "read-before": false, "read-after": true}
			if len(rows) != len(want) {
				t.Fatalf("%d requests listed, want %d (every record keeps its figures)", len(rows), len(want))
			}
			for _, r := range rows {
				if w, ok := want[r.Model]; !ok || r.Inspected != w {
					t.Errorf("request %s: inspection kept %v, want %v", r.Model, r.Inspected, w)
				}
			}
		})
	}
}

// erasureResult is what a purge or redaction run beside the test returned.
type erasureResult struct {
	seq, inspections int64
	err              error
}

// waitForWaiter returns once a session waits for an advisory lock pid
// holds; the erasure (done) ending first, or five seconds passing, fails.
func waitForWaiter(ctx context.Context, t *testing.T, owner interface {
	QueryRow(context.Context, string, ...any) pgx.Row
}, pid int, done <-chan erasureResult) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		var n int
		if err := owner.QueryRow(ctx, erasureWaiterSQL, pid).Scan(&n); err != nil {
			t.Fatal(err)
		}
		if n > 0 {
			return
		}
		select {
		case r := <-done:
			t.Fatalf("the erasure ended (err %v) while a record quoting its memory was being written", r.err)
		case <-time.After(20 * time.Millisecond):
		}
	}
	t.Fatal("the erasure did not wait for the record being written")
}
