package memory

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/perpetuity/perpetuity/memory/store"
)

func TestNamedSpeaker(t *testing.T) {
	t.Parallel()
	two := map[string]bool{"conv-26": true, "caroline": true, "melanie": true}
	overlap := map[string]bool{"jo": true, "jo-ann": true, "sam": true}
	cases := []struct {
		name     string
		question string
		people   map[string]bool
		want     string
	}{
		{"one named", "What does Melanie do to destress?", two, "melanie"},
		{"possessive", "What do Melanie's kids like?", two, "melanie"},
		{"case folded", "what does CAROLINE paint?", two, "caroline"},
		{"a name not among them", "What does Mel like?", two, ""},
		{"both named", "What does Melanie think of Caroline's plan?", two, ""},
		{"inside a word", "Is Carolinesque a word?", two, ""},
		{"none named", "When is the pottery class?", two, ""},
		{"a name inside another named", "What does Jo-Ann cook?", overlap, "jo-ann"},
		{"the shorter alone", "What does Jo cook?", overlap, "jo"},
		{"the longer and another", "Did Jo-Ann meet Sam?", overlap, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			if got := namedSpeaker(c.question, c.people); got != c.want {
				t.Errorf("namedSpeaker(%q) = %q, want %q", c.question, got, c.want)
			}
		})
	}
}

// TestNamedIn: the labels decide whether a question is read for a name at
// all: never with fewer than two people, nor with labels cut short.
func TestNamedIn(t *testing.T) {
	t.Parallel()
	q := "What does Melanie like about main?"
	people := store.Labels{Of: 1, By: map[store.LabelKey]string{
		{UserID: 1, Kind: store.BindUser}:                        "main",
		{UserID: 1, Kind: store.BindSpeaker, Subject: "Melanie"}: "Melanie",
		{UserID: 1, Kind: store.BindSpeaker, Subject: "Caro"}:    " ",
	}}
	cut := people
	cut.Of = 0
	one := store.Labels{Of: 1, By: map[store.LabelKey]string{{UserID: 1, Kind: store.BindUser}: "main"}}
	cases := []struct {
		name   string
		labels store.Labels
		want   string
	}{
		{"two people, both named", people, ""},
		{"one person", one, ""},
		{"cut short", cut, ""},
	}
	for _, c := range cases {
		if got := namedIn(q, c.labels); got != c.want {
			t.Errorf("%s: namedIn = %q, want %q", c.name, got, c.want)
		}
	}
	if got := namedIn("What does Melanie like?", people); got != "melanie" {
		t.Errorf("two people, one named: namedIn = %q, want melanie", got)
	}
}

// TestPreferredRank: the named person's candidates move up, other
// labelled speakers' move down, except retrieval's keptPlaces best.
func TestPreferredRank(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name    string
		placed  int
		speaker string
		want    float64
	}{
		{"named, first", 0, "melanie", 0},
		{"named, 9th", 8, "melanie", 2},
		{"other, within the kept places", 4, "caroline", 4},
		{"other, first past them", keptPlaces, "caroline", 3*(keptPlaces+1) - 1},
		{"other, 10th", 9, "caroline", 29},
		{"no label", 9, "", 9},
	}
	for _, c := range cases {
		if got := preferredRank(c.placed, c.speaker, "melanie"); got != c.want {
			t.Errorf("%s: preferredRank(%d, %q) = %g, want %g", c.name, c.placed, c.speaker, got, c.want)
		}
	}
}

func TestContainsWord(t *testing.T) {
	t.Parallel()
	cases := []struct {
		s, w string
		want bool
	}{
		{"hey melanie!", "melanie", true},
		{"melanie", "melanie", true},
		{"melanies", "melanie", false},
		{"xmelanie melanie", "melanie", true},
		{"jo-ann said", "jo-ann", true},
		{"zoë's cat", "zoë", true},
		{"zoëx zoë2", "zoë", false},
		{"", "a", false},
	}
	for _, c := range cases {
		if got := containsWord(c.s, c.w); got != c.want {
			t.Errorf("containsWord(%q, %q) = %v, want %v", c.s, c.w, got, c.want)
		}
	}
}

// FuzzContainsWord holds containsWord's search to trying every place w
// occurs in s, on any question text.
func FuzzContainsWord(f *testing.F) {
	f.Add("hey melanie!", "melanie")
	f.Add("zoëx zoë", "zoë")
	f.Add("aaa a", "a")
	f.Fuzz(func(t *testing.T, s, w string) {
		if w == "" {
			return
		}
		want := false
		for i := 0; i+len(w) <= len(s); i++ {
			if !strings.HasPrefix(s[i:], w) {
				continue
			}
			before, _ := utf8.DecodeLastRuneInString(s[:i])
			after, _ := utf8.DecodeRuneInString(s[i+len(w):])
			if !wordRune(before) && !wordRune(after) {
				want = true
				break
			}
		}
		if got := containsWord(s, w); got != want {
			t.Errorf("containsWord(%q, %q) = %v, every occurrence tried says %v", s, w, got, want)
		}
	})
}
