package limits

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/perpetuity/perpetuity/memory/store"
)

var t0 = time.Date(2026, 3, 10, 12, 0, 0, 0, time.UTC)

// TestBucket walks token buckets through takes, charges, refills and limit
// changes at given instants, checking the wait for one token after each.
func TestBucket(t *testing.T) {
	t.Parallel()
	type op struct {
		at        time.Duration // after t0
		limit     int           // > 0: set this limit; -1: unlimited; 0: no change
		take      float64
		wantWait  time.Duration
		wantLevel float64
	}
	tests := []struct {
		name string
		per  int
		ops  []op
	}{
		{"three a minute: the fourth waits a third of a minute", 3, []op{
			{take: 1, wantLevel: 2}, {take: 1, wantLevel: 1}, {take: 1, wantWait: 20 * time.Second, wantLevel: 0},
			{at: 10 * time.Second, wantWait: 10 * time.Second, wantLevel: 0.5},
			{at: 20 * time.Second, wantLevel: 1},
		}},
		{"refill stops at a minute's worth", 60, []op{
			{take: 60, wantWait: time.Second, wantLevel: 0},
			{at: time.Hour, wantLevel: 60},
		}},
		{"a charge past the level is debt, paid back by refill", 600, []op{
			{take: 1200, wantWait: time.Minute + 100*time.Millisecond, wantLevel: -600},
			{at: 30 * time.Second, wantWait: 30*time.Second + 100*time.Millisecond, wantLevel: -300},
			{at: 61 * time.Second, wantLevel: 10},
		}},
		{"a lower limit clips the level, a higher one adds the difference", 60, []op{
			{limit: 30, wantLevel: 30},
			{take: 30, wantWait: 2 * time.Second, wantLevel: 0},
			{limit: 120, wantLevel: 90},
			{take: 90, wantWait: 500 * time.Millisecond, wantLevel: 0},
			{at: time.Minute, wantLevel: 120},
		}},
		{"unlimited never waits and a new limit starts full", 10, []op{
			{take: 10, wantWait: 6 * time.Second, wantLevel: 0},
			{limit: -1, take: 1000},
			{at: time.Second, limit: 5, wantLevel: 5},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var b bucket
			b.configure(t0, tt.per)
			for i, o := range tt.ops {
				now := t0.Add(o.at)
				switch {
				case o.limit > 0:
					b.configure(now, o.limit)
				case o.limit < 0:
					b.configure(now, 0)
				}
				b.take(now, o.take)
				if got := b.wait(now, 1); !near(got, o.wantWait) {
					t.Errorf("op %d: wait %v, want %v", i, got, o.wantWait)
				}
				if b.per != 0 && !nearF(b.level, o.wantLevel) {
					t.Errorf("op %d: level %.3f, want %.3f", i, b.level, o.wantLevel)
				}
			}
		})
	}
}

func near(a, b time.Duration) bool { return a-b < time.Millisecond && b-a < time.Millisecond }
func nearF(a, b float64) bool      { return a-b < 1e-6 && b-a < 1e-6 }

func TestRetryAfter(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		d    time.Duration
		want int64
	}{{0, 1}, {200 * time.Millisecond, 1}, {time.Second, 1}, {20 * time.Second, 20}, {20*time.Second + time.Millisecond, 21}, {11 * time.Hour, 39600}} {
		if got := RetryAfter(tt.d); got != tt.want {
			t.Errorf("RetryAfter(%v) = %d, want %d", tt.d, got, tt.want)
		}
	}
}

// fakeLimits serves tenants' limits and counts the lookups.
type fakeLimits struct {
	mu      sync.Mutex
	l       map[int64]store.Limits
	fail    bool
	lookups int
}

func (f *fakeLimits) TenantLimits(_ context.Context, tenantID int64) (store.Limits, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.lookups++
	if f.fail {
		return store.Limits{}, errors.New("database down")
	}
	l, ok := f.l[tenantID]
	if !ok {
		return l, store.ErrNotFound
	}
	return l, nil
}

func (f *fakeLimits) set(tenantID int64, l store.Limits) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.l[tenantID] = l
}

// clock is a settable time source.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.now }
func (c *clock) advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

