package proxy

import (
	"errors"
	"net/url"
	"path"
	"reflect"
	"strings"
	"testing"
)

// FuzzPassthroughPath: whatever path and query a caller writes, either it
// is refused with a 400, or the provider's URL is the configured base with
// plain id segments under it, no traversal, nothing turned separator,
// query or fragment, and the caller's query as the query.
func FuzzPassthroughPath(f *testing.F) {
	for _, s := range [][2]string{
		{"models", ""}, {"models/gpt-4o", "limit=2"}, {"models/ft%3Agpt-4o%3Aorg", ""}, {"messages/count_tokens", "beta=true"},
		{"..%2F..%2Fadmin", ""}, {"models%3Fx=1", ""}, {"models%23f", ""}, {"models/%2e%2E", ""}, {"models/..", ""},
		{"models//x", ""}, {"models/", ""}, {"models%00", ""}, {"a%252Fb", ""}, {"models%5Cadmin", ""}, {"models", "a=1#frag"},
		{"files/file-1/content", "x=%2F..%2F"}, {"%zz", ""}, {"models;jsessionid=1", ""}, {"models/\u00e9", ""},
	} {
		f.Add(s[0], s[1])
	}
	base, err := url.Parse("https://api.example.test/v1")
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, rest, query string) {
		segs, err := passthroughSegments("/v1/" + rest)
		keyed, kerr := passthroughSegments("/k/ppk_x/v1/" + rest)
		if !reflect.DeepEqual(segs, keyed) || (err == nil) != (kerr == nil) {
			t.Fatalf("/v1/%s and /k/<key>/v1/%s read differently: %q %v / %q %v", rest, rest, segs, err, keyed, kerr)
		}
		if err != nil {
			var ae *APIError
			if !errors.As(err, &ae) || ae.Status != 400 {
				t.Fatalf("refusal %v is not a 400", err)
			}
			return
		}
		for _, s := range segs {
			if s == "" || s == "." || s == ".." || strings.ContainsAny(s, "/\\?#%;") {
				t.Fatalf("segment %q of %q passed", s, rest)
			}
			for i := 0; i < len(s); i++ {
				if !isIDByte(s[i]) {
					t.Fatalf("segment %q of %q passed with byte %q", s, rest, s[i])
				}
			}
		}
		if checkQuery(query) != nil {
			return
		}
		got, err := url.Parse(upstreamURL(base, segs, query).String())
		if err != nil {
			t.Fatalf("built URL does not parse: %v", err)
		}
		want := "/v1/" + strings.Join(segs, "/")
		if got.Scheme != base.Scheme || got.Host != base.Host || got.User != nil || got.Path != want || path.Clean(got.Path) != got.Path ||
			got.RawQuery != query || got.Fragment != "" {
			t.Fatalf("%q?%q became %s (path %q, query %q, fragment %q), want path %q", rest, query, got, got.Path, got.RawQuery, got.Fragment, want)
		}
	})
}
