package bench

import (
	"fmt"
	"testing"
	"time"
)

// TestStreamTail: the slow group is each round's first events at or
// beyond its p99 by the proxied time, the middle its 45th to 55th
// percentile, and what Server-Timing does not cover is the rest.
func TestStreamTail(t *testing.T) {
	t.Parallel()
	us := func(n int) time.Duration { return time.Duration(n) * time.Microsecond }
	var round []streamPair
	for i := range 100 {
		// Proxied first events of 300..399 µs, the slowest (399) with a
		// provider that answered late and a direct side that did not.
		via := Timing{TTFB: us(300 + i), Forward: us(50), Upstream: us(200)}
		if i == 99 {
			via.Upstream = us(300)
		}
		round = append(round, streamPair{direct: Timing{TTFB: us(250)}, via: via})
	}
	// Sorting is the tail's job: hand it the round shuffled.
	round[0], round[99] = round[99], round[0]
	tail := streamTailOf([][]streamPair{round, nil})
	slow, mid := tail.Slow, tail.Middle
	if slow.N != 2 || mid.N != 11 {
		t.Fatalf("slow %d, middle %d turns; want 2 (p99 and beyond of 100) and 11", slow.N, mid.N)
	}
	if want := (us(398) + us(399)) / 2; slow.TTFB != want {
		t.Errorf("slow TTFB %v, want %v", slow.TTFB, want)
	}
	if want := (us(200) + us(300)) / 2; slow.Upstream != want || slow.Rest != slow.TTFB-us(50)-want {
		t.Errorf("slow upstream %v rest %v: the late provider is not where it belongs", slow.Upstream, slow.Rest)
	}
	if mid.TTFB != us(349) || mid.Upstream != us(200) || mid.Rest != us(99) || mid.Direct != us(250) {
		t.Errorf("middle %+v, want TTFB 349µs, upstream 200µs, rest 99µs, direct 250µs", mid)
	}
	if streamTailLine(StreamTail{Slow: slow, Middle: StreamGroup{}}) != "" || streamTailLine(tail) == "" {
		t.Error("the line is written only when both groups have events")
	}
}

// TestStreamTailFewStreams: in rounds of a few streams the slow and middle
// groups never share a stream.
func TestStreamTailFewStreams(t *testing.T) {
	t.Parallel()
	tests := []struct {
		perRound, slow, middle int
	}{
		{1, 1, 0},
		{2, 1, 1},
		{3, 1, 1},
		{10, 1, 2},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprint(tt.perRound), func(t *testing.T) {
			t.Parallel()
			var round []streamPair
			for i := range tt.perRound {
				round = append(round, streamPair{via: Timing{TTFB: time.Duration(i+1) * time.Millisecond}})
			}
			tail := streamTailOf([][]streamPair{round})
			if tail.Slow.N != tt.slow || tail.Middle.N != tt.middle {
				t.Fatalf("slow %d, middle %d; want %d, %d", tail.Slow.N, tail.Middle.N, tt.slow, tt.middle)
			}
			if tail.Middle.N > 0 && tail.Middle.TTFB >= tail.Slow.TTFB {
				t.Errorf("the middle (%v) holds the slowest stream (%v)", tail.Middle.TTFB, tail.Slow.TTFB)
			}
		})
	}
}
