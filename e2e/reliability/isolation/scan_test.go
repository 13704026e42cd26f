package isolation

import (
	"fmt"
	"strconv"
	"strings"
	"sync"

	"github.com/perpetuity/perpetuity/e2e/fakeprovider"
	"github.com/perpetuity/perpetuity/e2e/reliability/internal/harness"
)

// Headers the test sends for the fake provider. They attribute every
// upstream request to the tenant that caused it and script the reply. The
// proxy passes a provider only the headers of its outbound allowlist
// (proxy/provider/headers.go); these ride in the X-Stainless- namespace, the SDK
// metadata every provider gets.
const (
	hdrTenant = "X-Stainless-Iso-Tenant" // the tenant's index
	hdrReq    = "X-Stainless-Iso-Req"    // the request's nonce
	hdrKind   = "X-Stainless-Iso-Kind"   // the traffic kind
	hdrReply  = "X-Stainless-Iso-Reply"  // the text the fake answers with
	hdrTool   = "X-Stainless-Iso-Tool"   // a memory tool the fake calls in round one
	hdrArgs   = "X-Stainless-Iso-Args"   // its arguments
)

// ledger counts what was scanned and records every leak and failure.
type ledger struct {
	tenants []*tenant

	mu          sync.Mutex
	requests    int            // requests the test made (API, console, CLI)
	responses   int            // bodies scanned: API, SSE, console, exports
	upstream    int            // requests the fake provider received
	toolResults int            // memory tool results read from them
	kinds       map[string]int // requests per traffic kind
	leaks       []string
	failures    []string
	ownTool     map[string]int // tool results carrying the caller's canary, per tool
	// recall counts, per recall kind and tenant, the probes (without the
	// canary in the question) and those whose upstream frame held the
	// tenant's canary all the same.
	recall   map[string]map[int][2]int
	ownPages map[string][2]int // pages that should show the owner's canary: seen, shown
}

func newLedger(ts []*tenant) *ledger {
	return &ledger{tenants: ts, kinds: map[string]int{}, ownTool: map[string]int{},
		recall: map[string]map[int][2]int{}, ownPages: map[string][2]int{}}
}

// foreign lists the tenants other than owner whose canary appears in s.
// The random part alone is searched, so a canary re-cased, escaped or cut
// from its prefix is still found.
func (l *ledger) foreign(owner int, s string) []int {
	var out []int
	for _, tn := range l.tenants {
		if tn.idx != owner && strings.Contains(s, tn.hex) {
			out = append(out, tn.idx)
		}
	}
	return out
}

func (l *ledger) own(owner int, s string) bool { return strings.Contains(s, l.tenants[owner].hex) }

// response scans one body the test received for tenant owner and reports
// whether the owner's own canary is in it.
func (l *ledger) response(owner int, where, body string) bool {
	f := l.foreign(owner, body)
	l.mu.Lock()
	defer l.mu.Unlock()
	l.responses++
	if len(f) > 0 {
		l.leaks = append(l.leaks, fmt.Sprintf("%s (tenant %d) shows the canary of tenant(s) %v: %s", where, owner, f, excerpt(body, l.tenants[f[0]].hex)))
	}
	return l.own(owner, body)
}

// page records a console page or export whose owner canary is expected.
func (l *ledger) page(kind string, own bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	c := l.ownPages[kind]
	c[0]++
	if own {
		c[1]++
	}
	l.ownPages[kind] = c
}

func (l *ledger) count(kind string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.requests++
	l.kinds[kind]++
}

func (l *ledger) leak(s string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.leaks = append(l.leaks, s)
}

func (l *ledger) fail(format string, args ...any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.failures = append(l.failures, fmt.Sprintf(format, args...))
}

// upstreamRequests scans what the fake provider received since the last
// call: no foreign canary in any body (the frame the proxy built for a
// tenant, its tool results), recall probes scored, tool results counted.
func (l *ledger) upstreamRequests(reqs []fakeprovider.Recorded) {
	for _, r := range reqs {
		owner, err := strconv.Atoi(r.Header.Get(hdrTenant))
		if err != nil || owner < 0 || owner >= len(l.tenants) {
			l.fail("upstream %s %s carries no tenant attribution (%q)", r.Method, r.Path, r.Header.Get(hdrTenant))
			continue
		}
		body := string(r.Body) + "?" + r.RawQuery
		f := l.foreign(owner, body)
		results := harness.ToolResults(r)
		hasOwn := l.own(owner, body)
		l.mu.Lock()
		l.upstream++
		if len(f) > 0 {
			l.leaks = append(l.leaks, fmt.Sprintf("upstream request %s %s (kind %s, req %s) built for tenant %d carries the canary of tenant(s) %v: %s",
				r.Method, r.Path, r.Header.Get(hdrKind), r.Header.Get(hdrReq), owner, f, excerpt(body, l.tenants[f[0]].hex)))
		}
		if k := r.Header.Get(hdrKind); strings.HasPrefix(k, "recall") {
			if l.recall[k] == nil {
				l.recall[k] = map[int][2]int{}
			}
			c := l.recall[k][owner]
			c[0]++
			if hasOwn {
				c[1]++
			}
			l.recall[k][owner] = c
		}
		for _, res := range results {
			l.toolResults++
			if rf := l.foreign(owner, res); len(rf) > 0 {
				l.leaks = append(l.leaks, fmt.Sprintf("memory tool %s (args %s) for tenant %d returned the canary of tenant(s) %v: %s",
					r.Header.Get(hdrTool), r.Header.Get(hdrArgs), owner, rf, excerpt(res, l.tenants[rf[0]].hex)))
			}
			if l.own(owner, res) {
				l.ownTool[r.Header.Get(hdrTool)]++
			}
		}
		l.mu.Unlock()
	}
}

// endsWithToolResult tells a tool loop's later rounds from its first.
func endsWithToolResult(r fakeprovider.Recorded) bool { return len(harness.ToolResults(r)) > 0 }

// excerpt shows where needle sits in s.
func excerpt(s, needle string) string {
	i := strings.Index(s, needle)
	if i < 0 {
		return ""
	}
	from, to := max(0, i-160), min(len(s), i+len(needle)+80)
	return strconv.Quote(s[from:to])
}
