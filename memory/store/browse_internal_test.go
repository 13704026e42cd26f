package store

import "testing"

func TestLikePatternEscapes(t *testing.T) {
	t.Parallel()
	cases := map[string]string{``: ``, `plain`: `plain`, `50%_off\`: `50\%\_off\\`, `é%`: `é\%`}
	for in, want := range cases {
		if got := likePattern(in); got != want {
			t.Errorf("likePattern(%q) = %q, want %q", in, got, want)
		}
	}
}
