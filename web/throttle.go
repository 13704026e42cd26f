package web

import (
	"context"
	"fmt"
	"math"
	"net"
	"time"

	"github.com/labstack/echo/v4"
)

// The throttle counts failures per scope in a sliding window, in the
// database so every serving process sees the same counts.
const (
	throttleCountSQL = `SELECT count(*), coalesce(extract(epoch FROM min(at) + make_interval(secs => $2) - now()), 0)::float8
FROM console_throttle WHERE scope = $1 AND at > now() - make_interval(secs => $2)`
	throttleHitSQL   = `INSERT INTO console_throttle (scope) VALUES ($1)`
	throttleClearSQL = `DELETE FROM console_throttle WHERE scope = $1`
	throttleSweepSQL = `DELETE FROM console_throttle WHERE at < now() - interval '1 day'`
)

// maxThrottleWindow is what the sweep keeps; windows are capped to it.
const maxThrottleWindow = 24 * time.Hour

// limited reports whether scope has reached limit in window, and if so
// how long until the oldest counted failure leaves the window.
func (c *Console) limited(ctx context.Context, scope string, limit int, window time.Duration) (bool, time.Duration, error) {
	var n int
	var retry float64
	if err := c.db.Pool.QueryRow(ctx, throttleCountSQL, scope, window.Seconds()).Scan(&n, &retry); err != nil {
		return false, 0, fmt.Errorf("throttle %s: %w", scope, err)
	}
	if n < limit {
		return false, 0, nil
	}
	return true, time.Duration(math.Max(retry, 1) * float64(time.Second)), nil
}

// hit counts one failure (or attempt) against each scope.
func (c *Console) hit(ctx context.Context, scopes ...string) error {
	for _, s := range scopes {
		if _, err := c.db.Pool.Exec(ctx, throttleHitSQL, s); err != nil {
			return fmt.Errorf("throttle hit: %w", err)
		}
	}
	_, err := c.db.Pool.Exec(ctx, throttleSweepSQL)
	return err
}

func (c *Console) clearThrottle(ctx context.Context, scope string) error {
	_, err := c.db.Pool.Exec(ctx, throttleClearSQL, scope)
	return err
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
