package bench

import (
	"testing"
	"time"
)

func TestServerTimingHeader(t *testing.T) {
	t.Parallel()
	tests := []struct {
		header           string
		memory, upstream time.Duration
	}{
		{"memory;dur=4.250, upstream;dur=0.981", 4250 * time.Microsecond, 981 * time.Microsecond},
		{"upstream;dur=12", 0, 12 * time.Millisecond},
		{"memory;dur=1.5", 1500 * time.Microsecond, 0},
		{"cdn-cache;desc=HIT, memory;dur=2", 2 * time.Millisecond, 0},
		{"memory;desc=x, upstream;dur=abc", 0, 0},
		{"", 0, 0},
	}
	for _, tt := range tests {
		t.Run(tt.header, func(t *testing.T) {
			t.Parallel()
			m, u := serverTiming(tt.header)
			if m != tt.memory || u != tt.upstream {
				t.Errorf("serverTiming(%q) = %v, %v; want %v, %v", tt.header, m, u, tt.memory, tt.upstream)
			}
		})
	}
}
