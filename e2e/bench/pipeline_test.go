package bench

import (
	"fmt"
	"slices"
	"testing"
)

// TestPipelineSidesAskApart: the two pipeline sides on the v3 tenant (the
// provider answering at once, and in 20 ms) ask no question the other
// asks, in every mode. A question asked again in the same conversation is
// a retry: nothing is stored and the frame scans twice, which the 20 ms
// row measured in place of a turn until its side started past the other's.
func TestPipelineSidesAskApart(t *testing.T) {
	t.Parallel()
	for _, mode := range []string{"full", "quick", "smoke"} {
		t.Run(mode, func(t *testing.T) {
			t.Parallel()
			cfg, err := ModeConfig(mode)
			if err != nil {
				t.Fatal(err)
			}
			var lr liveRequests
			for i := range cfg.questions() {
				lr.text = append(lr.text, fmt.Sprintf("q%d", i))
				lr.user = append(lr.user, int64(i%10+1))
			}
			asked := func(s liveRequests) []string {
				var out []string
				for i := range cfg.pipelineAsks() {
					out = append(out, s.text[i%len(s.text)])
				}
				return out
			}
			first, second := asked(lr.from(0)), asked(lr.from(len(lr.text)/2))
			for _, q := range second {
				if slices.Contains(first, q) {
					t.Fatalf("%s: both sides ask %s (%d questions, %d asked by each)", mode, q, len(lr.text), cfg.pipelineAsks())
				}
			}
		})
	}
}

func TestLiveRequestsFrom(t *testing.T) {
	t.Parallel()
	lr := liveRequests{text: []string{"a", "b", "c", "d"}, user: []int64{1, 2, 3, 4}}
	for _, tc := range []struct {
		i    int
		text []string
		user []int64
	}{
		{0, []string{"a", "b", "c", "d"}, []int64{1, 2, 3, 4}},
		{1, []string{"b", "c", "d", "a"}, []int64{2, 3, 4, 1}},
		{3, []string{"d", "a", "b", "c"}, []int64{4, 1, 2, 3}},
		{6, []string{"c", "d", "a", "b"}, []int64{3, 4, 1, 2}},
	} {
		got := lr.from(tc.i)
		if !slices.Equal(got.text, tc.text) || !slices.Equal(got.user, tc.user) {
			t.Errorf("from(%d) = %v %v, want %v %v", tc.i, got.text, got.user, tc.text, tc.user)
		}
		if lr.text[0] != "a" || lr.user[0] != 1 {
			t.Fatalf("from(%d) changed the list it rotated: %v %v", tc.i, lr.text, lr.user)
		}
	}
}
