package bench

import (
	"testing"
	"time"
)

func TestServerTimingHeader(t *testing.T) {
	t.Parallel()
	tests := []struct {
		header                    string
		memory, forward, upstream time.Duration
	}{
		{"memory;dur=4.250, forward;dur=4.5, upstream;dur=0.981", 4250 * time.Microsecond, 4500 * time.Microsecond, 981 * time.Microsecond},
		{"forward;dur=0.1, upstream;dur=12", 0, 100 * time.Microsecond, 12 * time.Millisecond},
		{"memory;dur=1.5", 1500 * time.Microsecond, 0, 0},
		{"cdn-cache;desc=HIT, memory;dur=2", 2 * time.Millisecond, 0, 0},
		{"memory;desc=x, upstream;dur=abc", 0, 0, 0},
		{"memory;desc=\"capture\";dur = 3, edge;dur=9,upstream;dur=1", 3 * time.Millisecond, 0, time.Millisecond},
		{"", 0, 0, 0},
	}
	for _, tt := range tests {
		t.Run(tt.header, func(t *testing.T) {
			t.Parallel()
			m, f, u := serverTiming(tt.header)
			if m != tt.memory || f != tt.forward || u != tt.upstream {
				t.Errorf("serverTiming(%q) = %v, %v, %v; want %v, %v, %v", tt.header, m, f, u, tt.memory, tt.forward, tt.upstream)
			}
		})
	}
}
