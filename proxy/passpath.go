package proxy

import (
	"net/http"
	"net/url"
	"slices"
	"strings"

	"github.com/perpetuity/perpetuity/proxy/provider"
)

// Pass-through paths are the caller's, so they are checked before anything
// is sent: read from the path as it came on the wire (escapes and all, since
// an escaped separator must not turn into a real one on the way), each
// segment decoded once and held to the characters API ids use, and the
// whole matched against the provider's documented endpoints and methods
// (provider.Provider.Paths).
// The provider's URL is then built from the configured base and the decoded
// segments, each escaped again: nothing the caller sends becomes a path
// separator, a query or a fragment except the request's own query string.

// passthroughSegments reads the caller's path after /v1/ (of /v1/... or
// /k/<key>/v1/...) from the path as escaped on the wire, and decodes its
// segments, refusing what could reach another path than the one written.
func passthroughSegments(escaped string) ([]string, error) {
	rest := escaped
	if r, ok := strings.CutPrefix(rest, "/k/"); ok {
		_, rest, _ = strings.Cut(r, "/")
		rest = "/" + rest
	}
	rest, ok := strings.CutPrefix(rest, "/v1/")
	if !ok {
		return nil, errBadRequest("path: not under /v1/")
	}
	return decodeSegments(rest)
}

// decodeSegments decodes an escaped relative path segment by segment:
// every segment non-empty, not a dot segment, each decoded once to letters,
// digits and - _ . ~ : @ + = , only. That excludes, escaped or not, every
// separator (/ \ ? # ;), controls, spaces and % (an escape escaped again,
// %252F, would become a separator on a second decoding downstream).
func decodeSegments(rest string) ([]string, error) {
	raw := strings.Split(rest, "/")
	segs := make([]string, len(raw))
	for i, r := range raw {
		s, err := url.PathUnescape(r)
		switch {
		case err != nil:
			return nil, errBadRequest("path: segment %d has a malformed escape", i+1)
		case s == "":
			return nil, errBadRequest("path: segment %d is empty", i+1)
		case s == "." || s == "..":
			return nil, errBadRequest("path: segment %d is a dot segment", i+1)
		}
		for j := 0; j < len(s); j++ {
			if !isIDByte(s[j]) {
				return nil, errBadRequest("path: segment %d holds %q, which no endpoint or id has", i+1, s[j:j+1])
			}
		}
		segs[i] = s
	}
	return segs, nil
}

func isIDByte(b byte) bool {
	switch {
	case 'a' <= b && b <= 'z', 'A' <= b && b <= 'Z', '0' <= b && b <= '9':
		return true
	}
	return strings.IndexByte("-_.~:@+=,", b) >= 0
}

// checkQuery refuses a query string that could be read as more than a
// query: a fragment, or bytes no URL carries.
func checkQuery(q string) error {
	for i := 0; i < len(q); i++ {
		if b := q[i]; b == '#' || b <= ' ' || b >= 0x7f {
			return errBadRequest("query: holds %q", q[i:i+1])
		}
	}
	return nil
}

// matchPath finds the endpoint segs names: a 404 when none does, a 405
// (with the methods it takes) when it does not take method.
func matchPath(table []provider.PathShape, method string, segs []string) (allow []string, err error) {
	for _, sh := range table {
		if len(sh.Segs) != len(segs) {
			continue
		}
		match := true
		for i, p := range sh.Segs {
			if p != "*" && p != segs[i] {
				match = false
				break
			}
		}
		if match {
			allow = append(allow, sh.Methods...)
		}
	}
	switch {
	case len(allow) == 0:
		return nil, &APIError{Status: http.StatusNotFound, Kind: NotFound,
			Message: "no endpoint /v1/" + strings.Join(segs, "/") + " is passed through to the provider"}
	case !slices.Contains(allow, method):
		return allow, &APIError{Status: http.StatusMethodNotAllowed, Kind: InvalidRequest,
			Message: method + " is not allowed on /v1/" + strings.Join(segs, "/") + " (allowed: " + strings.Join(allow, ", ") + ")"}
	}
	return allow, nil
}

// upstreamURL is base (the configured provider URL) with segs appended,
// each escaped, and rawQuery as the query: the caller names a path under
// the base and nothing else.
func upstreamURL(base *url.URL, segs []string, rawQuery string) *url.URL {
	u := *base
	esc := make([]string, len(segs))
	for i, s := range segs {
		esc[i] = url.PathEscape(s)
	}
	u.Path = strings.TrimRight(base.Path, "/") + "/" + strings.Join(segs, "/")
	u.RawPath = strings.TrimRight(base.EscapedPath(), "/") + "/" + strings.Join(esc, "/")
	u.RawQuery, u.ForceQuery = rawQuery, false
	u.Fragment, u.RawFragment = "", ""
	return &u
}
