package store_test

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

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
			nt, got := aliceSaid(t, db, "erasure-"+kind, "the vault code is 4417")
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
			tx, pid := holding(ctx, t, owner, lock, nt.TenantID, stmt, args)
			var seq, removed int64
			erased := make(chan error, 1)
			go func() {
				actor := store.Actor{Email: "admin@example.test"}
				if kind == "purge" {
					rep, err := db.PurgeUser(ctx, nt.TenantID, nt.UserID, actor)
					seq, removed = rep.Seq, rep.Inspections
					erased <- err
					return
				}
				rep, err := db.RedactItem(ctx, nt.TenantID, got.ItemIDs[0], actor, nil)
				seq, removed = rep.Seq, rep.Inspections
				erased <- err
			}()
			waitForWaiter(ctx, t, owner, pid, erased, "the erasure ended while a record quoting its memory was being written")
			if err := tx.Commit(ctx); err != nil {
				t.Fatal(err)
			}
			if err := <-erased; err != nil {
				t.Fatal(err)
			}
			if removed != 1 {
				t.Errorf("the %s removed %d records, want the one committed while it waited", kind, removed)
			}
			// Records written after it: the request read before it, or after.
			if err := db.RecordRequest(ctx, record("read-before", got.Seq)); err != nil {
				t.Fatal(err)
			}
			// The record's own side: one written while an erasure holds the
			// lock waits for it.
			etx, epid := holding(ctx, t, owner, store.ErasureLockSQL, nt.TenantID, "", nil)
			recorded := make(chan error, 1)
			go func() { recorded <- db.RecordRequest(ctx, record("read-after", seq)) }()
			waitForWaiter(ctx, t, owner, epid, recorded, "a record quoting memory was written while an erasure held the lock")
			if err := etx.Commit(ctx); err != nil {
				t.Fatal(err)
			}
			if err := <-recorded; err != nil {
				t.Fatal(err)
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

// holding opens a transaction on owner that takes lock for the tenant and
// runs stmt ("" for none), and returns it with its backend's pid; the test
// commits it, or it rolls back at the end.
func holding(ctx context.Context, t *testing.T, owner *pgxpool.Pool, lock string, tenantID int64, stmt string, args []any) (pgx.Tx, int) {
	t.Helper()
	tx, err := owner.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = tx.Rollback(context.Background()) })
	var pid int
	if err := tx.QueryRow(ctx, `SELECT pg_backend_pid()`).Scan(&pid); err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(ctx, lock, tenantID); err != nil {
		t.Fatal(err)
	}
	if stmt != "" {
		if _, err := tx.Exec(ctx, stmt, args...); err != nil {
			t.Fatal(err)
		}
	}
	return tx, pid
}

// waitForWaiter returns once a session waits for an advisory lock pid
// holds; the other side (done) ending first, with early saying what that
// means, or five seconds passing, fails.
func waitForWaiter(ctx context.Context, t *testing.T, owner *pgxpool.Pool, pid int, done <-chan error, early string) {
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
		case err := <-done:
			t.Fatalf("%s (err %v)", early, err)
		case <-time.After(20 * time.Millisecond):
		}
	}
	t.Fatalf("no session waited for the lock held: %s", early)
}
