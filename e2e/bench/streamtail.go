package bench

import (
	"fmt"
	"time"
)

// The first event's added p99 is several times its p50, and a p99 alone
// cannot say where that time went: so each round's slowest first events
// through Perpetuity are set beside its middle ones, split by the proxy's
// Server-Timing: its handling until it forwarded the request, the
// provider's response headers as it waited for them, and the rest of the
// client's wait. The direct request of the same pair says how slow the
// machine was at that moment.

// StreamTail is the proxied first events at or beyond each round's p99
// beside its middle ones (45th to 55th percentile), means over the rounds.
type StreamTail struct {
	Slow, Middle StreamGroup
}

// StreamGroup is the mean of a set of proxied first events.
type StreamGroup struct {
	N int
	// TTFB is the client's wait for the first event; Forward and Upstream
	// the proxy's Server-Timing (until it began to forward; sending the
	// request and waiting for the provider's response headers); Rest what
	// is left (the client's hop, the server before the handler, the
	// provider's first event after its headers, its relay); Direct the same
	// pairs' direct first events.
	TTFB, Forward, Upstream, Rest, Direct time.Duration
}

// streamPair is one pair of streams: direct and through Perpetuity.
type streamPair struct{ direct, via Timing }

func pairStreams(base, subj []Timing) []streamPair {
	out := make([]streamPair, 0, len(base))
	for i := range min(len(base), len(subj)) {
		out = append(out, streamPair{base[i], subj[i]})
	}
	return out
}

func streamTailOf(rounds [][]streamPair) StreamTail {
	var slow, middle []streamPair
	for _, r := range rounds {
		s, m := slowAndMiddle(r, func(p streamPair) time.Duration { return p.via.TTFB })
		slow, middle = append(slow, s...), append(middle, m...)
	}
	return StreamTail{Slow: meanStreams(slow), Middle: meanStreams(middle)}
}

func meanStreams(ps []streamPair) StreamGroup {
	g := StreamGroup{N: len(ps)}
	if g.N == 0 {
		return g
	}
	for _, p := range ps {
		g.TTFB += p.via.TTFB
		g.Forward += p.via.Forward
		g.Upstream += p.via.Upstream
		g.Direct += p.direct.TTFB
	}
	n := time.Duration(g.N)
	g.TTFB, g.Forward, g.Upstream, g.Direct = g.TTFB/n, g.Forward/n, g.Upstream/n, g.Direct/n
	g.Rest = g.TTFB - g.Forward - g.Upstream
	return g
}

// streamTailLine says in one sentence where the slowest proxied first
// events' time went.
func streamTailLine(t StreamTail) string {
	s, m := t.Slow, t.Middle
	if s.N == 0 || m.N == 0 || s.Upstream == 0 {
		return "" // no Server-Timing to split by
	}
	return fmt.Sprintf("The %d slowest proxied first events (each round's p99 and beyond) took %s ms on average"+
		" against %s for the %d middle ones. By the proxy's Server-Timing: its handling until it began to forward the"+
		" request %s against %s; sending the request and waiting for the provider's response headers, as the proxy"+
		" timed it, %s against %s; the rest (the client's hop, the server before the handler, the provider's first event"+
		" after its headers and its relay) %s against %s. The direct requests of the same pairs took %s against %s.",
		s.N, ms(s.TTFB), ms(m.TTFB), m.N, ms(s.Forward), ms(m.Forward), ms(s.Upstream), ms(m.Upstream),
		ms(s.Rest), ms(m.Rest), ms(s.Direct), ms(m.Direct))
}
