package web

import (
	"fmt"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/perpetuity/perpetuity/memory"
	"github.com/perpetuity/perpetuity/memory/store"
)

func ptr[T any](v T) *T { return &v }

func TestTrajectoryFromRows(t *testing.T) {
	t.Parallel()
	base := store.BrowseItem{BornClock: 100, Tau: 50, Clock: 400}
	cases := []struct {
		name    string
		tLast   *int64
		peak    *float64
		reheats []store.BrowseReheat
		born    float64
		points  int
	}{
		{"never activated by this viewer: cold", nil, nil, nil, 0, 1},
		{"born hot, never reheated", ptr(int64(100)), ptr(0.9), nil, 0.9, 1},
		{"reheats logged up to the activation", ptr(int64(300)), ptr(0.7), []store.BrowseReheat{{Clock: 200, Peak: 0.8}, {Clock: 300, Peak: 0.7}}, memory.BornPeak, 3},
		{"activation beyond the log is added", ptr(int64(300)), ptr(0.7), []store.BrowseReheat{{Clock: 200, Peak: 0.8}}, memory.BornPeak, 3},
		{"engine without a reheat log", ptr(int64(300)), ptr(0.7), nil, memory.BornPeak, 2},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			row := base
			row.TLast, row.Peak, row.Reheats = c.tLast, c.peak, c.reheats
			tr := trajectory(row)
			if tr.Born.Peak != c.born || len(tr.Activations()) != c.points {
				t.Fatalf("born %v with %d points, want %v with %d", tr.Born.Peak, len(tr.Activations()), c.born, c.points)
			}
			if c.peak != nil {
				want := memory.Decay(*c.peak, float64(400-*c.tLast), 50)
				if got := tr.Current(); got != want {
					t.Fatalf("heat now %v, want %v from the activation row", got, want)
				}
			}
		})
	}
}

func TestAgo(t *testing.T) {
	t.Parallel()
	now := time.Date(2025, 3, 10, 12, 0, 0, 0, time.UTC)
	cases := []struct {
		t    time.Time
		want string
	}{
		{time.Time{}, "never"},
		{now.Add(time.Minute), "just now"},
		{now.Add(-30 * time.Second), "just now"},
		{now.Add(-time.Minute), "1 minute ago"},
		{now.Add(-5 * time.Hour), "5 hours ago"},
		{now.Add(-3 * 24 * time.Hour), "3 days ago"},
		{now.Add(-90 * 24 * time.Hour), "3 months ago"},
		{now.Add(-800 * 24 * time.Hour), "2 years ago"},
	}
	for _, c := range cases {
		if got := ago(c.t, now); got != c.want {
			t.Errorf("ago(%v) = %q, want %q", c.t, got, c.want)
		}
	}
}

func TestTerms(t *testing.T) {
	t.Parallel()
	if got := strings.Join(terms([]string{"a", "b", "a", "", "c"}), ","); got != "a,b,c" {
		t.Fatalf("terms %q", got)
	}
	many := make([]string, 100)
	for i := range many {
		many[i] = strings.Repeat("x", i+1)
	}
	if len(terms(many)) != maxTerms {
		t.Fatal("terms not capped")
	}
}

func FuzzCheckSignUp(f *testing.F) {
	f.Add("Acme", "ada@example.com", "correct horse battery")
	f.Add("", "x", "")
	f.Add("T\n", "Bob <bob@example.com>", strings.Repeat("p", 2000))
	f.Fuzz(func(t *testing.T, team, email, pw string) {
		msg := checkSignUp(team, normEmail(email), pw)
		if msg != "" {
			return
		}
		// Whatever passes fits the schema's constraints and the KDF bound.
		e := normEmail(email)
		if team == "" || utf8.RuneCountInString(team) > 200 || len(e) < 3 || len(e) > 254 ||
			utf8.RuneCountInString(pw) < minPassword || len(pw) > maxPassword || strings.ContainsAny(e, " <>") {
			t.Fatalf("accepted team %q email %q password of %d bytes", team, e, len(pw))
		}
	})
}

func FuzzHashToken(f *testing.F) {
	tok, err := newToken()
	if err != nil {
		f.Fatal(err)
	}
	f.Add(tok)
	f.Add("")
	f.Add(strings.Repeat("A", 43))
	f.Add(strings.Repeat("=", 43))
	f.Fuzz(func(t *testing.T, s string) {
		h, ok := hashToken(s)
		if ok != (h != nil) {
			t.Fatalf("ok=%v with hash %x", ok, h)
		}
		if ok && (len(s) != 43 || len(h) != 32) {
			t.Fatalf("accepted %q", s)
		}
	})
}

// TestCSSHeatScaleMatchesHeatColor keeps the stylesheet's heat classes (for
// HTML elements) and the heat scale's colours (for SVG fills) one scale.
func TestCSSHeatScaleMatchesHeatColor(t *testing.T) {
	t.Parallel()
	css, err := staticFiles.ReadFile("static/console.css")
	if err != nil {
		t.Fatal(err)
	}
	for n := 0; n <= 10; n++ {
		want := fmt.Sprintf("article.item.heat-%d { border-left-color: %s; }", n, heatScale().PosColor(float64(n)/10))
		if !strings.Contains(string(css), want) {
			t.Errorf("console.css lacks %q", want)
		}
	}
}

func TestETA(t *testing.T) {
	t.Parallel()
	start := time.Date(2025, 3, 10, 12, 0, 0, 0, time.UTC)
	cases := []struct {
		derived, total int64
		elapsed        time.Duration
		want           string
	}{
		{0, 100, time.Minute, ""},
		{10, 100, time.Second, ""},
		{50, 100, 20 * time.Second, "less than a minute left"},
		{25, 100, time.Minute, "about 3 minutes left"},
		{1, 100, time.Hour, "about 99 hours left"},
		{100, 100, time.Minute, ""},
	}
	for _, c := range cases {
		r := store.Rollout{Derived: c.derived, Total: c.total, StartedAt: start}
		if got := eta(r, start.Add(c.elapsed)); got != c.want {
			t.Errorf("eta(%d of %d after %s) = %q, want %q", c.derived, c.total, c.elapsed, got, c.want)
		}
	}
}
