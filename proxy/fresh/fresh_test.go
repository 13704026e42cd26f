package fresh

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// clock is a settable clock: nanoseconds after a fixed start.
type clock struct{ ns atomic.Int64 }

func (c *clock) now() time.Time          { return time.Unix(1e9, c.ns.Load()) }
func (c *clock) advance(d time.Duration) { c.ns.Add(int64(d)) }

// source counts reads and answers its current value or error.
type source struct {
	reads int
	v     int
	err   error
}

func (s *source) load(context.Context) (int, error) { s.reads++; return s.v, s.err }

func TestCache(t *testing.T) {
	t.Parallel()
	errDown := errors.New("down")
	const ttl = 2 * time.Second
	type step struct {
		advance time.Duration
		v       int   // the source's value from this step on
		err     error // the source's error from this step on
		want    int
		wantErr error
		reads   int // the source's reads so far
	}
	cases := []struct {
		name  string
		steps []step
	}{
		{"a value younger than half the TTL is served without a read", []step{
			{v: 1, want: 1, reads: 1},
			{advance: 900 * time.Millisecond, v: 2, want: 1, reads: 1},
		}},
		{"past half the TTL a hit is served and starts one refresh", []step{
			{v: 1, want: 1, reads: 1},
			{advance: 1100 * time.Millisecond, v: 2, want: 1, reads: 2},
			{want: 2, reads: 2},
			{advance: 900 * time.Millisecond, want: 2, reads: 2},
		}},
		{"nothing older than the TTL is served", []step{
			{v: 1, want: 1, reads: 1},
			{advance: ttl, v: 2, want: 2, reads: 2},
		}},
		{"a failed read is not cached", []step{
			{err: errDown, wantErr: errDown, reads: 1},
			{v: 3, want: 3, reads: 2},
			{want: 3, reads: 2},
		}},
		{"a failed refresh drops the value: the next request reads the answer itself", []step{
			{v: 1, want: 1, reads: 1},
			{advance: 1500 * time.Millisecond, err: errDown, want: 1, reads: 2},
			{wantErr: errDown, reads: 3},
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			clk := &clock{}
			// Refreshes run at once, so each step sees their effect.
			c := New[string, int](ttl, 10, clk.now, func(f func()) { f() })
			src := &source{}
			for i, s := range tc.steps {
				clk.advance(s.advance)
				if s.v != 0 || s.err != nil {
					src.v, src.err = s.v, s.err
				}
				got, err := c.Get(context.Background(), "k", src.load)
				if !errors.Is(err, s.wantErr) || (err == nil && got != s.want) {
					t.Fatalf("step %d: got %d, %v; want %d, %v", i, got, err, s.want, s.wantErr)
				}
				if src.reads != s.reads {
					t.Fatalf("step %d: %d reads, want %d", i, src.reads, s.reads)
				}
			}
		})
	}
}

// TestForgetDuringRead: a value read before a Forget (a key the console
// revoked meanwhile) must not be stored over the change.
func TestForgetDuringRead(t *testing.T) {
	t.Parallel()
	clk := &clock{}
	c := New[string, int](2*time.Second, 10, clk.now, nil)
	reads := 0
	load := func(context.Context) (int, error) {
		reads++
		if reads == 1 {
			c.Forget(func(int) bool { return true }) // the revoke lands mid-read
		}
		return 7, nil
	}
	if v, err := c.Get(context.Background(), "k", load); err != nil || v != 7 {
		t.Fatalf("first read: %d %v", v, err)
	}
	if _, ok := c.Peek("k"); ok {
		t.Fatal("a read begun before Forget was stored")
	}
	if _, err := c.Get(context.Background(), "k", load); err != nil || reads != 2 {
		t.Fatalf("the next request must read again: %d reads, %v", reads, err)
	}
	if _, ok := c.Peek("k"); !ok {
		t.Fatal("a read after Forget was not stored")
	}
	c.Forget(func(v int) bool { return v == 7 })
	if _, ok := c.Peek("k"); ok {
		t.Fatal("Forget kept a matching entry")
	}
}

// TestRefreshOnce: concurrent hits past half the TTL start one refresh.
func TestRefreshOnce(t *testing.T) {
	t.Parallel()
	clk := &clock{}
	var spawned []func()
	var mu sync.Mutex
	c := New[string, int](2*time.Second, 10, clk.now, func(f func()) { mu.Lock(); spawned = append(spawned, f); mu.Unlock() })
	src := &source{v: 1}
	if _, err := c.Get(context.Background(), "k", src.load); err != nil {
		t.Fatal(err)
	}
	clk.advance(1500 * time.Millisecond)
	var wg sync.WaitGroup
	for i := 0; i < 8; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if v, err := c.Get(context.Background(), "k", func(context.Context) (int, error) { return 2, nil }); err != nil || v != 1 {
				t.Errorf("hit: %d %v", v, err)
			}
		}()
	}
	wg.Wait()
	if len(spawned) != 1 {
		t.Fatalf("%d refreshes started, want 1", len(spawned))
	}
	spawned[0]()
	if v, _ := c.Peek("k"); v != 2 {
		t.Fatalf("after the refresh the cache holds %d, want 2", v)
	}
}

func TestMax(t *testing.T) {
	t.Parallel()
	clk := &clock{}
	c := New[int, int](time.Second, 3, clk.now, nil)
	for k := 0; k < 4; k++ {
		if _, err := c.Get(context.Background(), k, func(context.Context) (int, error) { return k, nil }); err != nil {
			t.Fatal(err)
		}
	}
	if _, ok := c.Peek(0); ok {
		t.Fatal("past max the cache must start over")
	}
	if v, ok := c.Peek(3); !ok || v != 3 {
		t.Fatal("the entry that started it over is kept")
	}
}

// TestRefreshPanics: a background read that panics (its spawner recovers)
// is a failed one: the entry goes, and the next request reads afresh,
// rather than the entry never being refreshed again until its TTL ran out.
func TestRefreshPanics(t *testing.T) {
	t.Parallel()
	clk := &clock{}
	var spawned []func()
	c := New[string, int](2*time.Second, 10, clk.now, func(f func()) { spawned = append(spawned, f) })
	src := &source{v: 1}
	if _, err := c.Get(context.Background(), "k", src.load); err != nil {
		t.Fatal(err)
	}
	clk.advance(1500 * time.Millisecond)
	boom := func(context.Context) (int, error) { panic("read failed badly") }
	if v, err := c.Get(context.Background(), "k", boom); err != nil || v != 1 || len(spawned) != 1 {
		t.Fatalf("hit: %d %v, %d refreshes", v, err, len(spawned))
	}
	func() {
		defer func() {
			if recover() == nil {
				t.Error("the refresh's panic did not reach its spawner")
			}
		}()
		spawned[0]()
	}()
	if _, ok := c.Peek("k"); ok {
		t.Fatal("the entry whose refresh panicked is still cached")
	}
	src.v = 3
	if v, err := c.Get(context.Background(), "k", src.load); err != nil || v != 3 {
		t.Fatalf("after the panic: %d %v, want a fresh read", v, err)
	}
}
