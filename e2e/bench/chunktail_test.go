package bench

import (
	"strings"
	"testing"
	"time"
)

// stream is one stream's trace: the provider writes its events at the
// given offsets (µs) and each reaches the client way µs later.
func traced(start time.Time, sentUS []int, wayUS []int) Timing {
	var t Timing
	for k, s := range sentUS {
		at := start.Add(time.Duration(s) * time.Microsecond)
		t.Sent = append(t.Sent, at)
		t.Arrived = append(t.Arrived, at.Add(time.Duration(wayUS[k])*time.Microsecond))
	}
	return t
}

// TestChunkTail: a gap is split into the provider's own spacing of its two
// events and the second's way beyond the first's; each round's slowest
// gaps (p99 and beyond) and middle ones (45th to 55th) are set apart, on
// each side; a stream whose send times are missing or of another count
// is left out, not misread.
func TestChunkTail(t *testing.T) {
	t.Parallel()
	us := func(n int) time.Duration { return time.Duration(n) * time.Microsecond }
	t0 := time.Unix(1_700_000_000, 0)
	// 101 events 1000 µs apart with a way of 10 µs: 100 gaps of 1000 µs,
	// but for one event sent 300 µs late and two that took 200 µs more on
	// their way: gaps of 1300 and 1200 (700 and 800 after them).
	sent, way := make([]int, 101), make([]int, 101)
	for k := range sent {
		sent[k], way[k] = k*1000, 10
	}
	sent[40] += 300
	way[70] += 200
	way[71] += 200
	via := traced(t0, sent, way)
	// The direct side: one event sent 100 µs late.
	dsent := make1000(101)
	dsent[20] += 100
	direct := traced(t0, dsent, fill(101, 5))
	missing := Timing{Arrived: via.Arrived}                                 // no send times: left out
	short := Timing{Arrived: via.Arrived, Sent: via.Sent[:len(via.Sent)-1]} // another count: left out
	round := [2][]streamTrace{chunkTraces([]Timing{direct}), chunkTraces([]Timing{via, missing, short})}
	hop := []streamTrace{chunkTraces([]Timing{traced(t0, make1000(11), fill(11, 7))})[0]}
	tail := chunkTailOf([][2][]streamTrace{round, round}, [][]streamTrace{hop})

	v := tail.Via
	if v.Slow.N != 4 || v.Middle.N != 22 {
		t.Fatalf("slow %d, middle %d gaps over two rounds; want 4 (p99 and beyond of 100, twice) and 22", v.Slow.N, v.Middle.N)
	}
	// Slowest two each round: 1300 (sent 1300 apart, way +0) and 1200 (sent 1000, way +200).
	if v.Slow.Gap != us(1250) || v.Slow.Sent != us(1150) || v.Slow.Late != us(100) {
		t.Errorf("slow gaps %+v; want gap 1250µs, sent 1150µs, late 100µs", v.Slow)
	}
	if v.Middle.Gap != us(1000) || v.Middle.Sent != us(1000) || v.Middle.Late != 0 {
		t.Errorf("middle gaps %+v; want 1000µs, 1000µs, 0", v.Middle)
	}
	if d := tail.Direct; d.Slow.Gap != us(1050) || d.Slow.Sent != us(1050) || d.Slow.Late != 0 || d.Middle.N != 22 {
		t.Errorf("direct %+v; want the slowest gaps 1100 and 1000µs, all the provider's", d)
	}
	if tail.DirectWay.P50 != us(5) || tail.ViaWay.P50 != us(10) || tail.ViaWay.P99 != us(210) || tail.HopWay.P50 != us(7) {
		t.Errorf("ways: direct %v, via %v/%v, hop %v; want 5µs, 10/210µs, 7µs",
			tail.DirectWay.P50, tail.ViaWay.P50, tail.ViaWay.P99, tail.HopWay.P50)
	}
	line := chunkTailLine(tail)
	for _, want := range []string{"the 4 slowest gaps through Perpetuity", "were 1.25 ms on average against 1.00",
		"sent those events 1.15 ms apart", "through the plain Go proxy p50 0.007"} {
		if !strings.Contains(line, want) {
			t.Errorf("line lacks %q: %s", want, line)
		}
	}
	shares := chunkTailShares(tail)
	if !strings.Contains(shares, "by 0.250 ms through Perpetuity, 60% of it the provider's own spacing of the two events and 40%") ||
		!strings.Contains(shares, "directly by 0.050 ms, 100% and 0%") ||
		!strings.Contains(shares, "takes 0.210 ms at p99 through Perpetuity, 0.007 through the plain Go proxy and 0.005 direct") {
		t.Errorf("shares: %s", shares)
	}
	if chunkTailLine(chunkTailOf([][2][]streamTrace{{nil, round[1]}}, nil)) != "" || chunkTailShares(ChunkTail{}) != "" {
		t.Error("a side without traces must write no line")
	}
}

func make1000(n int) []int {
	out := make([]int, n)
	for k := range out {
		out[k] = k * 1000
	}
	return out
}

func fill(n, v int) []int {
	out := make([]int, n)
	for k := range out {
		out[k] = v
	}
	return out
}

// TestFirstID: the reply's id is the first "id" member of the first
// event's data, in each dialect's first event.
func TestFirstID(t *testing.T) {
	t.Parallel()
	tests := []struct{ data, want string }{
		{`{"id":"chatcmpl-abc","object":"chat.completion.chunk","choices":[]}`, "chatcmpl-abc"},
		{`{"type":"message_start","message":{"id":"msg_01x","type":"message"}}`, "msg_01x"},
		{`{"type":"response.created","response":{"id":"resp_9","object":"response"}}`, "resp_9"},
		{`{"object":"chat.completion.chunk"}`, ""},
		{`{"id":"unterminated`, ""},
		{``, ""},
	}
	for _, tt := range tests {
		if got := firstID([]byte(tt.data)); got != tt.want {
			t.Errorf("firstID(%s) = %q, want %q", tt.data, got, tt.want)
		}
	}
}
