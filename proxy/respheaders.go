package proxy

import (
	"fmt"
	"mime"
	"net/http"
)

// The proxy answers on the console's origin, so whatever a provider says
// in its response headers or serves as a page acts there: a cookie, a CORS
// grant, a policy, a refresh or a redirect from a hostile, compromised or
// misconfigured provider would be the console's. Only what an API client
// reads of the provider's headers is relayed and only bodies of a passive
// type are served (proxy/provider, respheaders.go), the proxy's own headers
// are the proxy's, and every proxy response forbids rendering and sniffing.

// proxyCSP is the policy of every proxy response: nothing it could be
// rendered as may load, run or be framed.
const proxyCSP = "default-src 'none'; frame-ancestors 'none'; sandbox"

// setSecurityHeaders marks a proxy response as data. Set before the
// handler runs, so errors carry them too; the provider's headers never
// replace them (provider.CopyResponseHeaders).
func setSecurityHeaders(h http.Header) {
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Content-Security-Policy", proxyCSP)
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
