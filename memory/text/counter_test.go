package text

import (
	"fmt"
	"strings"
	"sync"
	"testing"
	"unicode/utf8"

	"github.com/pkoukk/tiktoken-go"
	tiktoken_loader "github.com/pkoukk/tiktoken-go-loader"
)

// Loading the vocabulary takes a noticeable fraction of a second and tens of
// megabytes, so the tests of this package share one Counter and one
// reference encoder.
var (
	sharedCounter   = sync.OnceValues(NewCounter)
	sharedReference = sync.OnceValues(newReference)
)

func testCounter(t testing.TB) *Counter {
	t.Helper()
	c, err := sharedCounter()
	if err != nil {
		t.Fatalf("NewCounter: %v", err)
	}
	return c
}

// o200kPattern is tiktoken-go's o200k_base pattern, copied so the reference
// encoder can be built without tiktoken-go's package-level loader.
var o200kPattern = strings.Join([]string{
	`[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?`,
	`[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?`,
	`\p{N}{1,3}`,
	` ?[^\s\p{L}\p{N}]+[\r\n/]*`,
	`\s*[\r\n]+`,
	`\s+(?!\S)`,
	`\s+`,
}, "|")

// newReference builds tiktoken-go's own encoder over the same embedded ranks.
func newReference() (*tiktoken.Tiktoken, error) {
	ranks, err := tiktoken_loader.NewOfflineLoader().LoadTiktokenBpe(Encoding + ".tiktoken")
	if err != nil {
		return nil, err
	}
	special := map[string]int{tiktoken.ENDOFTEXT: 199999, tiktoken.ENDOFPROMPT: 200018}
	bpe, err := tiktoken.NewCoreBPE(ranks, special, o200kPattern)
	if err != nil {
		return nil, err
	}
	enc := &tiktoken.Encoding{Name: Encoding, PatStr: o200kPattern, MergeableRanks: ranks, SpecialTokens: special}
	set := map[string]any{tiktoken.ENDOFTEXT: true, tiktoken.ENDOFPROMPT: true}
	return tiktoken.NewTiktoken(bpe, enc, set), nil
}

func referenceCount(t testing.TB, s string) int {
	t.Helper()
	ref, err := sharedReference()
	if err != nil {
		t.Fatalf("reference encoder: %v", err)
	}
	return len(ref.EncodeOrdinary(s))
}

func TestCountKnownValues(t *testing.T) {
	t.Parallel()
	c := testCounter(t)
	// Values from OpenAI's tiktoken (o200k_base).
	tests := []struct {
		in   string
		want int
	}{
		{"", 0},
		{"hello world", 2},
		{"Hello, world!", 4},
		{"I'm swamped with the kids & work.", 9},
		{"  \n\n", 1},
	}
	for _, tt := range tests {
		if got := c.Count(tt.in); got != tt.want {
			t.Errorf("Count(%q) = %d, want %d", tt.in, got, tt.want)
		}
	}
}

// differentialCases exercise every branch of the pre-tokenizer pattern.
var differentialCases = []string{
	"",
	"a",
	"Hey Caroline! Good to see you! I'm swamped with the kids & work. What's up with you?",
	"HELLO world HeLLo WoRLD McDONALD's O'NEIL'S they'RE we'Ve I'LL you'D",
	"numbers 1 12 123 1234 12345 3.14159 1,000,000 ½ ² ٣٤٥",
	"tabs\tand\nnewlines\r\n\r\n  \n   trailing   ",
	"   leading spaces and    inner     runs",
	"punctuation!!! ...\n/// a/b/c //\n/ ?? (x) [y] {z} <tag attr=\"v\">",
	"code: func (c *Counter) Count(s string) int { return 0 }\n\tif x != nil {\n\t\treturn\n\t}\n",
	"unicode: café naïve Ǆemal ǅemal ǆemal Straße ΑΒΓ αβγ Ωmega",
	"combining: e\u0301 \u0301x a\u0300\u0301b \u0301\u0301 ",
	"cjk: 日本語のテキスト、中文文本。한국어 텍스트",
	"emoji: 👍🏽 😀😀 🇫🇷 👨‍👩‍👧",
	"arabic: مرحبا بالعالم hebrew: שלום עולם",
	"spaces: \u00a0nbsp\u2003em\u3000ideographic\u0085nel",
	"\u2028line\u2029para",
	"<|endoftext|> special <|endofprompt|>",
	strings.Repeat("a", 1000),
	strings.Repeat("ab", 700),
	strings.Repeat("😀", 300),
	strings.Repeat(" ", 200) + "x",
	strings.Repeat("=", 500) + "\n",
	"\xff\xfe invalid \xc3 utf8 \xe2\x82",
	"ǈ ǋ ǲ Lt titlecase ᾈ ᾉ",
	"ʰʱʲ modifier ˆ ˇ ˉ",
}

