package app

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/perpetuity/perpetuity/proxy"
)

// bodyFloorRate is the slowest average rate, in bytes per second, at which
// a body keeps its connection beyond PERPETUITY_BODY_TIMEOUT: each 64 KiB
// received buys a second more. An upload at any real network's speed
// never meets it; a trickle gets nothing from it.
const bodyFloorRate = 64 << 10

// bodyDeadline gives every request body a read deadline on its connection:
// timeout from the end of the headers, plus a second for every
// bodyFloorRate bytes received, and never more than timeout plus what
// maxBytes takes at that rate. The deadline is cleared once the body has
// been read to its end (net/http clears it too when it starts watching the
// connection for a hang-up), so nothing after the body is limited:
// streamed replies, providers that take their time. http.Server's
// ReadTimeout would be one fixed time for every body, whatever its size:
// either short enough to stop a trickle quickly or long enough for a big
// import over a slow link, not both.
//
// A body never read to its end keeps the deadline, so net/http's discard
// of an unread body after the handler (which otherwise waits for as many
// bytes as the client declared, forever) ends at the deadline and the
// connection is closed.
type bodyDeadline struct {
	next     http.Handler
	timeout  time.Duration
	maxBytes int64
	// budget (nil: unlimited) counts every body's bytes as they arrive
	// (bodybudget.go); the request gives them back when it ends.
	budget *bodyBudget
}

func (b bodyDeadline) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Body == nil || r.Body == http.NoBody {
		// No body: the connection is only read again for the next request
		// or to notice a hang-up, neither of which has a deadline here.
		b.next.ServeHTTP(w, r)
		return
	}
	start := time.Now()
	rc := http.NewResponseController(w)
	first := start.Add(b.timeout)
	if err := rc.SetReadDeadline(first); err != nil {
		// A connection without deadlines (not net/http's own): nothing to
		// bound it with here.
		b.next.ServeHTTP(w, r)
		return
	}
	st := &bodyState{}
	r = r.WithContext(context.WithValue(r.Context(), bodyStateKey{}, st))
	body := &deadlineBody{
		ReadCloser: r.Body, rc: rc, st: st, start: start, deadline: first, timeout: b.timeout,
		last:   start.Add(b.timeout + time.Duration(float64(b.maxBytes)/bodyFloorRate*float64(time.Second))),
		budget: b.budget,
	}
	r.Body = body
	defer body.release()
	b.next.ServeHTTP(w, r)
}

// bodyState is what the error mapping learns of a request's body.
type bodyState struct{ timedOut, overBudget atomic.Bool }

type bodyStateKey struct{}

// bodyTimedOut reports whether the request's body missed its deadline.
func bodyTimedOut(ctx context.Context) bool {
	st, _ := ctx.Value(bodyStateKey{}).(*bodyState)
	return st != nil && st.timedOut.Load()
}

// bodyOverBudget reports whether the request's body was refused for the
// process's body budget.
func bodyOverBudget(ctx context.Context) bool {
	st, _ := ctx.Value(bodyStateKey{}).(*bodyState)
	return st != nil && st.overBudget.Load()
}

// deadlineBody moves the connection's read deadline as the body arrives
// and clears it at the body's end.
type deadlineBody struct {
	io.ReadCloser
	rc       *http.ResponseController
	st       *bodyState
	start    time.Time
	deadline time.Time     // as last set
	last     time.Time     // the latest it may move to
	timeout  time.Duration // PERPETUITY_BODY_TIMEOUT
	read     int64
	ended    bool
	// What the body holds of the budget. The pass-through's transport may
	// still read the body after the handler returned and its bytes were
	// given back: those are not counted.
	budget   *bodyBudget
	mu       sync.Mutex
	taken    int64
	released bool
}

// refuseGrace is how long a client whose body was refused for the budget
// may go on sending it. The connection is closed after the refusal, but
// net/http first reads what is left of an unread body under 256 KiB, for
// as long as the read deadline lets it: a refused upload that stalls kept
// its connection until the body deadline, while closing on a client still
// sending resets the connection before it reads the 503.
const refuseGrace = 500 * time.Millisecond

