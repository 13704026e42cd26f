package upstreamsafety

import (
	"fmt"
	"mime"
	"net/http"
	"strings"
	"testing"

	"github.com/perpetuity/perpetuity/e2e/reliability/figure"
)

// forbidden are the response headers a hostile provider sets to act on the
// console's origin, with the values it sets: none may reach the client.
var forbidden = map[string]string{
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
	"X-Perpetuity-Request-Id":          "req_from_the_provider",
	"X-Perpetuity-Frame-Items":         "999",
	"X-Perpetuity-Conversation-Id":     "31337",
	"X-Perpetuity-Frame-Tokens":        "31337",
}

// kept are the provider's headers API clients read: they must arrive.
var kept = map[string]string{
	"X-Ratelimit-Remaining-Requests":       "41",
	"Openai-Processing-Ms":                 "12",
	"Anthropic-Ratelimit-Tokens-Remaining": "9000",
	"Retry-After-Ms":                       "1500",
}

// withHeaders answers like the fake provider, with the hostile and the
// provider's own headers set over the fake's just before they go out.
func withHeaders(next http.HandlerFunc) http.HandlerFunc {
	return func(rw http.ResponseWriter, r *http.Request) {
		next(&headerWriter{ResponseWriter: rw}, r)
	}
}

type headerWriter struct {
	http.ResponseWriter
	done bool
}

func (h *headerWriter) WriteHeader(code int) {
	if !h.done {
		h.done = true
		for k, v := range forbidden {
			h.Header().Set(k, v)
		}
		for k, v := range kept {
			h.Header().Set(k, v)
		}
	}
	h.ResponseWriter.WriteHeader(code)
}

func (h *headerWriter) Write(b []byte) (int, error) {
	if !h.done {
		h.WriteHeader(http.StatusOK)
	}
	return h.ResponseWriter.Write(b)
}

func (h *headerWriter) Unwrap() http.ResponseWriter { return h.ResponseWriter }

const scriptMarker = "pwned-by-the-provider"

