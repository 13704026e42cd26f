package web

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"math"
	"net"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/labstack/echo/v4"
)

// The throttle counts attempts per scope in sliding windows, in the
// database so every serving process sees the same counts. An attempt is
// counted when it is let through, before it is tried, under a lock per
// scope, so however many arrive at once no more than the limit get
// through; a successful one may be taken back (refund).
const (
	// Scopes are locked in one order (by their key), so two attempts that
	// share some scopes cannot deadlock.
	throttleLockSQL = `SELECT count(pg_advisory_xact_lock(k)) FROM (
    SELECT DISTINCT hashtextextended('perpetuity throttle ' || s, 0) AS k FROM unnest($1::text[]) s ORDER BY 1) q`
	// For each rule: how many attempts its scope holds in its window, and
	// when the limit-th newest leaves it (when one more may be let through).
	// For a rule with a delay, also: how long ago its newest attempt was.
	throttleCountSQL = `SELECT w.n, coalesce(w.retry, 0)::float8, w.age
FROM unnest($1::text[], $2::float8[], $3::int[]) WITH ORDINALITY AS r(scope, secs, lim, i)
CROSS JOIN LATERAL (
    SELECT count(*)::int AS n,
        (SELECT extract(epoch FROM f.at + make_interval(secs => r.secs) - now())
         FROM console_throttle f WHERE f.scope = r.scope AND f.at > now() - make_interval(secs => r.secs)
         ORDER BY f.at DESC OFFSET greatest(r.lim - 1, 0) LIMIT 1) AS retry,
        coalesce(extract(epoch FROM now() - max(t.at)), 0)::float8 AS age
    FROM console_throttle t WHERE t.scope = r.scope AND t.at > now() - make_interval(secs => r.secs)
) w
ORDER BY r.i`
	throttleHitSQL = `INSERT INTO console_throttle (scope) SELECT unnest($1::text[])`
	// Takes one attempt back: the newest, which has the same effect on
	// every count as the caller's own.
	throttleRefundSQL = `DELETE FROM console_throttle WHERE ctid = ANY (ARRAY(
    SELECT ctid FROM console_throttle WHERE scope = $1 ORDER BY at DESC LIMIT 1 FOR UPDATE SKIP LOCKED))`
	throttleClearSQL = `DELETE FROM console_throttle WHERE scope = ANY ($1::text[])`
	// Every scope that names one account (its addresses, its browsers).
	throttleUnlockSQL = `DELETE FROM console_throttle WHERE starts_with(scope, $1) OR starts_with(scope, $2)`
	// How many attempts each account's scopes hold in the last day.
	throttleHeldSQL = `SELECT count(t.scope)::int FROM unnest($1::text[], $2::text[]) WITH ORDINALITY AS p(a, d, i)
LEFT JOIN console_throttle t ON (starts_with(t.scope, p.a) OR starts_with(t.scope, p.d)) AND t.at > now() - interval '1 day'
GROUP BY p.i ORDER BY p.i`
	// Forgets what no window looks at any more, skipping rows another
	// sweep holds, so that concurrent sweeps neither wait nor deadlock.
	throttleSweepSQL = `DELETE FROM console_throttle WHERE ctid = ANY (ARRAY(
    SELECT ctid FROM console_throttle WHERE at < now() - interval '1 day' LIMIT 1000 FOR UPDATE SKIP LOCKED))`
)

// maxThrottleWindow is what the sweep keeps; windows are capped to it.
const maxThrottleWindow = 24 * time.Hour

// rule is one limit: at most limit attempts of scope within window. why is
// what a refused caller is told, with %s for the wait. A rule with a delay
// never locks: after limit attempts in the window each further one waits
// delay after the one before, the wait doubling with every attempt up to
// maxDelay, so someone who keeps guessing is slowed ever more and the
// owner who mistyped is back in seconds.
type rule struct {
	scope    string
	limit    int
	window   time.Duration
	why      string
	delay    time.Duration
	maxDelay time.Duration
}

// wait is how long an attempt of a delay rule still has to wait, given n
// attempts in its window and the newest age ago.
func (r rule) wait(n int, age time.Duration) time.Duration {
	if n < r.limit {
		return 0
	}
	d := r.maxDelay
	if shift := n - r.limit; shift < 32 && r.delay<<shift < r.maxDelay {
		d = r.delay << shift
	}
	return d - age
}

// grown is r with its longer tier: the limit dayTier times over a day, so a
// caller that keeps coming back after each window is held back for longer.
func grown(r rule) []rule {
	if r.window >= maxThrottleWindow {
		return []rule{r}
	}
	day := r
	day.limit, day.window = r.limit*dayTier, maxThrottleWindow
	return []rule{r, day}
}

const dayTier = 4

// refusal is the rule that refused an attempt and how long until it would
// not (the longest wait, when several refuse).
type refusal struct {
	rule  rule
	retry time.Duration
}

