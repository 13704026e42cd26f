package bench

import (
	"testing"
	"time"
)

// TestDurTargetMiss: a miss too small for the millisecond's third decimal
// is said in µs, never as "missed by 0.000 ms".
func TestDurTargetMiss(t *testing.T) {
	t.Parallel()
	tests := []struct {
		got  time.Duration
		miss string
	}{
		{500 * time.Microsecond, ""},
		{500*time.Microsecond + 400*time.Nanosecond, "missed by 0.4 µs (1.0x the target)"},
		{506 * time.Microsecond, "missed by 6.0 µs (1.0x the target)"},
		{606 * time.Microsecond, "missed by 0.106 ms (1.2x the target)"},
	}
	for _, tt := range tests {
		got := durTarget("1", "x <= 0.5 ms", tt.got, 500*time.Microsecond, "")
		if got.Met != (tt.miss == "") || got.Miss != tt.miss {
			t.Errorf("%v: met %v, %q; want %q", tt.got, got.Met, got.Miss, tt.miss)
		}
	}
}
