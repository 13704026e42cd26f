package bench

import (
	"bufio"
	"bytes"
	"strings"
	"testing"
	"time"
)

func TestLastLines(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		in   string
		n    int
		want string
	}{
		{"", 3, "no output"},
		{"a\n\nb\nc\n", 2, "b / c"},
		{"\r\x1b[1mstarting\x1b[0m\n\x1b[32mready\x1b[0m\n", 3, "starting / ready"},
	} {
		if got := lastLines([]byte(tc.in), tc.n); got != tc.want {
			t.Errorf("lastLines(%q, %d) = %q, want %q", tc.in, tc.n, got, tc.want)
		}
	}
}

func TestTailBuffer(t *testing.T) {
	t.Parallel()
	tb := &tailBuffer{max: 8}
	for _, s := range []string{"first line\n", "second\n", "x\n"} {
		if _, err := tb.Write([]byte(s)); err != nil {
			t.Fatal(err)
		}
	}
	if got := tb.lastLines(5); got != "econd / x" {
		t.Errorf("tail = %q, want the last 8 bytes' lines", got)
	}
}

func TestPeerRatio(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		ours, theirs time.Duration
		want         float64
		ok           bool
	}{
		{300 * time.Microsecond, 3 * time.Millisecond, 0.1, true},
		{2 * time.Millisecond, time.Millisecond, 2, true},
		{time.Millisecond, 0, 0, false},
		{time.Millisecond, -time.Microsecond, 0, false},
	} {
		got, ok := PeerRatio(tc.ours, tc.theirs)
		if ok != tc.ok || (ok && (got < tc.want-1e-9 || got > tc.want+1e-9)) {
			t.Errorf("PeerRatio(%s, %s) = %g, %v; want %g, %v", tc.ours, tc.theirs, got, ok, tc.want, tc.ok)
		}
	}
}

// TestPassPeerMarkdown writes §1's peer part for a measured and a skipped
// peer: a skipped one says why, and both quote the published figures
// apart from anything measured.
func TestPassPeerMarkdown(t *testing.T) {
	t.Parallel()
	paired := func(added time.Duration) Paired {
		return Paired{Rounds: 3, PerSide: 100, Base: Dist{N: 100, P50: time.Millisecond, P99: 2 * time.Millisecond},
			Subj: Dist{N: 100, P50: time.Millisecond + added, P99: 2*time.Millisecond + 2*added}, Added50: added, Added99: 2 * added}
	}
	pass := &PassResult{C1: paired(300 * time.Microsecond), CMany: paired(time.Millisecond), TTFB: paired(400 * time.Microsecond), Concurrency: 64}
	for _, tc := range []struct {
		name string
		peer *PeerResult
		want []string
	}{
		{"measured", &PeerResult{Name: "Portkey gateway", Package: PortkeyPackage, Version: PortkeyVersion, Node: "v20.0.0",
			Sent: 15, Forwarded: 15, C1: paired(3 * time.Millisecond), CMany: paired(0), TTFB: paired(4 * time.Millisecond), Concurrency: 64},
			[]string{"### Beside the Portkey gateway", "| non-streaming, concurrency 1 | 0.300 | 3.00 | **0.10x** |",
				"Portkey added nothing measurable", "| streaming: time to first event | 0.400 | 4.00 | **0.10x** |", "the fake provider answered 15: it forwarded them"}},
		{"skipped", &PeerResult{Package: PortkeyPackage, Version: PortkeyVersion, Skipped: "not measured in smoke mode"},
			[]string{"### Beside the Portkey gateway", "not: not measured in smoke mode.", "The rest of the run went on without it."}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			p := *pass
			p.Peer = tc.peer
			var buf bytes.Buffer
			m := &mdw{w: bufio.NewWriter(&buf)}
			(&Report{}).passPeer(m, &p)
			if err := m.w.Flush(); err != nil {
				t.Fatal(err)
			}
			doc := buf.String()
			for _, w := range append(tc.want, "| Bifrost | 0.44-0.62 |", "not\nmeasured here") {
				if !strings.Contains(doc, w) {
					t.Errorf("lacks %q:\n%s", w, doc)
				}
			}
		})
	}
}
