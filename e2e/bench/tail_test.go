package bench

import (
	"strings"
	"testing"
	"time"
)

func TestTraceTurn(t *testing.T) {
	t.Parallel()
	t0 := time.Unix(1000, 0)
	at := func(ms float64) time.Time { return t0.Add(time.Duration(ms * float64(time.Millisecond))) }
	sp := func(name string, from, to float64) span { return span{name: name, start: at(from), end: at(to)} }
	for _, tc := range []struct {
		name   string
		spans  []span
		inDB   time.Duration
		stmts  map[string]time.Duration
		capEnd float64
	}{
		{name: "none", inDB: 0, stmts: map[string]time.Duration{}, capEnd: 3},
		{
			// The capture's batch and the frame's read overlap: the union
			// counts the overlap once; the commit follows after a gap.
			name:  "overlap and gap",
			spans: []span{sp("batch: capture", 0.1, 2), sp("batch: read", 0.5, 2.5), sp("commit", 3, 4)},
			inDB:  3400 * time.Microsecond, capEnd: 4,
			stmts: map[string]time.Duration{"batch: capture": 1900 * time.Microsecond, "batch: read": 2 * time.Millisecond, "commit": time.Millisecond},
		},
		{
			// The previous turn's reheat (before t0) and this turn's (after
			// the end) are not the turn's.
			name:  "reheats outside",
			spans: []span{sp("reheat", -1, -0.2), sp("commit", 1, 2), sp("reheat", 5.5, 6), sp("late", 4.5, 5.5)},
			inDB:  time.Millisecond, capEnd: 2,
			stmts: map[string]time.Duration{"commit": time.Millisecond},
		},
		{
			name:  "nested",
			spans: []span{sp("a", 0, 4), sp("b", 1, 2)},
			inDB:  4 * time.Millisecond, capEnd: 4,
			stmts: map[string]time.Duration{"a": 4 * time.Millisecond, "b": time.Millisecond},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tt := traceTurn(t0, at(tc.capEnd), at(5), tc.spans)
			if tt.total != 5*time.Millisecond || tt.capture != at(tc.capEnd).Sub(t0) {
				t.Errorf("total %v capture %v", tt.total, tt.capture)
			}
			if tt.inDB != tc.inDB {
				t.Errorf("in the database %v, want %v", tt.inDB, tc.inDB)
			}
			if len(tt.stmts) != len(tc.stmts) {
				t.Errorf("statements %v, want %v", tt.stmts, tc.stmts)
			}
			for n, d := range tc.stmts {
				if tt.stmts[n] != d {
					t.Errorf("%s: %v, want %v", n, tt.stmts[n], d)
				}
			}
		})
	}
}

func TestTailOf(t *testing.T) {
	t.Parallel()
	// 100 turns a round: a round's p99 is its 2nd slowest (rank 99 of
	// 100), so the slow set is the 2 slowest of each round; the middle set
	// its 45th to 55th turns by time.
	round := func(slowCommit time.Duration) []turnTrace {
		var r []turnTrace
		for i := range 100 {
			ms := time.Duration(i+1) * time.Millisecond / 10
			tt := turnTrace{total: 3*time.Millisecond + ms, capture: 2 * time.Millisecond, inDB: 2 * time.Millisecond,
				stmts: map[string]time.Duration{"commit": time.Millisecond, "batch": time.Millisecond}}
			if i >= 98 {
				tt.total += slowCommit
				tt.inDB += slowCommit
				tt.stmts = map[string]time.Duration{"commit": time.Millisecond + slowCommit, "batch": time.Millisecond}
			}
			r = append(r, tt)
		}
		// Not in time order: the sets are by rank, not position.
		r[0], r[99] = r[99], r[0]
		return r
	}
	tail := tailOf([][]turnTrace{round(20 * time.Millisecond), round(10 * time.Millisecond)})
	if tail.Slow.N != 4 || tail.Middle.N != 22 {
		t.Fatalf("sets of %d and %d turns, want 4 and 22", tail.Slow.N, tail.Middle.N)
	}
	if tail.Slow.Total <= tail.Middle.Total+14*time.Millisecond {
		t.Errorf("slow mean %v, middle %v: the slow set misses the slow turns", tail.Slow.Total, tail.Middle.Total)
	}
	if len(tail.Stmts) != 2 || tail.Stmts[0].Name != "commit" {
		t.Fatalf("statements %+v, want commit first", tail.Stmts)
	}
	if got, want := tail.Stmts[0].Slow, 16*time.Millisecond; got != want {
		t.Errorf("commit in the slow turns %v, want %v (the mean of 21 and 11 ms)", got, want)
	}
	if tail.Slow.Outside != tail.Slow.Total-tail.Slow.InDB {
		t.Errorf("outside %v, want total less in the database", tail.Slow.Outside)
	}
	line := tailLine(tail, 3)
	for _, want := range []string{"the 4 slowest turns", "`commit` 16.0 against 1.00"} {
		if !strings.Contains(line, want) {
			t.Errorf("line %q lacks %q", line, want)
		}
	}
	if strings.Contains(line, "`batch`") {
		t.Errorf("line %q names a statement no longer in the slow turns", line)
	}
	if tailLine(Tail{}, 3) != "" {
		t.Error("a tail of no turns gets a line")
	}
}
