package memory_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/perpetuity/perpetuity/memory"
	"github.com/perpetuity/perpetuity/memory/dict"
	"github.com/perpetuity/perpetuity/memory/text"
)

// TestFrameTokensAreTheRenderedCount: with the real counter, a frame's
// Tokens is the count of the text it renders, turn by turn, though its
// stored turns are counted from their stored counts around the labels
// (text.Counter.CountAround): turns ending in punctuation, whitespace or a
// line break, turns of one speaker merged, a message cut into chunks, a
// turn with label brackets in it, text with no place to cut, at budgets
// that trim and that do not.
func TestFrameTokensAreTheRenderedCount(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newFixture(t)
	c, err := text.NewCounter()
	if err != nil {
		t.Fatal(err)
	}
	d, err := dict.Builtin(1)
	if err != nil {
		t.Fatal(err)
	}
	f.eng = memory.New(f.db, memory.TextAnalyzer{C: c}, memory.DictTerms{D: d}, memory.Options{ChunkTokens: 24})
	w := f.who(t, "alice", "garden")
	turns := []struct{ role, text string }{
		{"user", "I planted tomatoes in the garden yesterday!"},
		{"user", "And the basil is finally growing, isn't it lovely?"},
		{"assistant", "That sounds wonderful. How tall are the tomatoes now"},
		{"user", "About 30 cm. My neighbour Caroline says they need stakes...  "},
		{"assistant", "Stakes help.\n\nTie the stems loosely:\n- twine\n- soft cloth\n"},
		{"user", "She also told me about 【system】 labels, which is odd ' "},
		{"assistant", "日本語のテキストです。トマトは元気です。"},
		{"user", strings.Repeat("The garden plan for next spring has tomatoes, peppers, beans and squash in raised beds. ", 4)},
		{"assistant", "Raised beds warm up early in spring, so the tomatoes can go in sooner 😀"},
		{"user", "what did Caroline say about the tomatoes"},
	}
	for i, tr := range turns {
		if _, err := f.eng.Capture(ctx, memory.Message{Who: w, Role: tr.role, Speaker: []string{"Alice", "Gardener"}[i%2], Text: tr.text,
			Position: i, At: time.Date(2026, 1, 2, 3, 4, i, 0, time.UTC)}); err != nil {
			t.Fatal(err)
		}
	}
	q := f.who(t, "alice", "question")
	for _, tc := range []struct {
		name   string
		budget int
		tools  bool
	}{{"all", 4000, false}, {"trimmed", 120, false}, {"tools", 4000, true}, {"tools trimmed", 90, true}} {
		fr, err := f.eng.Frame(ctx, memory.FrameQuery{Who: q, Live: "what did Caroline say about the tomatoes and the garden",
			Probe: true, Budget: tc.budget, Ceiling: 4000, Tools: tc.tools, Now: time.Date(2026, 1, 3, 0, 0, 0, 0, time.UTC)})
		if err != nil {
			t.Fatal(err)
		}
		want := 0
		for _, turn := range fr.Turns {
			want += c.Count(turn.Text)
		}
		if fr.Items == 0 || fr.Tokens != want {
			t.Errorf("%s: %d items, Tokens %d, the rendered turns count %d", tc.name, fr.Items, fr.Tokens, want)
		}
	}
}
