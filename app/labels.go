package app

import (
	"net/http"
	"strconv"
	"sync"

	"github.com/labstack/echo/v4"
)

// Metric labels and log fields take their values from fixed sets only:
// every distinct value is a series kept for the life of the process and
// written on every scrape, so a value a client chooses (a 500 KB random
// method, a path) would grow /metrics and the log without bound.

// methodLabel is the method as a label: one of the methods the service
// serves, or "other".
func methodLabel(m string) string {
	switch m {
	case http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete, http.MethodOptions:
		return m
	}
	return "other"
}

// statusLabel is a status code as a label: the code when it is a real
// one (100..599; the pass-through relays the provider's), else "other".
func statusLabel(code int) string {
	if code >= 100 && code <= 599 {
		return strconv.Itoa(code)
	}
	return "other"
}

// unmatchedRoute is the label of a request that matched no route.
const unmatchedRoute = "unmatched"

// routeLabels turns a request into its route template, checked against
// the templates registered on the router so that no raw path can become a
// label, whatever the router reports.
type routeLabels struct {
	once  sync.Once
	known map[string]bool
}

func (r *routeLabels) of(c echo.Context) string {
	// Routes are all registered before the server accepts a request.
	r.once.Do(func() {
		r.known = map[string]bool{}
		for _, rt := range c.Echo().Routes() {
			r.known[rt.Path] = true
		}
	})
	if p := c.Path(); p != "" && r.known[p] {
		return p
	}
	return unmatchedRoute
}
