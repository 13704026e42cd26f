package proxy

import (
	"fmt"
	"mime"
	"net/http"
	"strings"
)

// The proxy answers on the console's origin, so whatever a provider says
// in its response headers or serves as a page acts there: a cookie, a CORS
// grant, a policy, a refresh or a redirect from a hostile, compromised or
// misconfigured provider would be the console's. Only what an API client
// reads of the provider's headers is relayed, the proxy's own headers are
// the proxy's, and every proxy response forbids rendering and sniffing.

// proxyCSP is the policy of every proxy response: nothing it could be
// rendered as may load, run or be framed.
const proxyCSP = "default-src 'none'; frame-ancestors 'none'; sandbox"

// setSecurityHeaders marks a proxy response as data. Set before the
// handler runs, so errors carry them too; the provider's headers never
// replace them (relayedResponseHeader).
func setSecurityHeaders(h http.Header) {
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Content-Security-Policy", proxyCSP)
}

// copyResponseHeaders copies the provider's headers a client reads:
// request ids, rate limits and retry hints. The body's type is the
// caller's to set (servedContentType); the proxy's own headers and its
// security headers are never overwritten.
func copyResponseHeaders(dst, src http.Header) {
	for k, vs := range src {
		if relayedResponseHeader(k) {
			dst[k] = append([]string(nil), vs...)
		}
	}
}

// relayedResponseHeader reports a provider response header (canonical
// name) that reaches the client.
func relayedResponseHeader(k string) bool {
	switch k {
	case "X-Request-Id", "Request-Id", "Retry-After", "Retry-After-Ms", "X-Should-Retry":
		// The SDKs read the last three to decide whether and when to retry.
		return true
	}
	for _, p := range []string{"Openai-", "Anthropic-", "X-Ratelimit-"} {
		if strings.HasPrefix(k, p) {
			return true
		}
	}
	return false
}

// servedContentType decides how a pass-through reply's body is served.
// The API's own types (JSON, event streams, plain text, JSON lines) are
// served as they came. Markup and script (HTML, XHTML, SVG, XML,
// JavaScript) are never served: ok is false and the reply becomes an
// error. Anything else, or no type at all (file contents, audio), is a
// download: its type if it is a passive one, else application/octet-stream,
// with Content-Disposition: attachment, so that a browser saves it
// rather than renders it.
func servedContentType(ct string) (typ, disposition string, ok bool) {
	mt, _, err := mime.ParseMediaType(ct)
	if err != nil || ct == "" {
		return "application/octet-stream", "attachment", true
	}
	switch {
	case isActiveMedia(mt):
		return "", "", false
	case mt == "application/json", strings.HasPrefix(mt, "application/") && strings.HasSuffix(mt, "+json"),
		mt == "text/event-stream", mt == "text/plain",
		mt == "application/x-ndjson", mt == "application/jsonl", mt == "application/x-jsonl", mt == "application/jsonlines":
		return ct, "", true
	case strings.HasPrefix(mt, "audio/"), strings.HasPrefix(mt, "video/"),
		mt == "image/png", mt == "image/jpeg", mt == "image/gif", mt == "image/webp",
		mt == "application/octet-stream", mt == "application/pdf", mt == "application/zip":
		return mt, "attachment", true
	}
	return "application/octet-stream", "attachment", true
}

// isActiveMedia tells the types a browser renders as a document or runs.
func isActiveMedia(mt string) bool {
	for _, s := range []string{"html", "xml", "svg", "javascript", "ecmascript"} {
		if strings.Contains(mt, s) {
			return true
		}
	}
	return false
}

// unservedBody is the error a provider reply of a type the proxy does not
// serve becomes: the provider's status when it was an error, else a 502.
func unservedBody(status int, ct string) *APIError {
	what := "a body of no type"
	if mt, _, err := mime.ParseMediaType(ct); err == nil {
		what = "a " + mt + " body"
	}
	msg := fmt.Sprintf("provider answered HTTP %d with %s, which the proxy does not relay", status, what)
	if status < 400 {
		status = http.StatusBadGateway
	}
	return &APIError{Status: status, Kind: UpstreamError, Message: msg}
}

// redirected is what a provider's 3xx becomes: redirects are never
// followed (the target could be anything, an internal address included,
// and would get the caller's credential and request) nor handed to the
// client as a live redirect.
func redirected(status int) *APIError {
	return &APIError{Status: http.StatusBadGateway, Kind: UpstreamError,
		Message: fmt.Sprintf("provider answered with a redirect (HTTP %d); the proxy does not follow provider redirects", status)}
}

func isRedirect(status int) bool { return status >= 300 && status < 400 }