// admit counts one attempt against every rule's scope and reports the
// rule that refuses it, if any; a refused attempt is not counted.
func (c *Console) admit(ctx context.Context, rules []rule) (*refusal, error) {
	scopes, secs, limits := make([]string, len(rules)), make([]float64, len(rules)), make([]int32, len(rules))
	for i, r := range rules {
		scopes[i], secs[i], limits[i] = r.scope, r.window.Seconds(), int32(r.limit)
	}
	var worst *refusal
	err := pgx.BeginFunc(ctx, c.db.Pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, throttleLockSQL, scopes); err != nil {
			return err
		}
		rows, err := tx.Query(ctx, throttleCountSQL, scopes, secs, limits)
		if err != nil {
			return err
		}
		type count struct {
			N     int
			Retry float64
			Age   float64
		}
		counts, err := pgx.CollectRows(rows, pgx.RowToStructByPos[count])
		if err != nil {
			return err
		}
		for i, n := range counts {
			var d time.Duration
			if r := rules[i]; r.delay > 0 {
				if d = r.wait(n.N, time.Duration(n.Age*float64(time.Second))); d <= 0 {
					continue
				}
				d = max(d, time.Second)
			} else if n.N < r.limit {
				continue
			} else {
				d = time.Duration(math.Max(n.Retry, 1) * float64(time.Second))
			}
			if worst == nil || d > worst.retry {
				worst = &refusal{rule: rules[i], retry: d}
			}
		}
		if worst != nil {
			return nil
		}
		_, err = tx.Exec(ctx, throttleHitSQL, distinct(scopes))
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("throttle: %w", err)
	}
	if worst == nil {
		if _, err := c.db.Pool.Exec(ctx, throttleSweepSQL); err != nil {
			return nil, fmt.Errorf("throttle sweep: %w", err)
		}
	}
	return worst, nil
}

// refund takes one attempt back from each scope.
func (c *Console) refund(ctx context.Context, scopes ...string) error {
	if len(scopes) == 0 {
		return nil
	}
	b := &pgx.Batch{}
	for _, s := range distinct(scopes) {
		b.Queue(throttleRefundSQL, s)
	}
	if err := c.db.Pool.SendBatch(ctx, b).Close(); err != nil {
		return fmt.Errorf("throttle refund: %w", err)
	}
	return nil
}

// clearThrottle forgets every attempt of the scopes.
func (c *Console) clearThrottle(ctx context.Context, scopes ...string) error {
	if _, err := c.db.Pool.Exec(ctx, throttleClearSQL, scopes); err != nil {
		return fmt.Errorf("throttle clear: %w", err)
	}
	return nil
}

// accountScopes are the prefixes of every scope that names the account
// with this address: its attempts from each client address, and from each
// browser that holds its device cookie.
func accountScopes(email string) (byAddress, byDevice string) {
	return emailScope("account-address", email) + "@", emailScope("account-device", email) + "@"
}

// unlockAccount forgets the account's sign-in failures everywhere; q is
// the transaction that records the unlock, so both happen or neither.
func unlockAccount(ctx context.Context, q execer, email string) (int64, error) {
	a, d := accountScopes(email)
	tag, err := q.Exec(ctx, throttleUnlockSQL, a, d)
	if err != nil {
		return 0, fmt.Errorf("throttle unlock: %w", err)
	}
	return tag.RowsAffected(), nil
}

// throttleHeld is, per address, how many sign-in attempts the throttle
// holds against the account in the last day: what an unlock would clear.
func (c *Console) throttleHeld(ctx context.Context, emails []string) ([]int, error) {
	as, ds := make([]string, len(emails)), make([]string, len(emails))
	for i, e := range emails {
		as[i], ds[i] = accountScopes(normEmail(e))
	}
	rows, err := c.db.Pool.Query(ctx, throttleHeldSQL, as, ds)
	if err != nil {
		return nil, fmt.Errorf("throttle held: %w", err)
	}
	return pgx.CollectRows(rows, pgx.RowTo[int])
}

func distinct(xs []string) []string {
	seen := make(map[string]bool, len(xs))
	out := xs[:0:0]
	for _, x := range xs {
		if !seen[x] {
			seen[x] = true
			out = append(out, x)
		}
	}
	return out
}

// emailScope names an address in a throttle scope by digest: the global
// throttle table then holds no one's address, and a long or odd "address"
// typed into the sign-in form makes a scope of fixed size.
func emailScope(kind, email string) string {
	h := sha256.Sum256([]byte("perpetuity throttle\x00" + email))
	return kind + ":" + hex.EncodeToString(h[:16])
}

// clientAddress is the address rate limits count against. Forwarded
// headers are trusted only when the server was told how (e.IPExtractor);
// otherwise anyone could pick a fresh address per request.
func clientAddress(ec echo.Context) string {
	if ec.Echo().IPExtractor != nil {
		return ec.RealIP()
	}
	host, _, err := net.SplitHostPort(ec.Request().RemoteAddr)
	if err != nil {
		return ec.Request().RemoteAddr
	}
	return host
}
