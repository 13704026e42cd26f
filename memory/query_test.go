package memory

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/perpetuity/perpetuity/memory/dict"
	"github.com/perpetuity/perpetuity/memory/text"
)

// checkQueryText holds queryText to its contract: short text unchanged;
// long text becomes a prefix and a suffix of it joined by a newline, within
// MaxQueryBytes plus that newline, valid UTF-8 when the input is.
func checkQueryText(t *testing.T, s string) {
	t.Helper()
	q := queryText(s)
	if len(s) <= MaxQueryBytes {
		if q != s {
			t.Fatalf("short text changed: %q -> %q", s, q)
		}
		return
	}
	if len(q) > MaxQueryBytes+1 {
		t.Fatalf("%d bytes read of %d, want at most %d", len(q), len(s), MaxQueryBytes+1)
	}
	head, tail, ok := strings.Cut(q, "\n")
	for ok && !strings.HasSuffix(s, tail) { // the head may hold newlines of its own
		var h2 string
		h2, tail, ok = strings.Cut(tail, "\n")
		head += "\n" + h2
	}
	if !ok || !strings.HasPrefix(s, head) || !strings.HasSuffix(s, tail) {
		t.Fatalf("not a prefix and a suffix of the text: %.80q ... %.80q", head, tail)
	}
	if utf8.ValidString(s) && !utf8.ValidString(q) {
		t.Fatalf("a cut split a rune")
	}
}

func TestQueryText(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(15, 1))
	words := func(n int, w func(i int) string) string {
		var b strings.Builder
		for i := range n {
			if i > 0 {
				b.WriteByte(' ')
			}
			b.WriteString(w(i))
		}
		return b.String()
	}
	cases := map[string]string{
		"short":       "what did we cook on 9 November, 2022?",
		"exactly max": strings.Repeat("a", MaxQueryBytes),
		"words":       words(20_000, func(i int) string { return fmt.Sprintf("w%d", i) }),
		"runes":       strings.Repeat("é日本", MaxQueryBytes),
		"no spaces":   strings.Repeat("x", 3*MaxQueryBytes),
		"random":      words(30_000, func(int) string { return strings.Repeat("ab", 1+r.IntN(30)) }),
	}
	for name, s := range cases {
		t.Run(name, func(t *testing.T) {
			checkQueryText(t, s)
		})
	}
	// Words are kept whole at both cuts.
	s := cases["words"]
	q := queryText(s)
	head, tail, _ := strings.Cut(q, "\n")
	if !strings.HasSuffix(head, " ") || !strings.HasPrefix(tail, " ") {
		t.Errorf("cut inside a word: head ends %q, tail starts %q", head[len(head)-8:], tail[:8])
	}
	if !strings.HasPrefix(q, "w0 w1 ") || !strings.HasSuffix(q, " w19999") {
		t.Errorf("the question's first and last words are not read: %.20q ... %.20q", q, q[len(q)-20:])
	}
}

func FuzzQueryText(f *testing.F) {
	f.Add("short question", 0)
	f.Add("word ", MaxQueryBytes/4)
	f.Add("日本語 ", MaxQueryBytes/6)
	f.Add("\xff\xfe", MaxQueryBytes)
	f.Add(strings.Repeat("z", 100)+" ", MaxQueryBytes/50)
	f.Fuzz(func(t *testing.T, unit string, n int) {
		if n < 0 || n > 4*MaxQueryBytes || len(unit)*n > 8*MaxQueryBytes {
			return
		}
		checkQueryText(t, strings.Repeat(unit, n)+unit)
	})
}

// A question of 100,000 words gives the scan the terms of MaxQueryBytes of
// it, whatever its length; a short one, all of its terms.
func TestQuestionTermsBounded(t *testing.T) {
	t.Parallel()
	c, err := text.NewCounter()
	if err != nil {
		t.Fatal(err)
	}
	d, err := dict.Builtin(1)
	if err != nil {
		t.Fatal(err)
	}
	e := &Engine{an: TextAnalyzer{C: c}}
	dt := DictTerms{D: d}
	var b strings.Builder
	for i := range 100_000 {
		fmt.Fprintf(&b, "<system-reminder>r%d</system-reminder> ", i%3) // scaffolding, recognized on the whole message
		fmt.Fprintf(&b, "zq%dx ", i)                                    // 100,000 distinct unknown words
	}
	huge := b.String()
	terms := e.questionTerms(dt, huge)
	if max := MaxQueryBytes / len("zq1x "); len(terms) == 0 || len(terms) > max {
		t.Errorf("%d terms from a %d-byte question, want 1..%d", len(terms), len(huge), max)
	}
	for _, id := range terms {
		if id == dict.HashedID("r0") || id == dict.HashedID("r1") {
			t.Fatalf("scaffolding read as question words")
		}
	}
	if got := e.textTerms(dt, huge); len(got) > MaxQueryBytes/2 {
		t.Errorf("a tool query of %d bytes gave %d terms", len(huge), len(got))
	}
	short := "What did Caroline paint for the garden in June 2023?"
	if got, want := e.questionTerms(dt, short), dt.QueryTerms(text.Normalize(short)); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("a short question's terms changed: %v, want %v", got, want)
	}
}

// TestMeaningTokens: the dense side reads the question without the names it
// writes, and everything when it names nothing that way.
func TestMeaningTokens(t *testing.T) {
	t.Parallel()
	c, err := text.NewCounter()
	if err != nil {
		t.Fatal(err)
	}
	e := &Engine{an: TextAnalyzer{C: c}}
	tests := []struct {
		name, in, want string
	}{
		{"a name mid-sentence", "What did Caroline paint last week?", "what did paint last week"},
		{"a possessive", "What is Melanie's favourite book?", "what is favourite book"},
		{"a sentence start is no name", "Caroline said what? Where did she go?", "caroline said what where did she go"},
		{"a line start is no name", "hello there\nParis in spring", "hello there paris in spring"},
		{"quoted name", `Why did "Nate" leave?`, "why did leave"},
		{"lower case names stay", "what did caroline paint?", "what did caroline paint"},
		{"title case names nothing", "What Did Caroline Paint Last Week", "what did caroline paint last week"},
		{"shouting names nothing", "WHAT DID CAROLINE PAINT", "what did caroline paint"},
		{"every occurrence goes", "Did Audrey ask audrey?", "did ask"},
		{"empty", "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got := strings.Join(e.meaningTokens(tt.in, text.Normalize(tt.in)), " ")
			if got != tt.want {
				t.Errorf("meaningTokens(%q) = %q, want %q", tt.in, got, tt.want)
			}
		})
	}
}
