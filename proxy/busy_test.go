package proxy

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/perpetuity/perpetuity/memory"
)

// TestMemoryBusyIsRetryable: a scan the tenant's gate refused (memory.ErrBusy)
// is a 503 with Retry-After that says memory is busy, in the caller's
// dialect, and the provider never sees the request; any other memory
// failure stays the plain "memory is unavailable".
func TestMemoryBusyIsRetryable(t *testing.T) {
	t.Parallel()
	for _, r := range userRoutes {
		for _, c := range []struct {
			name       string
			err        error
			retryAfter string
			message    string
		}{
			{"busy", fmt.Errorf("frame: scan: %w", memory.ErrBusy), "1", "memory is busy"},
			{"other", fmt.Errorf("frame: read: connection refused"), "", "memory is unavailable"},
		} {
			t.Run(r.name+"/"+c.name, func(t *testing.T) {
				t.Parallel()
				tp := newTestProxy(t)
				tp.mem.frameErr = c.err
				status, h, body := tp.post(r.path, r.body("what did I say?"), r.header)
				if status != http.StatusServiceUnavailable || h.Get("Retry-After") != c.retryAfter || !strings.Contains(body, c.message) {
					t.Errorf("status %d, Retry-After %q, body %s", status, h.Get("Retry-After"), body)
				}
				if n := len(tp.openai.Requests()) + len(tp.anthropic.Requests()); n != 0 {
					t.Errorf("%d provider requests, want none", n)
				}
			})
		}
	}
}
