package web

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/alexedwards/argon2id"

	"github.com/perpetuity/perpetuity/memory/store"
	"github.com/perpetuity/perpetuity/migrations/dbtest"
)

func testConsole(t *testing.T) *Console {
	t.Helper()
	ctx := context.Background()
	db, err := store.Open(ctx, dbtest.New(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(db.Close)
	c, err := New(Config{PublicURL: "http://localhost:8080",
		Argon2: &argon2id.Params{Memory: 1024, Iterations: 1, Parallelism: 1, SaltLength: 16, KeyLength: 32}}, db, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// TestAdmitHoldsUnderConcurrency: attempts arriving at once cannot slip
// past the limit between a count and a hit, refusals leave no count, and a
// refund gives one back.
func TestAdmitHoldsUnderConcurrency(t *testing.T) {
	t.Parallel()
	c := testConsole(t)
	ctx := context.Background()
	const limit, tries = 5, 40
	rules := grown(rule{scope: "test:concurrent", limit: limit, window: time.Minute, why: "%s"})
	var mu sync.Mutex
	admitted, refused := 0, 0
	var wg sync.WaitGroup
	for range tries {
		wg.Go(func() {
			no, err := c.admit(ctx, rules)
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err != nil:
				t.Error(err)
			case no == nil:
				admitted++
			default:
				refused++
				if no.retry <= 0 || no.retry > time.Minute {
					t.Errorf("retry %s", no.retry)
				}
			}
		})
	}
	wg.Wait()
	if admitted != limit || refused != tries-limit {
		t.Fatalf("%d admitted, %d refused of %d at once; want %d admitted", admitted, refused, tries, limit)
	}
	count := func() int {
		var n int
		if err := c.db.Pool.QueryRow(ctx, `SELECT count(*) FROM console_throttle WHERE scope = 'test:concurrent'`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	if n := count(); n != limit {
		t.Fatalf("%d attempts counted, want the %d admitted", n, limit)
	}
	if err := c.refund(ctx, "test:concurrent"); err != nil {
		t.Fatal(err)
	}
	if no, err := c.admit(ctx, rules); err != nil || no != nil {
		t.Fatalf("after a refund: %v %v, want admitted", no, err)
	}
	if no, err := c.admit(ctx, rules); err != nil || no == nil {
		t.Fatalf("at the limit again: %v %v, want refused", no, err)
	}
	if err := c.clearThrottle(ctx, "test:concurrent"); err != nil || count() != 0 {
		t.Fatalf("clear: %v, %d left", err, count())
	}
}

// TestGrownTier: a caller who waits out each short window still meets the
// day's limit.
func TestGrownTier(t *testing.T) {
	t.Parallel()
	c := testConsole(t)
	ctx := context.Background()
	rules := grown(rule{scope: "test:grown", limit: 2, window: time.Minute, why: "%s"})
	// Eight attempts spread over the last hour: none in the last minute.
	if _, err := c.db.Pool.Exec(ctx, `INSERT INTO console_throttle (scope, at)
		SELECT 'test:grown', now() - g * interval '5 minutes' FROM generate_series(1, 8) g`); err != nil {
		t.Fatal(err)
	}
	no, err := c.admit(ctx, rules)
	if err != nil || no == nil {
		t.Fatalf("the %dth attempt of the day: %v %v, want refused", 9, no, err)
	}
	if no.retry < 23*time.Hour {
		t.Fatalf("retry %s, want the day's oldest attempt to leave (about 23h15m)", no.retry)
	}
	// What no window looks at any more goes with the next admitted attempt.
	if _, err := c.db.Pool.Exec(ctx, `INSERT INTO console_throttle (scope, at) VALUES ('test:old', now() - interval '25 hours')`); err != nil {
		t.Fatal(err)
	}
	if no, err := c.admit(ctx, []rule{{scope: "test:other", limit: 1, window: time.Minute}}); err != nil || no != nil {
		t.Fatalf("admit: %v %v", no, err)
	}
	var old int
	if err := c.db.Pool.QueryRow(ctx, `SELECT count(*) FROM console_throttle WHERE scope = 'test:old'`).Scan(&old); err != nil || old != 0 {
		t.Fatalf("%d day-old attempts kept (%v)", old, err)
	}
}