func newTestLimiter(src *fakeLimits, def store.Limits) (*Limiter, *clock) {
	c := &clock{now: t0}
	return New(src, def, c.Now, slog.New(slog.NewTextHandler(io.Discard, nil)), func(f func()) { f() }), c
}

// TestLimiter drives the limiter through a script of requests, replies and
// clock steps for keys of two tenants, checking each verdict.
func TestLimiter(t *testing.T) {
	t.Parallel()
	const acme, globex = 1, 2
	keyA1 := store.KeyIdentity{TenantID: acme, KeyID: 11}
	keyA2 := store.KeyIdentity{TenantID: acme, KeyID: 12}
	keyG := store.KeyIdentity{TenantID: globex, KeyID: 21}
	type step struct {
		wait   time.Duration // clock advance before the step
		key    store.KeyIdentity
		charge int // > 0: a reply's tokens instead of a request
		// For requests: refused or not, and then the limit named, the
		// Retry-After and the remaining requests.
		refused   bool
		kind      string
		retry     int64
		remaining int64
	}
	tests := []struct {
		name   string
		limits map[int64]store.Limits
		def    store.Limits
		steps  []step
	}{
		{"requests per minute, per key", map[int64]store.Limits{acme: {RequestsPerMinute: 2}}, store.Limits{}, []step{
			{key: keyA1, remaining: 1}, {key: keyA1, remaining: 0},
			{key: keyA1, refused: true, kind: "requests", retry: 30},
			{key: keyA2, remaining: 1}, // another key of the tenant has its own bucket
			{key: keyG},                // another tenant has no limits
			{wait: 29 * time.Second, key: keyA1, refused: true, kind: "requests", retry: 1},
			{wait: time.Second, key: keyA1, remaining: 0},
		}},
		{"tokens per minute: debt refuses until refill pays it", map[int64]store.Limits{acme: {TokensPerMinute: 600}}, store.Limits{}, []step{
			{key: keyA1}, {key: keyA1}, // two in flight
			{key: keyA1, charge: 500}, {key: keyA1, charge: 400}, // together past the limit: 300 in debt
			{key: keyA1, refused: true, kind: "tokens", retry: 31}, // (300+1)/600 of a minute
			{key: keyA2},
			{wait: 31 * time.Second, key: keyA1},
		}},
		{"tokens per day until UTC midnight", map[int64]store.Limits{acme: {TokensPerDay: 1000}}, store.Limits{}, []step{
			{key: keyA1}, {key: keyA1, charge: 999}, {key: keyA1},
			{key: keyA1, charge: 1},
			{key: keyA1, refused: true, kind: "tokens", retry: 12 * 3600},
			{wait: 12*time.Hour - time.Second, key: keyA1, refused: true, kind: "tokens", retry: 1},
			{wait: time.Second, key: keyA1},
		}},
		{"the longest wait answers", map[int64]store.Limits{acme: {RequestsPerMinute: 1, TokensPerMinute: 60}}, store.Limits{}, []step{
			{key: keyA1, remaining: 0}, {key: keyA1, charge: 120},
			// requests: 60 s; tokens: (60+1)/60 of a minute.
			{key: keyA1, refused: true, kind: "tokens", retry: 61, remaining: 0},
		}},
		{"defaults for tenants without their own", map[int64]store.Limits{globex: {}}, store.Limits{RequestsPerMinute: 1}, []step{
			{key: keyA1, remaining: 0}, {key: keyA1, refused: true, kind: "requests", retry: 60},
			{key: keyG}, {key: keyG}, {key: keyG}, // its own row says unlimited
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			lm, c := newTestLimiter(&fakeLimits{l: tt.limits}, tt.def)
			ctx := context.Background()
			for i, s := range tt.steps {
				c.advance(s.wait)
				if s.charge > 0 {
					lm.Charge(s.key.KeyID, s.charge)
					continue
				}
				v := lm.Admit(ctx, s.key)
				if (v.Refused != nil) != s.refused {
					t.Fatalf("step %d: refused %+v, want refused=%v", i, v.Refused, s.refused)
				}
				if s.refused {
					if v.Refused.Kind != s.kind || RetryAfter(v.Refused.Retry) != s.retry {
						t.Fatalf("step %d: refused on %s after %ds, want %s after %ds", i, v.Refused.Kind, RetryAfter(v.Refused.Retry), s.kind, s.retry)
					}
				}
				if v.requests != nil && v.requests.remaining != s.remaining {
					t.Fatalf("step %d: %d requests remaining, want %d", i, v.requests.remaining, s.remaining)
				}
			}
		})
	}
}

