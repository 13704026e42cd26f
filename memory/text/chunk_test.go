package text

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func TestChunk(t *testing.T) {
	t.Parallel()
	c := testCounter(t)
	para := "The first sentence is here. The second one follows! Does a third? Yes.\n"
	tests := []struct {
		name      string
		in        string
		max       int
		wantCount int    // number of chunks, 0 = don't check
		wantFirst string // first chunk, "" = don't check
	}{
		{name: "empty", in: "", max: 10, wantCount: 0},
		{name: "fits", in: "short message", max: 10, wantCount: 1, wantFirst: "short message"},
		{name: "paragraphs", in: para + "\n" + para + "\n" + para, max: 20, wantCount: 3, wantFirst: para + "\n"},
		{name: "sentences", in: "One two three four. Five six seven eight. Nine ten eleven twelve.", max: 6, wantCount: 3, wantFirst: "One two three four. "},
		{name: "lines", in: "alpha beta\ngamma delta\nepsilon zeta\n", max: 6, wantFirst: "alpha beta\ngamma delta\n"},
		{name: "words", in: "word another yet more words without any punctuation whatsoever here", max: 4},
		{name: "hard", in: strings.Repeat("x", 3000), max: 50},
		{name: "hard unicode", in: strings.Repeat("日本語😀", 300), max: 7},
		{name: "hard long word", in: randomText(lowerLetters, 40_000, 5), max: 512},
		{name: "max below one", in: "abc def", max: 0},
		{name: "emoji exceeding budget", in: "😀😀😀", max: 1, wantCount: 3},
		{name: "scaffold kept whole", in: "Fix the bug please.\n<system-reminder>\nThe user has opened foo.go. This may or may not matter.\n</system-reminder>\nThen run tests.", max: 30, wantCount: 2, wantFirst: "Fix the bug please.\n<system-reminder>\nThe user has opened foo.go. This may or may not matter.\n</system-reminder>\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			chunks, counts := ChunkCounted(tt.in, tt.max, c)
			checkChunks(t, tt.in, tt.max, chunks, c)
			checkCounts(t, chunks, counts, c)
			if tt.wantCount > 0 && len(chunks) != tt.wantCount {
				t.Errorf("got %d chunks %q, want %d", len(chunks), chunks, tt.wantCount)
			}
			if tt.in == "" && chunks != nil {
				t.Errorf("empty input gave %q", chunks)
			}
			if tt.wantFirst != "" && (len(chunks) == 0 || chunks[0] != tt.wantFirst) {
				t.Errorf("first chunk of %q: got %q, want %q", tt.in, chunks, tt.wantFirst)
			}
		})
	}
}

func checkChunks(t *testing.T, in string, maxTokens int, chunks []string, c *Counter) {
	t.Helper()
	if got := strings.Join(chunks, ""); got != in {
		t.Fatalf("chunks do not concatenate to the input:\n in: %q\nout: %q", in, chunks)
	}
	for _, ch := range chunks {
		if ch == "" {
			t.Fatalf("empty chunk in %q", chunks)
		}
		if n := c.Count(ch); n > max(maxTokens, 1) && utf8.RuneCountInString(ch) > 1 {
			t.Fatalf("chunk %q has %d tokens, budget %d", ch, n, maxTokens)
		}
		if utf8.ValidString(in) && !utf8.ValidString(ch) {
			t.Fatalf("chunk %q splits a rune", ch)
		}
	}
}

// checkCounts: ChunkCounted's counts are the counter's, chunk by chunk.
func checkCounts(t *testing.T, chunks []string, counts []int, c *Counter) {
	t.Helper()
	if len(counts) != len(chunks) {
		t.Fatalf("%d counts for %d chunks", len(counts), len(chunks))
	}
	for i, ch := range chunks {
		if n := c.Count(ch); counts[i] != n {
			t.Fatalf("chunk %d %q: count %d, the counter says %d", i, ch, counts[i], n)
		}
	}
}

func TestChunkHugeWord(t *testing.T) {
	t.Parallel()
	c := testCounter(t)
	in := strings.Repeat("abcdefghij", 20_000) // 200 kB without a boundary
	chunks := Chunk(in, 512, c)
	checkChunks(t, in, 512, chunks, c)
	if len(chunks) < 2 {
		t.Fatalf("200 kB word gave %d chunks", len(chunks))
	}
}

func FuzzChunk(f *testing.F) {
	f.Add("Hello there. How are you?\n\nFine.", 3)
	f.Add("a b c d e f g", 1)
	f.Add("日本語。テキスト！", 2)
	f.Add("<system-reminder>x y z</system-reminder> tail words here", 2)
	f.Add("\xff\xfe bad bytes", 1)
	c := testCounter(f)
	f.Fuzz(func(t *testing.T, s string, maxTokens int) {
		maxTokens = maxTokens%64 + 1
		if maxTokens < 1 {
			maxTokens += 64
		}
		chunks, counts := ChunkCounted(s, maxTokens, c)
		checkChunks(t, s, maxTokens, chunks, c)
		checkCounts(t, chunks, counts, c)
	})
}

func BenchmarkChunk(b *testing.B) {
	c := testCounter(b)
	s := strings.Repeat("The first sentence is here. The second one follows! Does a third? Yes.\n\n", 200)
	b.SetBytes(int64(len(s)))
	for b.Loop() {
		Chunk(s, 512, c)
	}
}
