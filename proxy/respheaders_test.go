package proxy

import (
	"fmt"
	"mime"
	"net/http"
	"strings"
	"testing"

	"github.com/perpetuity/perpetuity/e2e/fakeprovider"
)

// hostileHeaders are what a hostile (or compromised, or misconfigured)
// provider sets to act on the console's origin: cookies, CORS, its own
// CSP, refresh and redirect, and Perpetuity's own response headers.
var hostileHeaders = map[string]string{
	"Set-Cookie":                       "perpetuity_session=attacker; Path=/; HttpOnly",
	"Access-Control-Allow-Origin":      "*",
	"Access-Control-Allow-Credentials": "true",
	"Content-Security-Policy":          "script-src * 'unsafe-inline'",
	"Refresh":                          "0; url=http://evil.test/",
	"Location":                         "http://evil.test/",
	"Link":                             "<http://evil.test/x.css>; rel=stylesheet",
	"Strict-Transport-Security":        "max-age=0",
	"X-Frame-Options":                  "ALLOWALL",
	"Content-Disposition":              "inline",
	HeaderRequestID:                    "req_from_the_provider",
	HeaderFrameItems:                   "999",
	HeaderConvID:                       "31337",
	"X-Perpetuity-Anything":            "from-the-provider",
}

// providerHeaders are the provider's own headers a client legitimately
// reads (request ids, rate limits, retry hints): they must still arrive.
var providerHeaders = map[string]string{
	"X-Request-Id":                         "req_upstream_1",
	"Request-Id":                           "req_upstream_2",
	"X-Ratelimit-Remaining-Requests":       "41",
	"Openai-Processing-Ms":                 "12",
	"Anthropic-Ratelimit-Tokens-Remaining": "9000",
	"Retry-After-Ms":                       "1500",
}

const scriptMarker = "pwned-by-the-provider"

// hostileProvider answers like the fake provider, with the hostile and
// the provider's own headers set over the fake's.
func hostileProvider(t *testing.T) *recorder {
	fake := fakeprovider.New()
	return newRecorder(t, func(w http.ResponseWriter, r *http.Request) {
		fake.ServeHTTP(&overrideWriter{ResponseWriter: w, set: func(h http.Header) {
			for k, v := range hostileHeaders {
				h.Set(k, v)
			}
			for k, v := range providerHeaders {
				h.Set(k, v)
			}
		}}, r)
	})
}

// overrideWriter applies set to the headers just before they are written.
type overrideWriter struct {
	http.ResponseWriter
	set  func(http.Header)
	done bool
}

func (o *overrideWriter) WriteHeader(code int) {
	if !o.done {
		o.done = true
		o.set(o.Header())
	}
	o.ResponseWriter.WriteHeader(code)
}

func (o *overrideWriter) Write(b []byte) (int, error) {
	if !o.done {
		o.WriteHeader(http.StatusOK)
	}
	return o.ResponseWriter.Write(b)
}

func (o *overrideWriter) Unwrap() http.ResponseWriter { return o.ResponseWriter }

// checkSecurityHeaders reports what is wrong with a proxy response's
// headers: a hostile header that came through, a provider header lost,
// Perpetuity's own headers or the security headers missing.
func checkSecurityHeaders(h http.Header, wantProvider bool) []string {
	var bad []string
	for k, v := range hostileHeaders {
		for _, got := range h.Values(k) {
			if got == v {
				bad = append(bad, fmt.Sprintf("the provider's %s: %q reached the client", k, got))
			}
		}
	}
	if wantProvider {
		for k, v := range providerHeaders {
			if h.Get(k) != v {
				bad = append(bad, fmt.Sprintf("the provider's %s was lost (got %q)", k, h.Get(k)))
			}
		}
	}
	if id := h.Get(HeaderRequestID); !strings.HasPrefix(id, "req_") || id == hostileHeaders[HeaderRequestID] {
		bad = append(bad, fmt.Sprintf("%s is %q, not the proxy's", HeaderRequestID, id))
	}
	if h.Get("X-Content-Type-Options") != "nosniff" {
		bad = append(bad, "no X-Content-Type-Options: nosniff")
	}
	if csp := h.Get("Content-Security-Policy"); !strings.Contains(csp, "default-src 'none'") || !strings.Contains(csp, "frame-ancestors 'none'") {
		bad = append(bad, fmt.Sprintf("Content-Security-Policy %q is not the proxy's", csp))
	}
	if len(h.Values("Content-Security-Policy")) != 1 {
		bad = append(bad, fmt.Sprintf("%d Content-Security-Policy headers", len(h.Values("Content-Security-Policy"))))
	}
	return bad
}

