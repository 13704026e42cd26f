package provider

import "testing"

// TestServedContentType: how a pass-through reply's body is served, by
// the type the provider gave it.
func TestServedContentType(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		in, typ, disposition string
		ok                   bool
	}{
		{"application/json", "application/json", "", true},
		{"application/json; charset=utf-8", "application/json; charset=utf-8", "", true},
		{"application/problem+json", "application/problem+json", "", true},
		{"text/event-stream", "text/event-stream", "", true},
		{"text/plain; charset=utf-8", "text/plain; charset=utf-8", "", true},
		{"application/x-ndjson", "application/x-ndjson", "", true},
		{"audio/mpeg", "audio/mpeg", "attachment", true},
		{"image/png", "image/png", "attachment", true},
		{"application/octet-stream", "application/octet-stream", "attachment", true},
		{"", "application/octet-stream", "attachment", true},
		{"not a type", "application/octet-stream", "attachment", true},
		{"text/csv", "application/octet-stream", "attachment", true},
		{"text/html", "", "", false},
		{"TEXT/HTML; charset=utf-8", "", "", false},
		{"application/xhtml+xml", "", "", false},
		{"image/svg+xml", "", "", false},
		{"text/xml", "", "", false},
		{"application/javascript", "", "", false},
		{"text/ecmascript", "", "", false},
	} {
		typ, disp, ok := ServedContentType(c.in)
		if typ != c.typ || disp != c.disposition || ok != c.ok {
			t.Errorf("%q: served as %q %q %v, want %q %q %v", c.in, typ, disp, ok, c.typ, c.disposition, c.ok)
		}
	}
}
