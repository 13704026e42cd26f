package memory

import (
	"math"
	"testing"
)

// TestColdAt: the warm stretch ends where the latest activation's decay
// crosses the warm threshold.
func TestColdAt(t *testing.T) {
	t.Parallel()
	tr := Trajectory{Tau: 800, Born: Activation{TLast: 1000, Peak: 1}, Reheats: []Activation{{TLast: 3100, Peak: 0.7}}, Now: 4200}
	c := tr.ColdAt()
	if h := tr.At(c); h >= WarmThreshold || tr.At(c-1) < WarmThreshold {
		t.Fatalf("cold at %d: heat %v there, %v just before", c, h, tr.At(c-1))
	}
	if want := 3100 + int64(math.Ceil(800*math.Log(0.7/WarmThreshold))); c != want {
		t.Fatalf("cold at %d, want %d", c, want)
	}
	for _, d := range []Trajectory{{Tau: 0, Born: Activation{TLast: 5, Peak: 1}}, {Tau: 10, Born: Activation{TLast: 5, Peak: 0.01}}} {
		if got := d.ColdAt(); got != 5 {
			t.Fatalf("%+v cold at %d, want its last activation", d, got)
		}
	}
}
