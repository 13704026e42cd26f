package proxy

import (
	"context"
	"errors"
	"net/http"

	"github.com/labstack/echo/v4"
)

// A stopping replica finishes the requests it holds up to its drain time
// and then cuts the rest (app/serve.go). Cutting is done here, not by
// closing connections: like Caddy's reverse proxy, which gives streams a
// delay and then a graceful close message (a WebSocket "going away")
// rather than a dropped socket, a cut stream ends with the caller
// dialect's error event, so no client mistakes what it got for a whole
// reply, and the part produced is captured flagged interrupted.

// errCut is the cause of a request context that the drain deadline ended.
var errCut = errors.New("the server cut the request at the end of its drain")

// drainCut is what a cut request answers: in band once its stream started,
// as the dialect's error JSON before.
func drainCut() *APIError {
	return &APIError{Status: http.StatusServiceUnavailable, Kind: Overloaded, RetryAfter: "1",
		Message: "the server is restarting and could not finish this reply in its drain time; the part sent was stored as interrupted, please retry"}
}

// drainCutUnsent is what a request cut before its answer began answers:
// nothing of a reply was made, so nothing was stored as interrupted.
func drainCutUnsent() *APIError {
	return &APIError{Status: http.StatusServiceUnavailable, Kind: Overloaded, RetryAfter: "1",
		Message: "the server is restarting and cut this request before it was answered, please retry"}
}

// cuttable gives a proxied request a context that also ends when the
// proxy cuts its requests (Cut), and counts it in flight until done.
// The upstream call is made on this context, so a cut stops the
// provider's generation too.
func (p *Proxy) cuttable(c echo.Context) (context.Context, func(cut bool)) {
	ctx, cancel := context.WithCancelCause(c.Request().Context())
	stop := context.AfterFunc(p.cutCtx, func() { cancel(errCut) })
	c.SetRequest(c.Request().WithContext(ctx))
	p.inFlight.Add(1)
	return ctx, func(cut bool) {
		stop()
		cancel(nil)
		p.inFlight.Add(-1)
		if cut {
			p.cuts.Add(1)
		} else {
			p.finished.Add(1)
		}
	}
}

// wasCut reports whether ctx ended because the proxy cut its requests.
func wasCut(ctx context.Context) bool { return errors.Is(context.Cause(ctx), errCut) }

// Cut ends every proxied request still in flight, and any that starts
// after: each answers drainCut in its dialect. A stopping server calls it
// at its drain deadline.
func (p *Proxy) Cut() { p.cutNow() }

// DrainCounts are the proxied requests in flight now, and those that have
// ended since the proxy was made, finished or cut. A drain reports the
// difference between its start and its end.
type DrainCounts struct{ InFlight, Finished, Cut int64 }

// Counts reads the proxy's DrainCounts.
func (p *Proxy) Counts() DrainCounts {
	return DrainCounts{InFlight: p.inFlight.Load(), Finished: p.finished.Load(), Cut: p.cuts.Load()}
}
