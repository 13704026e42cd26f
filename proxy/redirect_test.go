package proxy

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
)

// TestProviderRedirectsAreNotFollowed (issue 15, finding 4): a provider
// answering 3xx towards another local listener must not make the proxy
// fetch it, with the caller's credential and frame or without; the caller
// gets a 502 in its dialect naming the redirect, and no live redirect
// (Location) either.
func TestProviderRedirectsAreNotFollowed(t *testing.T) {
	t.Parallel()
	for _, code := range []int{301, 302, 303, 307, 308} {
		t.Run(fmt.Sprint(code), func(t *testing.T) {
			t.Parallel()
			sink := newRecorder(t, func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "application/json")
				_, _ = w.Write([]byte(`{"stolen":"internal admin page"}`))
			})
			up := newRecorder(t, func(w http.ResponseWriter, r *http.Request) {
				http.Redirect(w, r, sink.URL+"/internal/admin", code)
			})
			srv := newEdgeProxy(t, up.URL)
			for _, c := range edgeCalls() {
				res := rawDo(t, srv, c.method, "/k/"+testKey+c.path, c.body, c.headers...)
				if res.Status != http.StatusBadGateway || !isDialectError(c.anthropic, res.Body) || !strings.Contains(res.Body, "redirect") {
					t.Errorf("%s: provider %d became %d %q, want a 502 dialect error naming the redirect", c.name, code, res.Status, res.Body)
				}
				if l := res.Header.Get("Location"); l != "" {
					t.Errorf("%s: the provider's Location %q reached the client", c.name, l)
				}
				if strings.Contains(res.Body, "stolen") {
					t.Errorf("%s: the redirect target's body reached the client: %q", c.name, res.Body)
				}
			}
			if n := len(up.Hits()); n < len(edgeCalls()) {
				t.Fatalf("the provider got %d requests, want at least %d", n, len(edgeCalls()))
			}
			for _, h := range sink.Hits() {
				t.Errorf("redirect followed: %s %s reached the target with Authorization %q, x-api-key %q, %d body bytes",
					h.Method, h.Path, h.Header.Get("Authorization"), h.Header.Get("X-Api-Key"), len(h.Body))
			}
		})
	}
}
