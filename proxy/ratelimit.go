package proxy

// Per-key request and token limits (issue 9, item 12).
//
// Behaviour:
//   - The limits are set per tenant (store.Limits, `perpetuity tenant
//     limits`) and apply to each of the tenant's keys on its own; a tenant
//     without limits of its own gets Config.KeyRPM and Config.KeyTPM. 0 is
//     unlimited. A tenant's limits are read through a cache that trusts an
//     entry for limitsCacheTTL, so a change takes effect within seconds.
//   - Counting is in-process: with N replicas behind a balancer a key may
//     get up to N times its limits. No database write per request.
//   - Requests per minute and tokens per minute are token buckets holding
//     one minute's worth and refilled continuously. A request takes one
//     request token when it is admitted. Provider tokens (input + output as
//     the provider reports them; estimated from the bytes, 4 to a token,
//     when it reports none) are charged when the reply ends, so requests
//     already running can take a key past its token limit: the bucket then
//     goes into debt, and the key is refused until refill pays it back.
//   - Tokens per day are counted per key per UTC day, in-process, and reset
//     at UTC midnight (and when the process restarts).
//   - A refusal comes after key resolution and before the request is
//     parsed, stored or forwarded: status 429, Retry-After in whole
//     seconds (at least 1), the caller's dialect's rate-limit error and the
//     dialect's rate-limit headers for the limits that are set. Every
//     request on a key counts, pass-through routes (/v1/models, ...) and
//     Perpetuity's own import route included (importlimits.go).
//   - When the limits cannot be read, the last ones read are kept (the
//     defaults if none were): limiting protects budgets, it is not an
//     access control, and a database outage has its own answer downstream.

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/perpetuity/perpetuity/memory/store"
	"github.com/perpetuity/perpetuity/proxy/dialect"
)

