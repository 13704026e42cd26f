package limits

import (
	"context"
	"errors"
	"log/slog"
	"math"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/perpetuity/perpetuity/memory/store"
	"github.com/perpetuity/perpetuity/proxy/dialect"
	"github.com/perpetuity/perpetuity/proxy/fresh"
)

// Source reads a tenant's own per-key limits; store.ErrNotFound means it
// has none and the defaults apply. *store.DB is one.
type Source interface {
	TenantLimits(ctx context.Context, tenantID int64) (store.Limits, error)
}

// limitsCacheTTL is how long a tenant's limits are trusted without asking
// the database again: the longest a changed limit waits to take effect.
const limitsCacheTTL = 2 * time.Second

// limitsCacheMax bounds the tenant cache; past it the cache starts over.
const limitsCacheMax = 10_000

// keyStatesSweepAt is the number of keys followed past which keys whose
// state is as good as fresh are forgotten (at most once per sweepEvery).
const (
	keyStatesSweepAt = 10_000
	sweepEvery       = time.Minute
)

// bucket is a token bucket holding up to per and refilled at per a minute.
// Its level may go below zero (tokens charged after the fact: debt).
type bucket struct {
	per   float64 // capacity and refill per minute; 0 = unlimited
	level float64
	at    time.Time // when level was last brought up to date
}

// configure sets the limit. A bucket that was unlimited starts full; a
// lower limit clips the level; a higher one adds the difference, so what
// the last minute used still counts but a raise helps at once.
func (b *bucket) configure(now time.Time, per int) {
	p := float64(per)
	if p == b.per {
		return
	}
	switch {
	case b.per == 0:
		b.level = p
	case p == 0:
	case p < b.per:
		b.refill(now)
		b.level = math.Min(b.level, p)
	default:
		b.refill(now)
		b.level += p - b.per
	}
	b.per, b.at = p, now
}

func (b *bucket) refill(now time.Time) {
	if b.per == 0 {
		return
	}
	if d := now.Sub(b.at); d > 0 {
		b.level = math.Min(b.per, b.level+b.per*d.Minutes())
		b.at = now
	}
}

// wait is how long until the bucket holds n; 0 when it does now or when it
// is unlimited.
func (b *bucket) wait(now time.Time, n float64) time.Duration {
	if b.per == 0 {
		return 0
	}
	b.refill(now)
	if b.level >= n {
		return 0
	}
	return time.Duration((n - b.level) / b.per * float64(time.Minute))
}

// take removes n (the caller checked wait first); charge may go into debt.
func (b *bucket) take(now time.Time, n float64) {
	if b.per == 0 {
		return
	}
	b.refill(now)
	b.level -= n
}

// full reports whether the bucket is as a fresh one would be.
func (b *bucket) full(now time.Time) bool {
	b.refill(now)
	return b.per == 0 || b.level >= b.per
}

// keyState is one key's counters.
type keyState struct {
	req, tok bucket
	day      int64 // the UTC day dayUsed counts, in days since 1970
	dayUsed  int64
}

func utcDay(t time.Time) int64 { return t.Unix() / 86400 }

func (k *keyState) rollDay(now time.Time) {
	if d := utcDay(now); d != k.day {
		k.day, k.dayUsed = d, 0
	}
}

// Limiter holds every key's counters and the tenants' limits.
type Limiter struct {
	src Source
	def store.Limits
	now func() time.Time
	log *slog.Logger
	// tenants caches each tenant's limits, read again in the background
	// before they expire (proxy/fresh), so no request waits for that read.
	tenants *fresh.Cache[int64, store.Limits]

	mu        sync.Mutex
	keys      map[int64]*keyState
	lastSweep time.Time
}

// New is a limiter reading tenants' limits from src (nil: every tenant has
// def), on the clock now; spawn runs the background reads of the limits
// (nil: plain goroutines).
func New(src Source, def store.Limits, now func() time.Time, log *slog.Logger, spawn func(func())) *Limiter {
	return &Limiter{src: src, def: def, now: now, log: log,
		tenants: fresh.New[int64, store.Limits](limitsCacheTTL, limitsCacheMax, now, spawn), keys: map[int64]*keyState{}}
}

// SetCacheTTL sets how long a tenant's limits are trusted without asking
// again (limitsCacheTTL by default), for a test that changes a limit and
// cannot wait the default out.
func (lm *Limiter) SetCacheTTL(d time.Duration) { lm.tenants.SetTTL(d) }

// limits are the tenant's own, the defaults when it has none, and the last
// known when they cannot be read (a database restart must not lift them).
func (lm *Limiter) limits(ctx context.Context, tenantID int64) store.Limits {
	if lm.src == nil {
		return lm.def
	}
	l, _ := lm.tenants.Get(ctx, tenantID, func(ctx context.Context) (store.Limits, error) {
		l, err := lm.src.TenantLimits(ctx, tenantID)
		switch {
		case errors.Is(err, store.ErrNotFound):
			return lm.def, nil
		case err != nil:
			lm.log.Warn("tenant limits could not be read; keeping the last known", "tenant", tenantID, "err", err)
			if last, ok := lm.tenants.Peek(tenantID); ok {
				return last, nil
			}
			return lm.def, nil
		}
		return l, nil
	})
	return l
}

// Refusal is why a request was not admitted, and what the caller is told.
type Refusal struct {
	What  string // e.g. "requests per minute (RPM)"
	Kind  string // OpenAI's error type: requests or tokens
	Limit int64
	Retry time.Duration
}

