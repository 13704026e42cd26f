package arena

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestCodeSumsEqualGo holds the vector kernel to the Go loop on tables of
// random, extreme and sign-alternating entries, codes of random and
// all-255 bytes (the last entry of every table), and every count of codes
// up to past a block.
func TestCodeSumsEqualGo(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name  string
		entry func(r *rand.Rand, b, x int) int16
		code  func(r *rand.Rand) uint64
	}{
		{"random", func(r *rand.Rand, _, _ int) int16 { return int16(r.IntN(1<<16) - 1<<15) },
			func(r *rand.Rand) uint64 { return r.Uint64() }},
		{"extremes, last entries", func(_ *rand.Rand, b, x int) int16 {
			if (b+x)%2 == 0 {
				return math.MinInt16
			}
			return math.MaxInt16
		}, func(*rand.Rand) uint64 { return math.MaxUint64 }},
		{"negative, first entries", func(_ *rand.Rand, b, x int) int16 { return int16(-1 - b - x) },
			func(*rand.Rand) uint64 { return 0 }},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			r := rand.New(rand.NewPCG(3, 4))
			st := new(signTables)
			for b := range st.t {
				for x := range st.t[b] {
					st.t[b][x] = c.entry(r, b, x)
				}
			}
			for _, n := range []int{1, 2, 3, 7, 8, 9, 31, 255, 256, 257, 700} {
				code := make([]uint64, n*codeWords)
				for i := range code {
					code[i] = c.code(r)
				}
				got, want := make([]int32, n), make([]int32, n)
				codeSums(&st.t, code, got)
				codeSumsGo(&st.t, code, want)
				for j := range got {
					if got[j] != want[j] {
						t.Fatalf("n=%d item %d: kernel %d, Go %d", n, j, got[j], want[j])
					}
				}
			}
		})
	}
}

// TestScaledEqualsEstimate: the first pass's estimate from a block sum is
// the per-item estimate, bit for bit, items without a vector included.
func TestScaledEqualsEstimate(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(5, 6))
	a := New(Options{Dims: 16})
	var items []Item
	for i := range 300 {
		v := make([]int8, 16)
		for k := range v {
			v[k] = int8(r.IntN(256) - 128)
		}
		it := Item{ID: int64(i + 1), User: 1, Terms: []TermID{1}, Freqs: []uint16{1}, Length: 1, Dense: v, DenseInv: float32(1 / (1 + r.Float64()*300))}
		if i%17 == 0 {
			it.Dense, it.DenseInv = nil, 0
		}
		items = append(items, it)
	}
	a.Add(items...)
	q := make([]int8, 16)
	for k := range q {
		q[k] = int8(r.IntN(256) - 128)
	}
	tables := newSignTables(a.rot, q)
	checked := 0
	for _, c := range a.chunks {
		sums := make([]int32, c.n())
		tables.sums(c, 0, sums)
		for j := range c.n() {
			got := tables.scaled(sums[j], c.dw[j], 0.0123)
			want := tables.estimate(c, j, 0.0123)
			if math.Float64bits(got) != math.Float64bits(want) {
				t.Fatalf("item %d: scaled %v, estimate %v", j, got, want)
			}
			checked++
		}
	}
	if checked != len(items) {
		t.Fatalf("checked %d items of %d", checked, len(items))
	}
}
