package store_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/perpetuity/perpetuity/memory/store"
)

// statsScene is a tenant on v1 with two users and a conversation each.
type statsScene struct {
	db     *store.DB
	tenant int64
	users  [2]int64
	convs  [2]int64
	n      int
}

func newStatsScene(t *testing.T, db *store.DB) *statsScene {
	t.Helper()
	ctx := context.Background()
	nt, err := db.CreateTenantWith(ctx, "acme", "alice", store.TenantOptions{Dict: 1})
	if err != nil {
		t.Fatal(err)
	}
	s := &statsScene{db: db, tenant: nt.TenantID}
	s.users[0] = nt.UserID
	if s.users[1], err = db.EnsureUser(ctx, nt.TenantID, "bob"); err != nil {
		t.Fatal(err)
	}
	for i, u := range s.users {
		if s.convs[i], err = db.EnsureConversation(ctx, nt.TenantID, u, fmt.Sprintf("c%d", i), ""); err != nil {
			t.Fatal(err)
		}
	}
	return s
}

// capture stores a two-part message of user u whose terms overlap the
// other messages', with rows of the given versions.
func (s *statsScene) capture(t *testing.T, u int, versions ...int) {
	t.Helper()
	s.n++
	items := []store.CaptureItem{item("a", 1, int32(s.n%5+2)), item("b", 1, int32(s.n%3+10), 40)}
	for i := range items {
		row := items[i].Rows[0]
		items[i].Rows = nil
		for _, v := range versions {
			row.DictVersion = v
			items[i].Rows = append(items[i].Rows, row)
		}
	}
	if _, err := s.db.Capture(context.Background(), store.Capture{TenantID: s.tenant, UserID: s.users[u], ConversationID: s.convs[u],
		Role: "user", Position: s.n, Fingerprint: fmt.Appendf(nil, "m%d", s.n), CreatedAt: time.Now(), ClockAdvance: 1,
		Items: items}); err != nil {
		t.Fatal(err)
	}
}

func (s *statsScene) fold(t *testing.T) int {
	t.Helper()
	n, err := s.db.FoldStats(context.Background(), s.tenant)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// TestFoldAndPurgeKeepCounts: the counts (the tables plus the rows not
// folded) equal a recount whether rows are folded or not, through a fold
// and a purge of a user with counts on both sides; the purge takes the
// user's pending rows along and leaves the other user's.
func TestFoldAndPurgeKeepCounts(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := openDB(t)
	owner := ownerOf(t, db)
	s := newStatsScene(t, db)
	pending := func(u int) int64 {
		t.Helper()
		var n int64
		if err := owner.QueryRow(ctx, `SELECT count(*) FROM stat_deltas d JOIN messages m ON m.tenant_id = d.tenant_id AND m.id = d.message_id
			WHERE d.tenant_id = $1 AND m.user_id = $2`, s.tenant, s.users[u]).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	for i := range 5 {
		s.capture(t, i%2, 1)
	}
	if n := statsDrift(t, owner, s.tenant); n != 0 {
		t.Fatalf("%d counts differ from a recount before a fold", n)
	}
	if n := s.fold(t); n != 5 {
		t.Fatalf("the fold moved %d rows, want 5", n)
	}
	for i := range 4 {
		s.capture(t, i%2, 1)
	}
	if n := statsDrift(t, owner, s.tenant); n != 0 {
		t.Fatalf("%d counts differ from a recount after a fold", n)
	}
	if pending(0) != 2 || pending(1) != 2 {
		t.Fatalf("pending rows %d and %d, want 2 each", pending(0), pending(1))
	}
	if _, err := db.PurgeUser(ctx, s.tenant, s.users[0], tester); err != nil {
		t.Fatal(err)
	}
	if n := statsDrift(t, owner, s.tenant); n != 0 {
		t.Fatalf("%d counts differ from a recount after the purge", n)
	}
	if pending(0) != 0 || pending(1) != 2 {
		t.Fatalf("after the purge: pending rows %d and %d, want 0 and 2", pending(0), pending(1))
	}
}

// TestConcurrentFoldsCountOnce: folds running beside each other and beside
// captures move every row exactly once.
func TestConcurrentFoldsCountOnce(t *testing.T) {
	t.Parallel()
	db := openDB(t)
	owner := ownerOf(t, db)
	s := newStatsScene(t, db)
	var wg sync.WaitGroup
	done := make(chan struct{})
	errs := make(chan error, 2)
	for range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-done:
					return
				default:
				}
				if _, err := db.FoldStats(context.Background(), s.tenant); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	for i := range 30 {
		s.capture(t, i%2, 1)
	}
	close(done)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	s.fold(t)
	if n := statsDrift(t, owner, s.tenant); n != 0 {
		t.Fatalf("%d counts differ from a recount", n)
	}
	var pending int64
	if err := owner.QueryRow(context.Background(), `SELECT count(*) FROM stat_deltas WHERE tenant_id = $1`, s.tenant).Scan(&pending); err != nil || pending != 0 {
		t.Fatalf("%d rows left after the last fold (%v)", pending, err)
	}
}

// TestRetireDropsPendingCounts: retiring a version drops its counts that
// were not folded yet with the rest, and leaves the active version's.
func TestRetireDropsPendingCounts(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := openDB(t)
	loadBuiltin(t, db, 2)
	owner := ownerOf(t, db)
	s := newStatsScene(t, db)
	if _, err := db.StartDerive(ctx, s.tenant, 2, tester); err != nil {
		t.Fatal(err)
	}
	s.capture(t, 0, 1, 2)
	s.fold(t)
	s.capture(t, 1, 1, 2)
	if _, err := db.Retire(ctx, s.tenant, 2, tester); err != nil {
		t.Fatal(err)
	}
	var v2, v1 int64
	if err := owner.QueryRow(ctx, `SELECT (SELECT count(*) FROM stat_deltas WHERE tenant_id = $1 AND dict_version = 2)
		+ (SELECT count(*) FROM term_stats WHERE tenant_id = $1 AND dict_version = 2)
		+ (SELECT count(*) FROM corpus_stats WHERE tenant_id = $1 AND dict_version = 2),
		(SELECT count(*) FROM stat_deltas WHERE tenant_id = $1 AND dict_version = 1)`, s.tenant).Scan(&v2, &v1); err != nil {
		t.Fatal(err)
	}
	if v2 != 0 || v1 != 1 {
		t.Fatalf("after retiring v2: %d counts of v2, %d pending rows of v1; want 0 and 1", v2, v1)
	}
	if n := statsDrift(t, owner, s.tenant); n != 0 {
		t.Fatalf("%d counts differ from a recount", n)
	}
}
