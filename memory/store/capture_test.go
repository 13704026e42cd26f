package store_test

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/perpetuity/perpetuity/memory/store"
	"github.com/perpetuity/perpetuity/migrations/dbtest"
)

func TestMain(m *testing.M) { os.Exit(dbtest.RunMain(m)) }

func openDB(t *testing.T) *store.DB {
	t.Helper()
	db, err := store.Open(context.Background(), dbtest.Shared(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(db.Close)
	return db
}

// aliceIn is a new tenant on dictionary v1 whose user alice has the
// conversation ext; it returns the tenant and the conversation's id.
func aliceIn(tb testing.TB, db *store.DB, tenant, ext string) (store.NewTenant, int64) {
	tb.Helper()
	ctx := context.Background()
	nt, err := db.CreateTenantWith(ctx, tenant, "alice", store.TenantOptions{Dict: 1})
	if err != nil {
		tb.Fatal(err)
	}
	conv, err := db.EnsureConversation(ctx, nt.TenantID, nt.UserID, ext, "")
	if err != nil {
		tb.Fatal(err)
	}
	return nt, conv
}

// ownerOf is a pool on db's database as the owner, which row-level security
// does not confine: tests read what was stored through it.
func ownerOf(t *testing.T, db *store.DB) *pgxpool.Pool {
	t.Helper()
	return dbtest.Owner(t, db.Pool.Config().ConnString())
}

func item(body string, terms ...int32) store.CaptureItem {
	freqs := make([]int16, len(terms))
	for i := range freqs {
		freqs[i] = 1
	}
	return store.CaptureItem{Body: body, Tokens: []string{body}, TokenCount: 3, Tau: 1000, Novelty: 0.5,
		Rows: []store.RetrievalRow{{DictVersion: 1, TermIDs: terms, Freqs: freqs, Length: len(terms)}}}
}

func TestCaptureWritesEverythingOnce(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := openDB(t)
	nt, conv := aliceIn(t, db, "acme", "c1")
	c := store.Capture{TenantID: nt.TenantID, UserID: nt.UserID, ConversationID: conv, Role: "user",
		Position: 0, Fingerprint: []byte("fp1"), CreatedAt: time.Now(), ClockAdvance: 6,
		Items: []store.CaptureItem{item("hello ", 1, 2), item("world", 2, 3)}}
	got, err := db.Capture(ctx, c)
	if err != nil {
		t.Fatal(err)
	}
	if got.Duplicate || len(got.ItemIDs) != 2 || got.Clock != 6 || got.Seq != 1 {
		t.Fatalf("capture result %+v", got)
	}
	again, err := db.Capture(ctx, c)
	if err != nil {
		t.Fatal(err)
	}
	if !again.Duplicate {
		t.Fatalf("retried capture was not recognised: %+v", again)
	}
	checks := []struct {
		sql  string
		want int64
	}{
		{`SELECT count(*) FROM messages WHERE tenant_id = $1`, 1},
		{`SELECT count(*) FROM items WHERE tenant_id = $1`, 2},
		{`SELECT count(*) FROM retrieval_rows WHERE tenant_id = $1`, 2},
		{`SELECT count(*) FROM activations WHERE tenant_id = $1 AND t_last = 6 AND peak = 1`, 2},
		// The message's frequency counts, one row until a fold.
		{`SELECT count(*) FROM stat_deltas WHERE tenant_id = $1 AND dict_version = 1 AND items = 2 AND total_length = 4
			AND term_ids = '{1,2,3}' AND dfs = '{1,2,1}'`, 1},
		{`SELECT count(*) FROM term_stats WHERE tenant_id = $1`, 0},
		{`SELECT clock FROM memory_users WHERE tenant_id = $1`, 6},
		{`SELECT seq FROM tenant_heads WHERE tenant_id = $1`, 1},
	}
	owner := ownerOf(t, db)
	check := func(sql string, want int64) {
		t.Helper()
		var n int64
		if err := owner.QueryRow(ctx, sql, nt.TenantID).Scan(&n); err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
		if n != want {
			t.Errorf("%s = %d, want %d", sql, n, want)
		}
	}
	for _, ch := range checks {
		check(ch.sql, ch.want)
	}
	// A fold moves them into the per-term and corpus counts; a second
	// finds nothing to move.
	for want := 1; want >= 0; want-- {
		if n, err := db.FoldStats(ctx, nt.TenantID); err != nil || n != want {
			t.Fatalf("fold moved %d rows (%v), want %d", n, err, want)
		}
	}
	check(`SELECT df FROM term_stats WHERE tenant_id = $1 AND term_id = 2`, 2)
	check(`SELECT df FROM term_stats WHERE tenant_id = $1 AND term_id = 1`, 1)
	check(`SELECT items FROM corpus_stats WHERE tenant_id = $1`, 2)
	check(`SELECT total_length FROM corpus_stats WHERE tenant_id = $1`, 4)
	check(`SELECT count(*) FROM stat_deltas WHERE tenant_id = $1`, 0)
	turns, err := db.ConversationTurns(ctx, nt.TenantID, conv)
	if err != nil {
		t.Fatal(err)
	}
	if len(turns) != 2 || turns[0].Body+turns[1].Body != "hello world" {
		t.Fatalf("turns read back: %+v", turns)
	}
}

// TestCaptureAllOrNothing: a capture that fails halfway leaves no trace.
func TestCaptureAllOrNothing(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := openDB(t)
	nt, conv := aliceIn(t, db, "acme", "c1")
	bad := item("x", 5)
	bad.Tau = -1 // violates the tau > 0 check after message, clock and head were written
	_, err := db.Capture(ctx, store.Capture{TenantID: nt.TenantID, UserID: nt.UserID, ConversationID: conv, Role: "user",
		Fingerprint: []byte("fp"), CreatedAt: time.Now(), ClockAdvance: 9, Items: []store.CaptureItem{item("ok", 1), bad}})
	if err == nil {
		t.Fatal("capture with an invalid item succeeded")
	}
	for _, q := range []string{`SELECT count(*) FROM messages WHERE tenant_id = $1`, `SELECT count(*) FROM items WHERE tenant_id = $1`,
		`SELECT count(*) FROM stat_deltas WHERE tenant_id = $1`, `SELECT clock FROM memory_users WHERE tenant_id = $1`,
		`SELECT seq FROM tenant_heads WHERE tenant_id = $1`} {
		var n int64
		if err := ownerOf(t, db).QueryRow(ctx, q, nt.TenantID).Scan(&n); err != nil {
			t.Fatal(err)
		}
		if n != 0 {
			t.Errorf("%s = %d after a failed capture", q, n)
		}
	}
}

func TestKeys(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := openDB(t)
	nt, err := db.CreateTenantWith(ctx, "acme", "alice", store.TenantOptions{Dict: 1})
	if err != nil {
		t.Fatal(err)
	}
	k, err := db.ResolveKey(ctx, nt.Key)
	if err != nil || k.TenantID != nt.TenantID || k.UserID != nt.UserID || k.UserName != "alice" {
		t.Fatalf("resolve: %+v %v", k, err)
	}
	var stored []byte
	if err := ownerOf(t, db).QueryRow(ctx, `SELECT key_hash FROM api_keys WHERE tenant_id = $1`, nt.TenantID).Scan(&stored); err != nil {
		t.Fatal(err)
	}
	if string(stored) == nt.Key || len(stored) != 32 {
		t.Fatal("key not stored as a hash")
	}
	if _, err := db.ResolveKey(ctx, nt.Key+"x"); err != store.ErrNotFound {
		t.Fatalf("wrong key: %v", err)
	}
	if err := db.RevokeKey(ctx, nt.TenantID, nt.KeyID); err != nil {
		t.Fatal(err)
	}
	if _, err := db.ResolveKey(ctx, nt.Key); err != store.ErrNotFound {
		t.Fatalf("revoked key still resolves: %v", err)
	}
	other, _ := db.CreateTenantWith(ctx, "other", "bob", store.TenantOptions{Dict: 1})
	if err := db.RevokeKey(ctx, other.TenantID, nt.KeyID); err != store.ErrNotFound {
		t.Fatalf("revoking another tenant's key: %v", err)
	}
}

// TestCaptureStoredBeforeCommit: Stored is called once, after every
// statement succeeded and before COMMIT (the rows are not yet visible to
// another connection), with what Capture then returns; a duplicate's too;
// never for a capture whose statements fail. Sending is called once before
// it, whatever the statements then do.
func TestCaptureStoredBeforeCommit(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := openDB(t)
	owner := ownerOf(t, db)
	nt, conv := aliceIn(t, db, "acme", "c1")
	cases := []struct {
		name      string
		conv      int64
		dup       bool // the message is stored already
		wantCalls int
	}{
		{"new message", conv, false, 1},
		{"duplicate", conv, true, 1},
		{"statement fails (no such conversation)", conv + 1000, false, 0},
	}
	for _, c := range cases {
		var calls []store.Captured
		var hooks []string
		var visible int64 = -1
		cp := store.Capture{TenantID: nt.TenantID, UserID: nt.UserID, ConversationID: c.conv, Role: "user",
			Position: 0, Fingerprint: []byte("fp-stored"), CreatedAt: time.Now(), ClockAdvance: 3,
			Items:   []store.CaptureItem{item("stored early", 4, 5)},
			Sending: func() { hooks = append(hooks, "sending") },
			Stored: func(got store.Captured) {
				hooks = append(hooks, "stored")
				calls = append(calls, got)
				if err := owner.QueryRow(ctx, `SELECT count(*) FROM items WHERE tenant_id = $1 AND id = ANY($2)`,
					nt.TenantID, got.ItemIDs).Scan(&visible); err != nil {
					t.Error(err)
				}
			}}
		got, err := db.Capture(ctx, cp)
		if (err != nil) != (c.wantCalls == 0) {
			t.Fatalf("%s: err = %v", c.name, err)
		}
		if len(calls) != c.wantCalls {
			t.Fatalf("%s: Stored called %d times, want %d", c.name, len(calls), c.wantCalls)
		}
		if want := []string{"sending", "stored"}[:1+c.wantCalls]; !slices.Equal(hooks, want) {
			t.Fatalf("%s: hooks called %v, want %v", c.name, hooks, want)
		}
		if c.wantCalls == 0 {
			continue
		}
		if s := calls[0]; s.Duplicate != c.dup || !slices.Equal(s.ItemIDs, got.ItemIDs) || len(s.ItemIDs) != 1 ||
			s.Seq != got.Seq || s.Clock != got.Clock || len(s.Items) != len(got.Items) {
			t.Fatalf("%s: Stored saw %+v, Capture returned %+v", c.name, s, got)
		}
		want := int64(0) // not committed yet
		if c.dup {
			want = 1 // committed by the first capture
		}
		if visible != want {
			t.Fatalf("%s: %d of the items visible to another connection inside Stored, want %d", c.name, visible, want)
		}
	}
}

// TestCaptureItemTokens: each item keeps its own tokens, in order, whether
// a message's items go in one statement or, a long message's, in several
// (capture.go itemsPerStatement), an item without tokens included.
func TestCaptureItemTokens(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := openDB(t)
	nt, err := db.CreateTenantWith(ctx, "acme", "alice", store.TenantOptions{Dict: 1})
	if err != nil {
		t.Fatal(err)
	}
	owner := ownerOf(t, db)
	for _, n := range []int{1, 3, 16, 17, 40} {
		t.Run(strconv.Itoa(n), func(t *testing.T) {
			conv, err := db.EnsureConversation(ctx, nt.TenantID, nt.UserID, "tokens-"+strconv.Itoa(n), "")
			if err != nil {
				t.Fatal(err)
			}
			var items []store.CaptureItem
			var want []string
			for i := range n {
				it := item("part "+strconv.Itoa(i)+" ", 1)
				// Item i has i%4 tokens; some repeat another item's.
				it.Tokens = nil
				for j := range i % 4 {
					it.Tokens = append(it.Tokens, "t"+strconv.Itoa((i+j)%5)+"-"+strconv.Itoa(j))
				}
				items = append(items, it)
				want = append(want, strings.Join(it.Tokens, " "))
			}
			if _, err := db.Capture(ctx, store.Capture{TenantID: nt.TenantID, UserID: nt.UserID, ConversationID: conv, Role: "user",
				Fingerprint: []byte("fp"), CreatedAt: time.Now(), ClockAdvance: 1, Items: items}); err != nil {
				t.Fatal(err)
			}
			rows, err := owner.Query(ctx, `SELECT array_to_string(tokens, ' ') FROM items
				WHERE tenant_id = $1 AND conversation_id = $2 ORDER BY part`, nt.TenantID, conv)
			if err != nil {
				t.Fatal(err)
			}
			got, err := pgx.CollectRows(rows, pgx.RowTo[string])
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(got, want) {
				t.Fatalf("tokens stored per item:\n got %q\nwant %q", got, want)
			}
		})
	}
}

// TestCaptureCancelledWhileWaiting: a capture whose context ends while it
// waits for the tenant's head. Committed apart (the live question's), it
// leaves nothing, whenever the lock comes free. Sent with its COMMIT (a
// reply's), it is stored or not as the race goes between pgx's cancel
// request (sent as it closes the connection) and the lock coming free,
// and its error says it may be stored. (A killed process sends no cancel:
// TestChainSurvivesKill in memory/ops.)
func TestCaptureCancelledWhileWaiting(t *testing.T) {
	t.Parallel()
	for _, apart := range []bool{false, true} {
		t.Run(fmt.Sprintf("apart=%v", apart), func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			app := "outlives-" + strconv.FormatBool(apart) + "-" + strconv.FormatInt(time.Now().UnixNano(), 36)
			db, err := store.Open(ctx, dbtest.Shared(t)+"&pool_max_conns=1&application_name="+app)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(db.Close)
			nt, conv := aliceIn(t, db, "acme", "c")
			owner := ownerOf(t, db)
			tx, err := owner.Begin(ctx)
			if err != nil {
				t.Fatal(err)
			}
			defer tx.Rollback(ctx) //nolint:errcheck // rolled back below
			if _, err := tx.Exec(ctx, `SELECT 1 FROM tenant_heads WHERE tenant_id = $1 FOR UPDATE`, nt.TenantID); err != nil {
				t.Fatal(err)
			}
			cctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
			_, err = db.Capture(cctx, store.Capture{TenantID: nt.TenantID, UserID: nt.UserID, ConversationID: conv, Role: "assistant",
				Fingerprint: []byte("r"), CreatedAt: time.Now(), ClockAdvance: 1, Items: []store.CaptureItem{item("a reply", 1)}, CommitApart: apart})
			cancel()
			if err == nil {
				t.Fatal("the capture returned while the head was held")
			}
			if unsure := strings.Contains(err.Error(), "may be stored"); unsure == apart {
				t.Fatalf("error %q: says it may be stored %v, committed apart %v", err, unsure, apart)
			}
			if err := tx.Rollback(ctx); err != nil {
				t.Fatal(err)
			}
			// The capture's backend is done once its statement is
			// cancelled, or, the cancel coming late, once the head is
			// free and it committed or found its client gone.
			for deadline := time.Now().Add(10 * time.Second); ; {
				var n int
				if err := owner.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity WHERE application_name = $1 AND state <> 'idle' AND pid <> pg_backend_pid()`, app).Scan(&n); err != nil {
					t.Fatal(err)
				}
				if n == 0 {
					break
				}
				if time.Now().After(deadline) {
					var st, we, q string
					owner.QueryRow(ctx, `SELECT state, coalesce(wait_event_type,'')||':'||coalesce(wait_event,''), query FROM pg_stat_activity WHERE application_name = $1 AND state <> 'idle' AND pid <> pg_backend_pid()`, app).Scan(&st, &we, &q)
					t.Fatalf("%d backends of the capture still busy: %s %s %s", n, st, we, q)
				}
				time.Sleep(20 * time.Millisecond)
			}
			var stored int
			if err := owner.QueryRow(ctx, `SELECT count(*) FROM items WHERE tenant_id = $1`, nt.TenantID).Scan(&stored); err != nil {
				t.Fatal(err)
			}
			if apart && stored != 0 {
				t.Fatalf("%d items stored by the cancelled capture committed apart", stored)
			}
		})
	}
}
