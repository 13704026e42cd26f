package text

import (
	"math/rand/v2"
	"strings"
	"testing"
)

// aroundPres are what a frame puts before a stored turn, and texts that
// meet a turn's first piece in other ways.
var aroundPres = []string{
	"", "【Caroline】 ", "【this conversation, 3 May 2023, 2 days ago】\n【Melanie · interrupted】 ",
	"【Caroline #42】 ", "x", "word", " ", "\n", "(", "'", "12", "Hello ", "end.\n", "  ",
}

// aroundMids are stored turns: how they start and end is what matters.
var aroundMids = []string{
	"Hey Caroline! Good to see you! I'm swamped with the kids & work. What's up with you?",
	"I went to the LGBTQ support group yesterday and it was so powerful.",
	"ok", "a b", "Hi.", "Yes!!", "you're", "it's done '", "tail   ", "tail\n", "tail\n  ", "tail.\n\n",
	"123456 and 7", "x 42", "(parenthesis) first", "  leading spaces then words.", "\nnewline first, then text",
	"/slash first and last/", "emoji at the end 😀", "日本語のテキストです。", "ÀÉÎ uppercase accents É",
	"mixed CASE WORDS ENDING IN CAPS", "path/to/file.go:12: error\n", "a\tb\tc\t", "trailing '",
	"quote \"inside\" and at the end\"", "they'LL see", "don't stop—ever…",
}

// TestCountAround: counting around the seams gives the whole's count
// wherever it answers, and it answers for a labelled chat turn.
func TestCountAround(t *testing.T) {
	t.Parallel()
	c := testCounter(t)
	for _, pre := range aroundPres {
		for _, mid := range aroundMids {
			for _, post := range []string{"", "\n\n", "\n", "\r\n", " next", "'s", "!", "9"} {
				got, ok := c.CountAround(pre, mid, c.Count(mid), post)
				if want := c.Count(pre + mid + post); ok && got != want {
					t.Errorf("CountAround(%q, %q, %q) = %d, Count of the whole %d", pre, mid, post, got, want)
				}
			}
		}
	}
	for _, post := range []string{"", "\n\n"} {
		if _, ok := c.CountAround("【Caroline】 ", aroundMids[0], c.Count(aroundMids[0]), post); !ok {
			t.Errorf("no count around a labelled turn (post %q)", post)
		}
	}
	if _, ok := c.CountAround("【Caroline】 ", "日本語のテキストです。", 0, ""); ok {
		t.Error("counted around a text with no place to cut")
	}
}

// TestCountAroundRandomTurns: the same on generated turns built of the
// pieces that meet at seams (words, contractions, digits, punctuation runs,
// spaces, line breaks, brackets, non-ASCII letters).
func TestCountAroundRandomTurns(t *testing.T) {
	t.Parallel()
	c := testCounter(t)
	atoms := strings.Fields("I you're it's we'LL don't Caroline LGBTQ iPhone ok a x 7 42 2023 12345 . , ! ?! ... ( ) \" ' / - — … 😀 日本 Ünïcödé É 【 】 # @ :)")
	seps := []string{" ", " ", " ", "", "  ", "\n", "\n\n", "\t", " \n", "/"}
	rnd := rand.New(rand.NewPCG(7, 11))
	gen := func(n int) string {
		var b strings.Builder
		for range n {
			b.WriteString(atoms[rnd.IntN(len(atoms))])
			b.WriteString(seps[rnd.IntN(len(seps))])
		}
		return b.String()
	}
	answered := 0
	for range 40000 {
		pre, mid, post := gen(rnd.IntN(3)), gen(1+rnd.IntN(12)), gen(rnd.IntN(3))
		got, ok := c.CountAround(pre, mid, c.Count(mid), post)
		if !ok {
			continue
		}
		answered++
		if want := c.Count(pre + mid + post); got != want {
			t.Fatalf("CountAround(%q, %q, %q) = %d, Count of the whole %d", pre, mid, post, got, want)
		}
	}
	if answered < 1000 {
		t.Fatalf("answered %d of 40000", answered)
	}
}

func FuzzCountAround(f *testing.F) {
	for i, mid := range aroundMids {
		f.Add(aroundPres[i%len(aroundPres)], mid, i%2 == 0)
	}
	f.Add("【a】 ", "x\n  ", true)
	f.Add("", "\xff bad", false)
	c := testCounter(f)
	f.Fuzz(func(t *testing.T, pre, mid string, join bool) {
		post := ""
		if join {
			post = "\n\n"
		}
		if len(pre) > 2 && pre[0] == '~' {
			post, pre = pre[1:], "" // a post other than a join
		}
		got, ok := c.CountAround(pre, mid, c.Count(mid), post)
		if want := c.Count(pre + mid + post); ok && got != want {
			t.Errorf("CountAround(%q, %q, %q) = %d, Count of the whole %d", pre, mid, post, got, want)
		}
	})
}

func BenchmarkCountAround(b *testing.B) {
	c := testCounter(b)
	mid := strings.Repeat(aroundMids[0]+" ", 4)
	n := c.Count(mid)
	b.Run("around", func(b *testing.B) {
		for b.Loop() {
			c.CountAround("【Caroline】 ", mid, n, "\n\n")
		}
	})
	b.Run("whole", func(b *testing.B) {
		for b.Loop() {
			c.Count("【Caroline】 " + mid + "\n\n")
		}
	})
}
