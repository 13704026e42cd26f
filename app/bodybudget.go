package app

import (
	"net/http"
	"sync/atomic"
)

// bodyBudget bounds the request body bytes the process has taken in for
// the requests it is serving, all routes together
// (PERPETUITY_BODY_BUDGET). A handler holds a body whole (the proxy
// parses it, an import checks it before storing) for as long as it runs,
// and the body limit and deadline bound one request only: a key holder
// opening a thousand 32 MiB uploads at once, each trickling just fast
// enough, held 32 GB. Past the budget a body is refused with a 503 to
// retry; its bytes, and every request's, are given back when the request
// ends. The pass-through's body is forwarded as it arrives, not held; it
// is counted too, so that one rule covers every route.
type bodyBudget struct {
	max  int64 // <= 0: unlimited
	used atomic.Int64
}

// take counts n more bytes received; false (nothing counted) when they
// would pass the budget.
func (b *bodyBudget) take(n int64) bool {
	if b == nil || b.max <= 0 {
		return true
	}
	if b.used.Add(n) > b.max {
		b.used.Add(-n)
		return false
	}
	return true
}

// give returns n bytes taken, at the request's end.
func (b *bodyBudget) give(n int64) {
	if b != nil && b.max > 0 {
		b.used.Add(-n)
	}
}

// errBodyBudget is what a handler reading a body past the budget gets. It
// says no more than that (a handler may quote it to the client).
type errBodyBudget struct{}

func (errBodyBudget) Error() string {
	return "the server is taking in too many request bodies at once; retry shortly"
}

// StatusCode is the status for a handler that maps read errors itself
// (the import's).
func (errBodyBudget) StatusCode() int { return http.StatusServiceUnavailable }