func TestCountMatchesTiktoken(t *testing.T) {
	t.Parallel()
	c := testCounter(t)
	for _, s := range differentialCases {
		if got, want := c.Count(s), referenceCount(t, s); got != want {
			t.Errorf("Count(%q) = %d, tiktoken-go says %d", s, got, want)
		}
	}
}

func TestPiecesTileText(t *testing.T) {
	t.Parallel()
	for _, s := range differentialCases {
		if !utf8.ValidString(s) {
			continue
		}
		var b strings.Builder
		for p := 0; p < len(s); {
			e := nextPiece(s, p)
			if e <= p || e > len(s) {
				t.Fatalf("nextPiece(%q, %d) = %d", s, p, e)
			}
			b.WriteString(s[p:e])
			p = e
		}
		if b.String() != s {
			t.Errorf("pieces of %q do not tile it", s)
		}
	}
}

func TestMergeLongMatchesShort(t *testing.T) {
	t.Parallel()
	c := testCounter(t)
	for _, s := range []string{"abcdefgh", "antidisestablishmentarianism", "aaaaaaaaaaaaaaaaaaaaaaaaaaaaa", "😀😀😀", "xyzzyplugh"} {
		if a, b := c.mergeShort(s), c.mergeLong(s); a != b {
			t.Errorf("%q: mergeShort %d, mergeLong %d", s, a, b)
		}
	}
}

func TestCountConcurrent(t *testing.T) {
	t.Parallel()
	c := testCounter(t)
	want := make([]int, len(differentialCases))
	for i, s := range differentialCases {
		want[i] = c.Count(s)
	}
	var wg sync.WaitGroup
	errs := make(chan string, 8*len(differentialCases))
	for g := 0; g < 8; g++ {
		wg.Go(func() {
			for i, s := range differentialCases {
				if got := c.Count(s); got != want[i] {
					errs <- s
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for s := range errs {
		t.Errorf("concurrent Count(%q) differs", s)
	}
}

func FuzzCount(f *testing.F) {
	for _, s := range differentialCases {
		f.Add(s)
	}
	c := testCounter(f)
	f.Fuzz(func(t *testing.T, s string) {
		if got, want := c.Count(s), referenceCount(t, s); got != want {
			t.Errorf("Count(%q) = %d, tiktoken-go says %d", s, got, want)
		}
	})
}

func BenchmarkCount(b *testing.B) {
	c := testCounter(b)
	s := strings.Repeat(differentialCases[2]+" "+differentialCases[8], 20)
	b.SetBytes(int64(len(s)))
	b.ReportAllocs()
	for b.Loop() {
		c.Count(s)
	}
}

func BenchmarkCountTiktokenGo(b *testing.B) {
	ref, err := sharedReference()
	if err != nil {
		b.Fatal(err)
	}
	s := strings.Repeat(differentialCases[2]+" "+differentialCases[8], 20)
	b.SetBytes(int64(len(s)))
	b.ReportAllocs()
	for b.Loop() {
		ref.EncodeOrdinary(s)
	}
}

func BenchmarkCountLongWord(b *testing.B) {
	c := testCounter(b)
	s := strings.Repeat("abcdefghij", 10_000)
	b.SetBytes(int64(len(s)))
	for b.Loop() {
		c.Count(s)
	}
}

// TestPieceCacheKeepsCounts: counting through a warm piece cache, from
// many goroutines, gives tiktoken-go's counts, as the first count did.
func TestPieceCacheKeepsCounts(t *testing.T) {
	t.Parallel()
	c := testCounter(t)
	texts := append([]string{"Xylophonists' quixotic zygomorphic 12345 ünïcödé namesake Brzęczyszczykiewicz"}, differentialCases...)
	var wg sync.WaitGroup
	errs := make(chan string, 8*len(texts))
	for range 8 {
		wg.Go(func() {
			for _, s := range texts {
				if got, want := c.Count(s), referenceCount(t, s); got != want {
					errs <- fmt.Sprintf("Count(%q) = %d, tiktoken-go says %d", s, got, want)
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Error(e)
	}
}
