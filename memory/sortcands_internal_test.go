package memory

import (
	"fmt"
	"math"
	"math/rand/v2"
	"sort"
	"testing"
)

// TestSortCands: the keyed sort orders candidates exactly as comparing
// them does (mandatory first, then heat, then the newer), ties in heat,
// negative heats and -0 included.
func TestSortCands(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name      string
		n         int
		heats     []float64 // drawn from
		mandatory int       // one in this many is mandatory (0: none)
	}{
		{"empty", 0, []float64{1}, 2},
		{"one", 1, []float64{1}, 2},
		{"all mandatory", 50, []float64{0.5, 0.25, 2}, 1},
		{"none mandatory", 200, []float64{0, 1, 1e-9, 3.5}, 0},
		{"ties broken by id", 300, []float64{1, 2}, 5},
		{"signs and zeros", 300, []float64{-1, -0.5, math.Copysign(0, -1), 0, 0.5, math.SmallestNonzeroFloat64, -math.SmallestNonzeroFloat64, math.MaxFloat64}, 7},
		{"one ulp apart", 300, []float64{1, math.Nextafter(1, 2), math.Nextafter(1, 0)}, 9},
		{"large", 3000, nil, 30},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r := rand.New(rand.NewPCG(3, uint64(tc.n)))
			cs := make([]cand, tc.n)
			for i := range cs {
				h := r.Float64() * 10
				if tc.heats != nil {
					h = tc.heats[r.IntN(len(tc.heats))]
				}
				cs[i] = cand{id: int64(r.IntN(tc.n*3 + 1)), heat: h, rank: i, mandatory: tc.mandatory > 0 && r.IntN(tc.mandatory) == 0}
			}
			// ids are unique in a frame (candidates come from a map)
			seen := map[int64]bool{}
			for i := range cs {
				for seen[cs[i].id] {
					cs[i].id++
				}
				seen[cs[i].id] = true
			}
			want := append([]cand(nil), cs...)
			sort.Slice(want, func(i, j int) bool {
				a, b := want[i], want[j]
				if a.mandatory != b.mandatory {
					return a.mandatory
				}
				if a.heat != b.heat {
					return a.heat > b.heat
				}
				return a.id > b.id
			})
			got := append([]cand(nil), cs...)
			sortCands(got)
			if fmt.Sprint(got) != fmt.Sprint(want) {
				t.Fatalf("sortCands:\n got %v\nwant %v", got, want)
			}
		})
	}
}

// BenchmarkSortCands: a 250k-item frame of the bench ranks ~530
// candidates at the median (400 warm, the matches, their neighbours).
func BenchmarkSortCands(b *testing.B) {
	r := rand.New(rand.NewPCG(1, 2))
	src := make([]cand, 530)
	for i := range src {
		src[i] = cand{id: int64(i), heat: float64(r.IntN(50)) / 7, mandatory: r.IntN(30) == 0}
	}
	buf := make([]cand, len(src))
	for b.Loop() {
		copy(buf, src)
		sortCands(buf)
	}
}
