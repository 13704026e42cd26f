package locomo

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"strings"
	"testing"
	"time"
)

var update = flag.Bool("update", false, "rewrite golden files")

func TestScoreRequest(t *testing.T) {
	t.Parallel()
	quoted := `A blue bowl "with" two handles. [shares an image: a photo <of> a bowl & cup]`
	multi := "Biscuit is a great name!\nSend photos. ☀"
	body := func(msgs ...any) []byte {
		b, err := json.Marshal(map[string]any{"model": "m", "messages": msgs})
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	msg := func(role string, content any) map[string]any { return map[string]any{"role": role, "content": content} }
	words := func(s string) int { return len(strings.Fields(s)) }
	cases := []struct {
		name     string
		body     []byte
		question string
		evidence []string
		found    int
		tokens   int
	}{
		{"escaped text is decoded before matching", body(msg("user", "[Caroline, 8 May] "+quoted), msg("assistant", multi), msg("user", "What?")),
			"What?", []string{quoted, multi}, 2, 3 + 16 + 8 + 1},
		{"missing evidence", body(msg("user", "hello there"), msg("assistant", "hi"), msg("user", "Q")),
			"Q", []string{quoted, "hi"}, 1, 4},
		{"content parts", body(msg("user", []map[string]string{{"type": "text", "text": quoted}, {"type": "image_url"}}), msg("user", "Q")),
			"Q", []string{quoted}, 1, 16 + 1},
		{"the live question is not evidence of itself", body(msg("user", "earlier"), msg("user", "earlier\n\nDid I say "+multi)),
			"Did I say " + multi, []string{multi}, 0, 1 + 1 + 3 + 8},
		{"evidence merged into the live turn still counts", body(msg("user", multi+"\n\nQ")),
			"Q", []string{multi}, 1, 8 + 1},
		{"null content", body(msg("assistant", nil), msg("user", "Q")), "Q", []string{"Q"}, 0, 1},
	}
	for _, tc := range cases {
		found, tokens, err := ScoreRequest(tc.body, tc.question, tc.evidence, words)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if found != tc.found || tokens != tc.tokens {
			t.Errorf("%s: found %d tokens %d, want %d and %d", tc.name, found, tokens, tc.found, tc.tokens)
		}
	}
	if bytes.Contains(cases[0].body, []byte(quoted)) {
		t.Fatal("fixture does not exercise JSON escaping")
	}
	if _, _, err := ScoreRequest([]byte(`{"messages": [{"role": "user", "content": 5}]}`), "", nil, words); err == nil {
		t.Fatal("a content that is neither text nor parts must be an error")
	}
}

func TestMeasure(t *testing.T) {
	t.Parallel()
	var all []Scored
	for i := 1; i <= 20; i++ {
		all = append(all, Scored{Category: 4, Evidence: 2, Found: i % 3 % 2 * 2, Tokens: i * 10})
	}
	all = append(all, Scored{Category: 1, Evidence: 3, Found: 1, Tokens: 1000})
	m := Measure(all, func(s Scored) bool { return s.Category == 4 })
	// i%3%2*2 is 2 for i%3==1 (i = 1,4,...,19: 7 questions), else 0.
	if m.Questions != 20 || m.Recall != 0.35 || m.AllEvidence != 0.35 || m.TokensMean != 105 || m.TokensP95 != 190 {
		t.Fatalf("%+v", m)
	}
	m = Measure(all, func(Scored) bool { return true })
	if m.Recall != round((7+1.0/3)/21, 4) || m.TokensP95 != 200 { // macro: each question weighs the same
		t.Fatalf("all: %+v", m)
	}
	if z := Measure(nil, func(Scored) bool { return true }); z != (Metrics{}) {
		t.Fatalf("empty: %+v", z)
	}
}

func fixtureScores() []Scored {
	var all []Scored
	for _, b := range []int{0, 500, 2000} {
		for c := 1; c <= 5; c++ {
			for i := 0; i < c; i++ {
				found := 0
				if b != 500 && i%2 == 0 {
					found = 2
				}
				all = append(all, Scored{Category: c, Budget: b, Evidence: 2, Found: found, Tokens: 100*c + b/10 + i})
			}
		}
	}
	return all
}

func TestSummarize(t *testing.T) {
	t.Parallel()
	s := Summarize(fixtureScores(), []int{500, 2000})
	if s.Questions != 10 {
		t.Errorf("questions %d, want 10 (categories 1-4)", s.Questions)
	}
	if len(s.ByCategory) != 5 || s.ByCategory["5"].Questions != 5 || len(s.Ceilings) != 2 {
		t.Fatalf("shape %+v", s)
	}
	if s.Ceilings["500"].Recall != 0 || s.Ceilings["2000"].Recall != 0.6 || s.Overall.Recall != 0.6 {
		t.Errorf("recall: %+v", s)
	}
	b, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	var back map[string]any
	_ = json.Unmarshal(b, &back)
	for _, k := range []string{"questions", "overall", "by_category", "ceilings"} {
		if _, ok := back[k]; !ok {
			t.Errorf("JSON lacks %q: %s", k, b)
		}
	}
	if o := back["overall"].(map[string]any); len(o) != 4 || o["frame_tokens_p95"] == nil || o["all_evidence"] == nil {
		t.Errorf("overall fields: %v", o)
	}
}

func TestWriteTableGolden(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	WriteTable(&buf, fixtureScores(), []int{500, 2000}, 2, 1500*time.Millisecond)
	const golden = "testdata/table.golden"
	if *update {
		if err := os.WriteFile(golden, buf.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("%v (run with -update to create it)", err)
	}
	if !bytes.Equal(buf.Bytes(), want) {
		t.Fatalf("table differs from %s (-update rewrites it):\n%s", golden, buf.Bytes())
	}
}