// quota is the state of one limit that is set, for the response headers.
type quota struct {
	limit, remaining int64
}

// Verdict is the outcome of Admit.
type Verdict struct {
	Refused          *Refusal
	requests, tokens *quota // nil where unlimited
}

// Admit decides whether the key may make a request now, and takes a
// request token when it may.
func (lm *Limiter) Admit(ctx context.Context, k store.KeyIdentity) Verdict {
	l := k.Limits.Over(lm.limits(ctx, k.TenantID))
	if l.RequestsPerMinute == 0 && l.TokensPerMinute == 0 && l.TokensPerDay == 0 {
		return Verdict{}
	}
	now := lm.now()
	lm.mu.Lock()
	defer lm.mu.Unlock()
	ks := lm.stateLocked(now, k.KeyID, l)

	var v Verdict
	// The longest wait is the Retry-After; the limit named is the first
	// refusing one in this order, which is also the order of their waits'
	// usual length.
	v.Refused = tokenRefusal(now, ks, l)
	if w := ks.req.wait(now, 1); w > 0 {
		r := &Refusal{What: "requests per minute (RPM)", Kind: "requests", Limit: int64(l.RequestsPerMinute), Retry: w}
		v.Refused = longer(v.Refused, r)
	}
	if v.Refused == nil {
		ks.req.take(now, 1)
	}
	if l.RequestsPerMinute > 0 {
		v.requests = &quota{limit: int64(l.RequestsPerMinute), remaining: int64(math.Max(0, math.Floor(ks.req.level)))}
	}
	if l.TokensPerMinute > 0 {
		v.tokens = &quota{limit: int64(l.TokensPerMinute), remaining: int64(math.Max(0, math.Floor(ks.tok.level)))}
	}
	return v
}

// stateLocked is the key's counters under the tenant's current limits,
// made on first sight.
func (lm *Limiter) stateLocked(now time.Time, keyID int64, l store.Limits) *keyState {
	ks := lm.keys[keyID]
	if ks == nil {
		lm.sweepLocked(now)
		ks = &keyState{}
		lm.keys[keyID] = ks
	}
	ks.req.configure(now, l.RequestsPerMinute)
	ks.tok.configure(now, l.TokensPerMinute)
	ks.rollDay(now)
	return ks
}

// tokenRefusal is why the key may spend no tokens now (its day's budget
// used up, its minute bucket empty or in debt), or nil.
func tokenRefusal(now time.Time, ks *keyState, l store.Limits) *Refusal {
	var r *Refusal
	if l.TokensPerDay > 0 && ks.dayUsed >= l.TokensPerDay {
		midnight := time.Unix((ks.day+1)*86400, 0)
		r = &Refusal{What: "tokens per day (TPD)", Kind: "tokens", Limit: l.TokensPerDay, Retry: midnight.Sub(now)}
	}
	if w := ks.tok.wait(now, 1); w > 0 {
		r = longer(r, &Refusal{What: "tokens per minute (TPM)", Kind: "tokens", Limit: int64(l.TokensPerMinute), Retry: w})
	}
	return r
}

// longer keeps the first refusal's name and the longer wait of the two.
func longer(first, next *Refusal) *Refusal {
	if first == nil {
		return next
	}
	if next.Retry > first.Retry {
		r := *first
		r.Retry = next.Retry
		return &r
	}
	return first
}

// Charge counts the provider tokens a key's reply used. A key with no
// limits when it was admitted is not followed.
func (lm *Limiter) Charge(keyID int64, tokens int) {
	if tokens <= 0 {
		return
	}
	now := lm.now()
	lm.mu.Lock()
	defer lm.mu.Unlock()
	ks := lm.keys[keyID]
	if ks == nil {
		return
	}
	ks.tok.take(now, float64(tokens))
	ks.rollDay(now)
	ks.dayUsed += int64(tokens)
}

// sweepLocked forgets keys whose state is as good as fresh, once the map
// is large, so a long-running process does not follow every key it ever
// saw.
func (lm *Limiter) sweepLocked(now time.Time) {
	if len(lm.keys) < keyStatesSweepAt || now.Sub(lm.lastSweep) < sweepEvery {
		return
	}
	lm.lastSweep = now
	today := utcDay(now)
	for id, ks := range lm.keys {
		if ks.req.full(now) && ks.tok.full(now) && (ks.day != today || ks.dayUsed == 0) {
			delete(lm.keys, id)
		}
	}
}

// RetryAfter is a wait as Retry-After's whole seconds, at least 1.
func RetryAfter(d time.Duration) int64 {
	return max(1, int64(math.Ceil(d.Seconds())))
}

// SetHeaders writes the dialect's rate-limit headers for the limits that
// are set (OpenAI x-ratelimit-*, Anthropic anthropic-ratelimit-*).
func (v Verdict) SetHeaders(h http.Header, d dialect.Dialect) {
	for _, q := range []struct {
		name string
		q    *quota
	}{{"requests", v.requests}, {"tokens", v.tokens}} {
		if q.q == nil {
			continue
		}
		limit, remaining := strconv.FormatInt(q.q.limit, 10), strconv.FormatInt(q.q.remaining, 10)
		if d == dialect.AnthropicMessages {
			h.Set("anthropic-ratelimit-"+q.name+"-limit", limit)
			h.Set("anthropic-ratelimit-"+q.name+"-remaining", remaining)
			continue
		}
		h.Set("x-ratelimit-limit-"+q.name, limit)
		h.Set("x-ratelimit-remaining-"+q.name, remaining)
	}
}
