package web

import (
	"strings"
	"testing"
)

func TestExportFilename(t *testing.T) {
	t.Parallel()
	cases := []struct{ user, want string }{
		{"caroline", "perpetuity-caroline.jsonl"},
		{"Ann Lee/../x", "perpetuity-Ann_Lee_.._x.jsonl"},
		{"ünïcode", "perpetuity-n_code.jsonl"},
		{"...", "perpetuity-user.jsonl"},
		{`a"b;c`, "perpetuity-a_b_c.jsonl"},
	}
	for _, tc := range cases {
		if got := exportFilename(tc.user); got != tc.want {
			t.Errorf("exportFilename(%q) = %q, want %q", tc.user, got, tc.want)
		}
	}
	if got := exportFilename(strings.Repeat("a", 500)); len(got) > 100 {
		t.Errorf("a long name gives a %d-byte filename", len(got))
	}
}