// TestProviderResponseHeadersAndHTML (issue 15, finding 5): on every route,
// none of the hostile provider's headers reaches the client, the provider's
// rate-limit and retry headers do, Perpetuity's headers are the proxy's,
// every response carries nosniff and the proxy's CSP, and a provider's HTML
// page is never served.
func TestProviderResponseHeadersAndHTML(t *testing.T) {
	w := startWorld(t)
	repeats := figure.N(20, 2)
	w.up.Answer(withHeaders(w.fake.ServeHTTP))
	var responses, forbiddenSeen, keptLost, ownWrong, unmarked int
	var problems []string
	note := func(format string, args ...any) {
		if len(problems) < 40 {
			problems = append(problems, fmt.Sprintf(format, args...))
		}
	}
	for range repeats {
		for _, c := range calls() {
			res := w.do(c.method, c.path, c.body, c.headers...)
			responses++
			if res.Status != http.StatusOK {
				note("%s: status %d %.200q", c.name, res.Status, res.Body)
				continue
			}
			for k, v := range forbidden {
				for _, got := range res.Header.Values(k) {
					if got == v {
						forbiddenSeen++
						note("%s: the provider's %s: %q reached the client", c.name, k, got)
					}
				}
			}
			for k, v := range kept {
				if res.Header.Get(k) != v {
					keptLost++
					note("%s: the provider's %s was lost", c.name, k)
				}
			}
			if id := res.Header.Get("X-Perpetuity-Request-Id"); !strings.HasPrefix(id, "req_") || id == forbidden["X-Perpetuity-Request-Id"] {
				ownWrong++
				note("%s: X-Perpetuity-Request-Id %q is not the proxy's", c.name, id)
			}
			if !secured(res.Header) {
				unmarked++
				note("%s: nosniff %q, CSP %q", c.name, res.Header.Get("X-Content-Type-Options"), res.Header.Values("Content-Security-Policy"))
			}
		}
		// The proxy's own errors are marked too.
		for _, target := range []string{"/v1/admin", "/v1/models%2F..%2Fadmin"} {
			res := w.do("GET", target, "", openAIKey)
			responses++
			if !secured(res.Header) {
				unmarked++
				note("proxy error %s: nosniff %q, CSP %q", target, res.Header.Get("X-Content-Type-Options"), res.Header.Values("Content-Security-Policy"))
			}
		}
	}

	// HTML pages with a script, at success and error statuses, as HTML and
	// other markup, on every route plus a file download.
	page := "<!doctype html><html><body><script>alert('" + scriptMarker + "')</script></body></html>"
	routes := append(calls(), call{"pass-through file content", "GET", "/v1/files/file-1/content", "", []string{openAIKey}, false, false})
	var pages, served, notError int
	for range repeats {
		for _, kind := range []struct {
			status int
			ctype  string
		}{{200, "text/html; charset=utf-8"}, {404, "text/html"}, {500, "text/html"}, {200, "application/xhtml+xml"}, {200, "image/svg+xml"}} {
			w.up.Answer(func(rw http.ResponseWriter, r *http.Request) {
				rw.Header().Set("Content-Type", kind.ctype)
				rw.WriteHeader(kind.status)
				_, _ = rw.Write([]byte(page))
			})
			for _, c := range routes {
				res := w.do(c.method, c.path, c.body, c.headers...)
				pages++
				mt, _, _ := mime.ParseMediaType(res.Header.Get("Content-Type"))
				if strings.Contains(res.Body, scriptMarker) || strings.Contains(mt, "html") || strings.Contains(mt, "xml") {
					served++
					note("%s: the provider's %d %s page was served as %d %s", c.name, kind.status, kind.ctype, res.Status, res.Header.Get("Content-Type"))
				}
				want := kind.status
				if want < 400 {
					want = http.StatusBadGateway
				}
				if res.Status != want || !isDialectError(c.anthropic, res.Body) || !secured(res.Header) {
					notError++
					note("%s: the provider's %d %s page became %d %.200q", c.name, kind.status, kind.ctype, res.Status, res.Body)
				}
			}
		}
	}

	pass := forbiddenSeen == 0 && keptLost == 0 && ownWrong == 0 && unmarked == 0 && served == 0 && notError == 0
	figure.Record(t, figure.Figure{
		Item: 105, Name: "Provider response headers and HTML",
		Figure: fmt.Sprintf("%d responses (%d routes x %d, and proxy errors): forbidden provider headers reaching the client %d (of %d set on each), "+
			"provider rate-limit/retry headers lost %d, Perpetuity headers not the proxy's %d, responses without nosniff and the proxy CSP %d; "+
			"%d provider HTML/markup pages: served %d, not turned into a dialect error %d",
			responses, len(calls()), repeats, forbiddenSeen, len(forbidden), keptLost, ownWrong, unmarked, pages, served, notError),
		Target: "0 forbidden headers, 0 HTML served, every proxy response with nosniff and CSP default-src 'none'; frame-ancestors 'none'",
		Pass:   pass,
		Details: "Real binary, raw HTTP; every provider at one hostile local listener that answers like the fake provider with Set-Cookie, " +
			"Access-Control-Allow-Origin: *, Access-Control-Allow-Credentials, Content-Security-Policy, Refresh, Location, Link, " +
			"Strict-Transport-Security, X-Frame-Options, Content-Disposition: inline and X-Perpetuity-Request-Id/-Frame-Items/-Frame-Tokens/" +
			"-Conversation-Id set over its own, plus rate-limit and retry headers (x-ratelimit-*, openai-*, anthropic-ratelimit-*, retry-after-ms) " +
			"that must still arrive; routes: chat, messages (both streamed), both translations, responses, pass-through models/embeddings/" +
			"count_tokens/Anthropic models. Then the provider serves a page with a script as text/html (200, 404, 500), " +
			"application/xhtml+xml and image/svg+xml (200), on those routes and a pass-through file download: each must become an error of the " +
			"caller's dialect (the provider's status when it was an error, else 502), never the page.",
	})
	if !pass {
		t.Errorf("item 105 missed its target")
	}
	for _, p := range problems {
		t.Error(p)
	}
}

// secured reports the proxy's security headers: nosniff and its own CSP,
// alone.
func secured(h http.Header) bool {
	csp := h.Values("Content-Security-Policy")
	return h.Get("X-Content-Type-Options") == "nosniff" && len(csp) == 1 &&
		strings.Contains(csp[0], "default-src 'none'") && strings.Contains(csp[0], "frame-ancestors 'none'")
}
