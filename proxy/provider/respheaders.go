package provider

import (
	"mime"
	"net/http"
	"strings"
)

// The proxy answers on the console's origin, so whatever a provider says
// in its response headers or serves as a page acts there. Only what an API
// client reads of the provider's headers is relayed, and a body is served
// only as a type a browser does not render or run.

// CopyResponseHeaders copies the provider's headers a client reads:
// request ids, rate limits and retry hints. The body's type is the
// caller's to set (ServedContentType); the proxy's own headers and its
// security headers are never overwritten.
func CopyResponseHeaders(dst, src http.Header) {
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

// ServedContentType decides how a pass-through reply's body is served.
// The API's own types (JSON, event streams, plain text, JSON lines) are
// served as they came. Markup and script (HTML, XHTML, SVG, XML,
// JavaScript) are never served: ok is false and the reply becomes an
// error. Anything else, or no type at all (file contents, audio), is a
// download: its type if it is a passive one, else application/octet-stream,
// with Content-Disposition: attachment, so that a browser saves it
// rather than renders it.
func ServedContentType(ct string) (typ, disposition string, ok bool) {
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
