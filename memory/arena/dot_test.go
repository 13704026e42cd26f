package arena

import (
	"math/rand/v2"
	"testing"
)

// TestDot8EqualsGo holds the vector kernel to the Go loop: every length up
// to past two vector steps, the extreme components included, and vectors
// taken at odd offsets (an item's vector starts anywhere in its chunk).
func TestDot8EqualsGo(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(7, 8))
	fill := func(v []int8, kind int) {
		for i := range v {
			switch kind {
			case 0:
				v[i] = int8(r.IntN(256) - 128)
			case 1:
				v[i] = -128
			default:
				v[i] = 127
			}
		}
	}
	cases := []struct {
		name   string
		ka, kb int
	}{
		{"random", 0, 0},
		{"min times min", 1, 1},
		{"min times max", 1, 2},
		{"max times max", 2, 2},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			for n := 0; n <= 140; n++ {
				for off := range 3 {
					a := make([]int8, n+off)[off:]
					b := make([]int8, n+off+5)[off:]
					fill(a, c.ka)
					fill(b, c.kb)
					if got, want := dot8(a, b), dotGo(a, b[:n]); got != want {
						t.Fatalf("n=%d off=%d: dot8 %d, Go %d", n, off, got, want)
					}
				}
			}
		})
	}
}