// TestProviderResponseHeaders (issue 15, finding 5): only the provider's
// request-id, rate-limit and retry headers reach the client; Perpetuity's
// own headers are the proxy's; every proxy response, errors included,
// carries nosniff and the proxy's CSP.
func TestProviderResponseHeaders(t *testing.T) {
	t.Parallel()
	up := hostileProvider(t)
	srv := newEdgeProxy(t, up.URL)
	for _, c := range edgeCalls() {
		t.Run(c.name, func(t *testing.T) {
			res := rawDo(t, srv, c.method, "/k/"+testKey+c.path, c.body, c.headers...)
			if res.Status != 200 {
				t.Fatalf("status %d %q", res.Status, res.Body)
			}
			for _, b := range checkSecurityHeaders(res.Header, true) {
				t.Error(b)
			}
			if c.path == "/v1/chat/completions" || c.path == "/v1/messages" {
				if res.Header.Get(HeaderFrameItems) == "" || res.Header.Get(HeaderFrameItems) == "999" {
					t.Errorf("%s is %q, not the proxy's", HeaderFrameItems, res.Header.Get(HeaderFrameItems))
				}
			}
		})
	}
	// Errors: the provider's (relayed, with its retry hints) and the
	// proxy's own (a bad key, an unknown pass-through path).
	t.Run("provider 429", func(t *testing.T) {
		errUp := newRecorder(t, func(w http.ResponseWriter, r *http.Request) {
			for k, v := range hostileHeaders {
				w.Header().Set(k, v)
			}
			for k, v := range providerHeaders {
				w.Header().Set(k, v)
			}
			w.Header().Set("Retry-After", "7")
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(429)
			_, _ = w.Write([]byte(`{"error":{"message":"slow down","type":"requests","code":"rate_limit_exceeded"}}`))
		})
		errSrv := newEdgeProxy(t, errUp.URL)
		for _, c := range edgeCalls() {
			res := rawDo(t, errSrv, c.method, "/k/"+testKey+c.path, c.body, c.headers...)
			if res.Status != 429 || res.Header.Get("Retry-After") != "7" {
				t.Errorf("%s: status %d Retry-After %q, want 429 with 7", c.name, res.Status, res.Header.Get("Retry-After"))
			}
			for _, b := range checkSecurityHeaders(res.Header, true) {
				t.Errorf("%s: %s", c.name, b)
			}
		}
	})
	t.Run("proxy errors", func(t *testing.T) {
		for _, target := range []string{"/k/ppk_wrong/v1/models", "/k/" + testKey + "/v1/admin", "/k/ppk_wrong/v1/chat/completions"} {
			res := rawDo(t, srv, "GET", target, "", openAIKey)
			if res.Status < 400 {
				t.Errorf("%s: status %d", target, res.Status)
			}
			for _, b := range checkSecurityHeaders(res.Header, false) {
				t.Errorf("%s: %s", target, b)
			}
		}
	})
}

// TestProviderHTMLIsNeverServed (issue 15, finding 5): a provider page of
// HTML with a script, at any status, on any route, never reaches the
// client as a page on the console's origin: it becomes an error in the
// caller's dialect (the provider's status when it was an error, else 502).
// A reply with no type at all is a download, never sniffed.
func TestProviderHTMLIsNeverServed(t *testing.T) {
	t.Parallel()
	page := "<!doctype html><html><body><script>alert('" + scriptMarker + "')</script></body></html>"
	for _, tc := range []struct {
		status int
		ctype  string
	}{{200, "text/html; charset=utf-8"}, {500, "text/html"}, {404, "text/html"}, {200, "application/xhtml+xml"}, {200, "image/svg+xml"}, {403, "text/xml"}} {
		t.Run(fmt.Sprint(tc.status, " ", tc.ctype), func(t *testing.T) {
			t.Parallel()
			up := newRecorder(t, func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", tc.ctype)
				w.WriteHeader(tc.status)
				_, _ = w.Write([]byte(page))
			})
			srv := newEdgeProxy(t, up.URL)
			calls := append(edgeCalls(), edgeCall{"passthrough file content", "GET", "/v1/files/file-1/content", "", []string{openAIKey}, false})
			for _, c := range calls {
				res := rawDo(t, srv, c.method, "/k/"+testKey+c.path, c.body, c.headers...)
				want := tc.status
				if want < 400 {
					want = http.StatusBadGateway
				}
				mt, _, _ := mime.ParseMediaType(res.Header.Get("Content-Type"))
				switch {
				case strings.Contains(res.Body, scriptMarker):
					t.Errorf("%s: the provider's page reached the client as %d %s: %q", c.name, res.Status, res.Header.Get("Content-Type"), res.Body)
				case res.Status != want || !isDialectError(c.anthropic, res.Body):
					t.Errorf("%s: status %d %q, want %d with a dialect error", c.name, res.Status, res.Body, want)
				case mt != "application/json" && mt != "text/event-stream":
					t.Errorf("%s: served as %q", c.name, res.Header.Get("Content-Type"))
				}
			}
		})
	}
	t.Run("untyped download", func(t *testing.T) {
		t.Parallel()
		up := newRecorder(t, func(w http.ResponseWriter, r *http.Request) {
			w.Header()["Content-Type"] = nil // no type, and none sniffed by the test server either
			_, _ = w.Write([]byte(page))
		})
		srv := newEdgeProxy(t, up.URL)
		res := rawDo(t, srv, "GET", "/k/"+testKey+"/v1/files/file-1/content", "", openAIKey)
		if res.Status != 200 || res.Header.Get("Content-Type") != "application/octet-stream" ||
			!strings.HasPrefix(res.Header.Get("Content-Disposition"), "attachment") || res.Header.Get("X-Content-Type-Options") != "nosniff" {
			t.Fatalf("untyped file content served as %d %v", res.Status, res.Header)
		}
	})
}