// count takes n bytes of the budget for the body; false when they would
// pass it. ended says the read reached the body's end: nothing is left to
// read, and net/http already watches the connection for a hang-up, which
// an expired deadline would take for one (cancelling the request).
func (d *deadlineBody) count(n int, ended bool) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.released {
		return true
	}
	if !d.budget.take(int64(n)) {
		// Under the lock: the request has not ended (release), so the
		// deadline cannot land on a later request of the connection.
		if cut := time.Now().Add(refuseGrace); !ended && cut.Before(d.deadline) {
			d.deadline = cut
			_ = d.rc.SetReadDeadline(cut)
		}
		return false
	}
	d.taken += int64(n)
	return true
}

// release gives back what the body took, once, when its request ends.
func (d *deadlineBody) release() {
	d.mu.Lock()
	n := d.taken
	d.taken, d.released = 0, true
	d.mu.Unlock()
	d.budget.give(n)
}

// extendStep keeps the deadline from being reset on every small read.
const extendStep = 250 * time.Millisecond

func (d *deadlineBody) Read(p []byte) (int, error) {
	if d.st.overBudget.Load() {
		return 0, errBodyBudget{}
	}
	n, err := d.ReadCloser.Read(p)
	d.read += int64(n)
	if n > 0 && !d.count(n, err == io.EOF) {
		d.st.overBudget.Store(true)
		return 0, errBodyBudget{}
	}
	switch {
	case err == io.EOF:
		if !d.ended {
			d.ended = true
			_ = d.rc.SetReadDeadline(time.Time{})
		}
	case err != nil && errors.Is(err, os.ErrDeadlineExceeded):
		d.st.timedOut.Store(true)
		return n, errBodyTimeout{timeout: d.timeout}
	case n > 0:
		next := d.start.Add(d.timeout + time.Duration(float64(d.read)/bodyFloorRate*float64(time.Second)))
		if next.After(d.last) {
			next = d.last
		}
		if next.Sub(d.deadline) >= extendStep {
			d.deadline = next
			_ = d.rc.SetReadDeadline(next)
		}
	}
	return n, err
}

// errBodyTimeout is what a handler reading a body past its deadline gets.
// It carries no addresses (a handler may quote it to the client).
type errBodyTimeout struct{ timeout time.Duration }

func (e errBodyTimeout) Error() string {
	return fmt.Sprintf("request body too slow: not received within %v (plus 1 s per 64 KiB received)", e.timeout)
}
func (e errBodyTimeout) Unwrap() error { return os.ErrDeadlineExceeded }
func (e errBodyTimeout) Timeout() bool { return true }

// StatusCode is the status for a handler that maps read errors itself
// (the import's).
func (e errBodyTimeout) StatusCode() int { return http.StatusRequestTimeout }

// bodyTimeoutStatus turns whatever error a handler made of a body that
// missed its deadline into a 408, and of one refused for the body budget
// into a 503 to retry (in the proxy's dialect on its routes), so that
// metrics, the log and the client all see the same status. net/http
// closes the connection after it, the body being unread.
func bodyTimeoutStatus(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		err := next(c)
		if err == nil || c.Response().Committed {
			return err
		}
		ctx := c.Request().Context()
		switch {
		case bodyTimedOut(ctx):
			c.Response().Header().Set("Connection", "close")
			const msg = "request body not received in time"
			if proxy.DialectOf(c) != 0 {
				return &proxy.APIError{Status: http.StatusRequestTimeout, Kind: proxy.InvalidRequest, Message: msg}
			}
			return echo.NewHTTPError(http.StatusRequestTimeout, msg)
		case bodyOverBudget(ctx):
			c.Response().Header().Set("Connection", "close")
			msg := errBodyBudget{}.Error()
			if proxy.DialectOf(c) != 0 {
				return &proxy.APIError{Status: http.StatusServiceUnavailable, Kind: proxy.Overloaded, RetryAfter: "1", Message: msg}
			}
			c.Response().Header().Set("Retry-After", "1")
			return echo.NewHTTPError(http.StatusServiceUnavailable, msg)
		}
		return err
	}
}
