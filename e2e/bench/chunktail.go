package bench

import (
	"context"
	"fmt"
	"time"
)

// The per-chunk p99 is the p99 of the gaps between events as the client
// reads them, and a gap is two things: how far apart the provider sent the
// two events (its pacing, a timer on the same shared cores) and how much
// longer the second took to reach the client than the first (the hops, the
// relay). The fake provider notes when it began to write each event
// (fakeprovider.Recorded.Sent), so each round's slowest gaps, on each side,
// are split into the two and set beside its middle ones.

// ChunkTail is the gaps at or beyond each round's p99 beside its middle
// ones (45th to 55th percentile), through Perpetuity and direct, means
// over the rounds; the Ways are an event's way from the provider's write
// to the client's read (each round's percentiles, medians over the
// rounds): direct, through Perpetuity, and through the plain Go proxy in
// the same rounds.
type ChunkTail struct {
	Via, Direct               ChunkSide
	ViaWay, DirectWay, HopWay Rounds
}

// ChunkSide is one side's slowest and middle gaps.
type ChunkSide struct {
	Slow, Middle GapGroup
}

// GapGroup is the mean of a set of gaps: the gap the client saw, how far
// apart the provider sent its two events, and what the second event's way
// took beyond the first's (Gap - Sent).
type GapGroup struct {
	N               int
	Gap, Sent, Late time.Duration
}

// gapTrace is one gap, with the provider's own spacing of its events.
type gapTrace struct{ gap, sent time.Duration }

// streamTrace is one stream's events as read and as sent; sent is nil when
// the provider's record was not found or holds another number of events.
type streamTrace struct {
	arrived, sent []time.Time
}

// chunkTraces pairs each stream's arrivals with the provider's send times
// its caller looked up (sentTimes).
func chunkTraces(ts []Timing) []streamTrace {
	out := make([]streamTrace, 0, len(ts))
	for _, t := range ts {
		st := streamTrace{arrived: t.Arrived}
		if len(t.Sent) == len(t.Arrived) {
			st.sent = t.Sent
		}
		out = append(out, st)
	}
	return out
}

// sentTimes wraps a stream's caller: as soon as a stream ended, the fake
// provider's send times of its reply are looked up by its id, before the
// fake forgets them (it is reset every 256 requests, server.go).
func (r *rig) sentTimes(call func(ctx context.Context, side, i int) (Timing, error)) func(ctx context.Context, side, i int) (Timing, error) {
	return func(ctx context.Context, side, i int) (Timing, error) {
		t, err := call(ctx, side, i)
		if err == nil && t.ReplyID != "" {
			t.Sent = r.fake.SentTimes(t.ReplyID)
		}
		return t, err
	}
}

func gapsOf(ss []streamTrace) []gapTrace {
	var out []gapTrace
	for _, s := range ss {
		if s.sent == nil {
			continue
		}
		for k := 1; k < len(s.arrived); k++ {
			out = append(out, gapTrace{gap: s.arrived[k].Sub(s.arrived[k-1]), sent: s.sent[k].Sub(s.sent[k-1])})
		}
	}
	return out
}

func waysOf(ss []streamTrace) []time.Duration {
	var out []time.Duration
	for _, s := range ss {
		for k := range s.sent {
			out = append(out, s.arrived[k].Sub(s.sent[k]))
		}
	}
	return out
}

// chunkTailOf folds the rounds' streams, each round a pair of sides
// (direct, through Perpetuity), and the plain Go proxy's streams.
func chunkTailOf(rounds [][2][]streamTrace, hop [][]streamTrace) ChunkTail {
	var via, direct [][]gapTrace
	var viaWay, directWay, hopWay [][]time.Duration
	for _, r := range rounds {
		direct, via = append(direct, gapsOf(r[0])), append(via, gapsOf(r[1]))
		directWay, viaWay = append(directWay, waysOf(r[0])), append(viaWay, waysOf(r[1]))
	}
	for _, r := range hop {
		hopWay = append(hopWay, waysOf(r))
	}
	return ChunkTail{Via: chunkSideOf(via), Direct: chunkSideOf(direct), ViaWay: Fold(viaWay), DirectWay: Fold(directWay), HopWay: Fold(hopWay)}
}