// LimitSource reads a tenant's own per-key limits; store.ErrNotFound means
// it has none and the defaults apply. *store.DB is one.
type LimitSource interface {
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

// limiter holds every key's counters and the tenants' limits.
type limiter struct {
	src LimitSource
	def store.Limits
	ttl time.Duration
	now func() time.Time
	log *slog.Logger

	mu        sync.Mutex
	tenants   map[int64]cachedLimits
	keys      map[int64]*keyState
	lastSweep time.Time
}

type cachedLimits struct {
	l       store.Limits
	expires time.Time
}

func newLimiter(src LimitSource, def store.Limits, now func() time.Time, log *slog.Logger) *limiter {
	return &limiter{src: src, def: def, ttl: limitsCacheTTL, now: now, log: log,
		tenants: map[int64]cachedLimits{}, keys: map[int64]*keyState{}}
}

// limits is the tenant's limits, from the cache while it is fresh.
func (lm *limiter) limits(ctx context.Context, tenantID int64) store.Limits {
	if lm.src == nil {
		return lm.def
	}
	now := lm.now()
	lm.mu.Lock()
	e, ok := lm.tenants[tenantID]
	lm.mu.Unlock()
	if ok && now.Before(e.expires) {
		return e.l
	}
	l, err := lm.src.TenantLimits(ctx, tenantID)
	switch {
	case errors.Is(err, store.ErrNotFound):
		l = lm.def
	case err != nil:
		if ok {
			l = e.l
		} else {
			l = lm.def
		}
		lm.log.Warn("tenant limits could not be read; keeping the last known", "tenant", tenantID, "err", err)
	}
	lm.mu.Lock()
	if len(lm.tenants) >= limitsCacheMax {
		lm.tenants = map[int64]cachedLimits{}
	}
	lm.tenants[tenantID] = cachedLimits{l: l, expires: now.Add(lm.ttl)}
	lm.mu.Unlock()
	return l
}

// refusal is why a request was not admitted, and what the caller is told.
type refusal struct {
	what  string // e.g. "requests per minute (RPM)"
	kind  string // OpenAI's error type: requests or tokens
	limit int64
	retry time.Duration
}

// quota is the state of one limit that is set, for the response headers.
type quota struct {
	limit, remaining int64
}

// verdict is the outcome of admit.
type verdict struct {
	refused          *refusal
	requests, tokens *quota // nil where unlimited
}

// admit decides whether the key may make a request now, and takes a
// request token when it may.
func (lm *limiter) admit(ctx context.Context, k store.KeyIdentity) verdict {
	l := lm.limits(ctx, k.TenantID)
	if l.RequestsPerMinute == 0 && l.TokensPerMinute == 0 && l.TokensPerDay == 0 {
		return verdict{}
	}
	now := lm.now()
	lm.mu.Lock()
	defer lm.mu.Unlock()
	ks := lm.stateLocked(now, k.KeyID, l)

	var v verdict
	// The longest wait is the Retry-After; the limit named is the first
	// refusing one in this order, which is also the order of their waits'
	// usual length.
	v.refused = tokenRefusal(now, ks, l)
	if w := ks.req.wait(now, 1); w > 0 {
		r := &refusal{what: "requests per minute (RPM)", kind: "requests", limit: int64(l.RequestsPerMinute), retry: w}
		v.refused = longer(v.refused, r)
	}
	if v.refused == nil {
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
func (lm *limiter) stateLocked(now time.Time, keyID int64, l store.Limits) *keyState {
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
func tokenRefusal(now time.Time, ks *keyState, l store.Limits) *refusal {
	var r *refusal
	if l.TokensPerDay > 0 && ks.dayUsed >= l.TokensPerDay {
		midnight := time.Unix((ks.day+1)*86400, 0)
		r = &refusal{what: "tokens per day (TPD)", kind: "tokens", limit: l.TokensPerDay, retry: midnight.Sub(now)}
	}
	if w := ks.tok.wait(now, 1); w > 0 {
		r = longer(r, &refusal{what: "tokens per minute (TPM)", kind: "tokens", limit: int64(l.TokensPerMinute), retry: w})
	}
	return r
}

// longer keeps the first refusal's name and the longer wait of the two.
func longer(first, next *refusal) *refusal {
	if first == nil {
		return next
	}
	if next.retry > first.retry {
		r := *first
		r.retry = next.retry
		return &r
	}
	return first
}

// charge counts the provider tokens a key's reply used. A key with no
// limits when it was admitted is not followed.
func (lm *limiter) charge(keyID int64, tokens int) {
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
func (lm *limiter) sweepLocked(now time.Time) {
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

// retryAfter is a wait as Retry-After's whole seconds, at least 1.
func retryAfter(d time.Duration) int64 {
	return max(1, int64(math.Ceil(d.Seconds())))
}

// admit is the proxy's limit check for a resolved key: nil, or the 429 in
// the caller's dialect. The rate-limit headers go on the refusal.
func (p *Proxy) admit(c echo.Context, k store.KeyIdentity) error {
	v := p.limits.admit(c.Request().Context(), k)
	if v.refused == nil {
		return nil
	}
	r := v.refused
	secs := retryAfter(r.retry)
	setLimitHeaders(c.Response().Header(), DialectOf(c), v)
	return &APIError{
		Status: http.StatusTooManyRequests, Kind: RateLimited, OpenAIType: r.kind,
		Message: fmt.Sprintf("Rate limit reached for this Perpetuity key on %s: limit %d. Please try again in %ds.",
			r.what, r.limit, secs),
		RetryAfter: strconv.FormatInt(secs, 10),
	}
}

// setLimitHeaders writes the dialect's rate-limit headers for the limits
// that are set (OpenAI x-ratelimit-*, Anthropic anthropic-ratelimit-*).
func setLimitHeaders(h http.Header, d dialect.Dialect, v verdict) {
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

// spent is what a reply cost in provider tokens: the provider's usage, or
// when it reported none (an OpenAI stream without include_usage), an
// estimate of four bytes to a token over what was sent and received.
func spent(r reply, sentBytes int) int {
	if n := r.usage.in + r.usage.out; n > 0 {
		return n
	}
	if r.text == "" {
		return 0
	}
	return (sentBytes + len(r.text) + 3) / 4
}
