package arena

import (
	"math"
	"math/rand/v2"
	"testing"
)

// textbookHadamard is the transform as first written, the reference.
func textbookHadamard(x *[codeDims]float64) {
	for h := 1; h < codeDims; h *= 2 {
		for i := 0; i < codeDims; i += 2 * h {
			y := x[i : i+2*h : i+2*h]
			for j := range h {
				a, b := y[j], y[j+h]
				y[j], y[j+h] = a+b, a-b
			}
		}
	}
}

// TestHadamardMatchesTextbook: the unrolled transform gives the textbook
// loop's floats bit for bit (a vector's code must not depend on which
// build coded it), on integer vectors as the arena's and on arbitrary ones.
func TestHadamardMatchesTextbook(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(1, 2))
	for n := range 2000 {
		var x [codeDims]float64
		for k := range x {
			if n%2 == 0 {
				x[k] = float64(r.IntN(255) - 127)
			} else {
				x[k] = r.NormFloat64() * math.Pow(10, float64(r.IntN(20)-10))
			}
		}
		want := x
		textbookHadamard(&want)
		hadamard(&x)
		for k := range x {
			if math.Float64bits(x[k]) != math.Float64bits(want[k]) {
				t.Fatalf("vector %d component %d: %v, want %v", n, k, x[k], want[k])
			}
		}
	}
}

func BenchmarkHadamard(b *testing.B) {
	var x [codeDims]float64
	for k := range x {
		x[k] = float64(k%7) - 3
	}
	b.Run("textbook", func(b *testing.B) {
		for b.Loop() {
			textbookHadamard(&x)
		}
	})
	b.Run("unrolled", func(b *testing.B) {
		for b.Loop() {
			hadamard(&x)
		}
	})
}