func chunkSideOf(rounds [][]gapTrace) ChunkSide {
	var slow, middle []gapTrace
	for _, r := range rounds {
		s, m := slowAndMiddle(r, func(g gapTrace) time.Duration { return g.gap })
		slow, middle = append(slow, s...), append(middle, m...)
	}
	return ChunkSide{Slow: meanGaps(slow), Middle: meanGaps(middle)}
}

func meanGaps(gs []gapTrace) GapGroup {
	g := GapGroup{N: len(gs)}
	if g.N == 0 {
		return g
	}
	for _, x := range gs {
		g.Gap += x.gap
		g.Sent += x.sent
	}
	n := time.Duration(g.N)
	g.Gap, g.Sent = g.Gap/n, g.Sent/n
	g.Late = g.Gap - g.Sent
	return g
}

// chunkTailLine says where the slowest gaps' time came from, on both sides.
func chunkTailLine(t ChunkTail) string {
	v, d := t.Via, t.Direct
	if v.Slow.N == 0 || v.Middle.N == 0 || d.Slow.N == 0 || d.Middle.N == 0 {
		return "" // no send times to split by
	}
	way := fmt.Sprintf(" An event's way from the provider's write to the client's read: direct p50 %s ms, p99 %s; through"+
		" Perpetuity p50 %s, p99 %s", ms(t.DirectWay.P50), ms(t.DirectWay.P99), ms(t.ViaWay.P50), ms(t.ViaWay.P99))
	if t.HopWay.N > 0 {
		way += fmt.Sprintf("; through the plain Go proxy p50 %s, p99 %s", ms(t.HopWay.P50), ms(t.HopWay.P99))
	}
	return fmt.Sprintf("Split by the fake provider's own record of when it began to write each event: the %d slowest gaps"+
		" through Perpetuity (each round's p99 and beyond) were %s ms on average against %s for the %d middle ones;"+
		" the provider had sent those events %s ms apart against %s, and the second event's way to the client took"+
		" %s ms longer than the first's against %s. On the direct side the slowest gaps were %s against %s: sent %s apart"+
		" against %s, the way %s longer against %s.%s.",
		v.Slow.N, ms(v.Slow.Gap), ms(v.Middle.Gap), v.Middle.N, ms(v.Slow.Sent), ms(v.Middle.Sent),
		ms(v.Slow.Late), ms(v.Middle.Late),
		ms(d.Slow.Gap), ms(d.Middle.Gap), ms(d.Slow.Sent), ms(d.Middle.Sent), ms(d.Slow.Late), ms(d.Middle.Late), way)
}

// chunkTailShares says, for the notes, how much of the slowest gaps'
// excess over the middle ones was the provider's own spacing, each side.
func chunkTailShares(t ChunkTail) string {
	v, d := t.Via, t.Direct
	ve, de := v.Slow.Gap-v.Middle.Gap, d.Slow.Gap-d.Middle.Gap
	if v.Slow.N == 0 || d.Slow.N == 0 || ve <= 0 || de <= 0 {
		return ""
	}
	line := fmt.Sprintf("Split by the fake provider's own send times (§1), the slowest gaps exceed the middle ones by %s ms"+
		" through Perpetuity, %.0f%% of it the provider's own spacing of the two events and %.0f%% their way to the client;"+
		" directly by %s ms, %.0f%% and %.0f%%.",
		ms(ve), pct(v.Slow.Sent-v.Middle.Sent, ve), pct(v.Slow.Late-v.Middle.Late, ve),
		ms(de), pct(d.Slow.Sent-d.Middle.Sent, de), pct(d.Slow.Late-d.Middle.Late, de))
	if t.HopWay.N > 0 {
		line += fmt.Sprintf(" An event's way from the provider to the client takes %s ms at p99 through Perpetuity, %s through"+
			" the plain Go proxy and %s direct.", ms(t.ViaWay.P99), ms(t.HopWay.P99), ms(t.DirectWay.P99))
	}
	return line
}