// TestLimiterFollowsChanges checks the limits cache: a change is seen once
// the entry expires, not before, and a failed read keeps the last limits.
func TestLimiterFollowsChanges(t *testing.T) {
	t.Parallel()
	src := &fakeLimits{l: map[int64]store.Limits{1: {RequestsPerMinute: 1}}}
	lm, c := newTestLimiter(src, store.Limits{})
	ctx := context.Background()
	k := store.KeyIdentity{TenantID: 1, KeyID: 5}
	if v := lm.Admit(ctx, k); v.Refused != nil {
		t.Fatal("first request refused")
	}
	if v := lm.Admit(ctx, k); v.Refused == nil {
		t.Fatal("second request within the minute admitted at 1 rpm")
	}
	src.set(1, store.Limits{RequestsPerMinute: 100})
	c.advance(limitsCacheTTL / 4) // young enough that no refresh starts (proxy/fresh)
	if v := lm.Admit(ctx, k); v.Refused == nil {
		t.Fatal("a raised limit took effect before the cache entry expired")
	}
	c.advance(limitsCacheTTL)
	v := lm.Admit(ctx, k)
	if v.Refused != nil {
		t.Fatalf("a raised limit did not take effect after the cache TTL: %+v", v.Refused)
	}
	if src.lookups != 2 {
		t.Fatalf("%d lookups, want 2 (one per cache period)", src.lookups)
	}
	// The raise adds its difference; what the minute used still counts.
	if v.requests.remaining != 98 {
		t.Fatalf("%d requests remaining right after raising the limit from 1 to 100, want 98", v.requests.remaining)
	}
	src.mu.Lock()
	src.fail = true
	src.mu.Unlock()
	c.advance(time.Minute)
	for i := 0; i < 100; i++ {
		if v := lm.Admit(ctx, k); v.Refused != nil {
			t.Fatalf("request %d refused while the source is down: %+v", i, v.Refused)
		}
	}
	if v := lm.Admit(ctx, k); v.Refused == nil {
		t.Fatal("the last known limit was dropped when the source failed")
	}
}

// TestLimiterSweep checks that keys whose state is as good as fresh are
// forgotten once many are followed, and keys with state are not.
func TestLimiterSweep(t *testing.T) {
	t.Parallel()
	src := &fakeLimits{l: map[int64]store.Limits{1: {RequestsPerMinute: 5, TokensPerDay: 100}}}
	lm, c := newTestLimiter(src, store.Limits{})
	ctx := context.Background()
	for id := int64(1); id <= keyStatesSweepAt; id++ {
		lm.Admit(ctx, store.KeyIdentity{TenantID: 1, KeyID: id})
	}
	lm.Charge(1, 50) // key 1 used tokens today
	c.advance(time.Hour)
	lm.Admit(ctx, store.KeyIdentity{TenantID: 1, KeyID: keyStatesSweepAt + 1})
	if len(lm.keys) != 2 {
		t.Fatalf("%d keys followed after the sweep, want 2 (the one with today's tokens, the new one)", len(lm.keys))
	}
	if lm.keys[1] == nil || lm.keys[1].dayUsed != 50 {
		t.Fatal("the sweep forgot a key's tokens of today")
	}
}

// TestLimiterUnlimited checks that keys without limits cost no state.
func TestLimiterUnlimited(t *testing.T) {
	t.Parallel()
	lm, _ := newTestLimiter(&fakeLimits{l: map[int64]store.Limits{}}, store.Limits{})
	for i := 0; i < 1000; i++ {
		if v := lm.Admit(context.Background(), store.KeyIdentity{TenantID: 1, KeyID: int64(i)}); v.Refused != nil {
			t.Fatal("refused without limits")
		}
		lm.Charge(int64(i), 1_000_000)
	}
	if len(lm.keys) != 0 {
		t.Fatalf("%d keys followed without any limit", len(lm.keys))
	}
}
