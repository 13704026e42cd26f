package bench

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"time"
)

// The memory path's p99 misses its target by more than its p50 does, and a
// mean per statement cannot say why: a turn that waited 20 ms on one
// commit weighs as much in the mean as twenty turns that waited 1 ms more.
// So each turn keeps the statements it waited on, and the report sets the
// turns that make each round's p99 beside the round's middle turns.

// span is one statement's (or pipelined batch's) round trip as the client
// saw it.
type span struct {
	name       string
	start, end time.Time
}

// turnTrace is one memory-path turn: how long it and its capture took, the
// time per statement kind it had out, and how long at least one statement
// was out (capture and frame statements overlap; the rest of the turn is
// Go: the scan, the render, scheduling and the collector).
type turnTrace struct {
	total, capture time.Duration
	scan, render   time.Duration // the frame's stages (stageClock)
	stmts          map[string]time.Duration
	inDB           time.Duration
}

// traceTurn keeps the spans that started and ended inside [t0, end]: the
// turn's own (the previous turn's reheat ended before t0, this one's starts
// after end).
func traceTurn(t0, capEnd, end time.Time, spans []span) turnTrace {
	tt := turnTrace{total: end.Sub(t0), capture: capEnd.Sub(t0), stmts: map[string]time.Duration{}}
	var in []span
	for _, s := range spans {
		if s.start.Before(t0) || s.end.After(end) {
			continue
		}
		tt.stmts[s.name] += s.end.Sub(s.start)
		in = append(in, s)
	}
	slices.SortFunc(in, func(a, b span) int { return a.start.Compare(b.start) })
	var reach time.Time // the union of the spans, walked in start order
	for _, s := range in {
		if s.start.After(reach) {
			reach = s.start
		}
		if s.end.After(reach) {
			tt.inDB += s.end.Sub(reach)
			reach = s.end
		}
	}
	return tt
}

// Tail sets the turns at or beyond each round's p99 beside the round's
// middle turns (its 45th to 55th percentile), means over all rounds.
type Tail struct {
	Slow, Middle TailGroup
	// Stmts are the statement kinds by how much longer the slow turns had
	// them out than the middle ones, most first.
	Stmts []TailStmt
}

// TailGroup is the mean of a set of turns.
type TailGroup struct {
	N                             int
	Total, Capture, InDB, Outside time.Duration
}

// TailStmt is one statement kind's mean time per turn in both sets.
type TailStmt struct {
	Name         string
	Slow, Middle time.Duration
}

func tailOf(rounds [][]turnTrace) Tail {
	var slow, middle []turnTrace
	for _, r := range rounds {
		s, m := slowAndMiddle(r, func(t turnTrace) time.Duration { return t.total })
		slow, middle = append(slow, s...), append(middle, m...)
	}
	t := Tail{Slow: meanTurn(slow), Middle: meanTurn(middle)}
	names := map[string]bool{}
	for _, tt := range slices.Concat(slow, middle) {
		for n := range tt.stmts {
			names[n] = true
		}
	}
	for n := range names {
		t.Stmts = append(t.Stmts, TailStmt{Name: n, Slow: meanStmt(slow, n), Middle: meanStmt(middle, n)})
	}
	slices.SortFunc(t.Stmts, func(a, b TailStmt) int {
		return cmp.Or(cmp.Compare(b.Slow-b.Middle, a.Slow-a.Middle), strings.Compare(a.Name, b.Name))
	})
	return t
}

func meanTurn(ts []turnTrace) TailGroup {
	g := TailGroup{N: len(ts)}
	if g.N == 0 {
		return g
	}
	for _, t := range ts {
		g.Total += t.total
		g.Capture += t.capture
		g.InDB += t.inDB
	}
	n := time.Duration(g.N)
	g.Total, g.Capture, g.InDB = g.Total/n, g.Capture/n, g.InDB/n
	g.Outside = g.Total - g.InDB
	return g
}

func meanStmt(ts []turnTrace, name string) time.Duration {
	if len(ts) == 0 {
		return 0
	}
	var sum time.Duration
	for _, t := range ts {
		sum += t.stmts[name]
	}
	return sum / time.Duration(len(ts))
}

// tailLine says in one sentence where the slow turns' time went.
func tailLine(t Tail, top int) string {
	if t.Slow.N == 0 || t.Middle.N == 0 {
		return ""
	}
	var parts []string
	for _, s := range t.Stmts[:min(top, len(t.Stmts))] {
		if s.Slow <= s.Middle {
			break
		}
		parts = append(parts, fmt.Sprintf("`%s` %s against %s", s.Name, ms(s.Slow), ms(s.Middle)))
	}
	line := fmt.Sprintf("the %d slowest turns (each round's p99 and beyond) took %s ms on average against %s for the %d middle ones: "+
		"capture %s against %s; a statement out %s against %s, nothing out (Go: scan, render, scheduling, the collector) %s against %s",
		t.Slow.N, ms(t.Slow.Total), ms(t.Middle.Total), t.Middle.N, ms(t.Slow.Capture), ms(t.Middle.Capture),
		ms(t.Slow.InDB), ms(t.Middle.InDB), ms(t.Slow.Outside), ms(t.Middle.Outside))
	if len(parts) > 0 {
		line += "; the statements longer in them: " + strings.Join(parts, ", ")
	}
	return line
}
