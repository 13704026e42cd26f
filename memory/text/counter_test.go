package text

import (
	"fmt"
	"math/rand/v2"
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
		got, want := c.Count(s), referenceCount(t, s)
		if got != want && !(hasLongPiece(s) && got > want && got <= want+len(s)/1024) {
			t.Errorf("Count(%q) = %d, tiktoken-go says %d", s, got, want)
		}
	})
}

// hasLongPiece reports whether s has a piece Count counts in windows.
func hasLongPiece(s string) bool {
	s = replaceInvalid(s)
	for p := 0; p < len(s); {
		e := nextPiece(s, p)
		if e-p > longPiece {
			return true
		}
		p = e
	}
	return false
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

// randomText is n bytes (rounded up to a whole unit) of units drawn from
// alphabet: text that no cache helps with and, without a space or a
// punctuation mark in the alphabet, one pre-tokenized piece.
func randomText(alphabet []string, n int, seed uint64) string {
	rng := rand.New(rand.NewPCG(seed, 9))
	var b strings.Builder
	for b.Len() < n {
		b.WriteString(alphabet[rng.IntN(len(alphabet))])
	}
	return b.String()
}

var (
	lowerLetters = strings.Split("abcdefghijklmnopqrstuvwxyz", "")
	hanzi        = strings.Split("的一是不了人我在有他这为之大来以个中上们到说国和地也子时道出要就下得可你年生会自着去过家学对她里后小么心多天而能好都然没日于起还发成事只作当想看文无开手十用主行方又如前所本见经头面公同三已老从动两长知", "")
	thai         = strings.Split("กขคงจฉชซญดตถทนบปผพฟมยรลวสหอฮะัาิีึืุูเแโใไ่้๊๋็์", "")
	emoji        = []string{"😀", "👍", "🎉", "❤️", "🇫🇷"}
)

// TestCountExactUpToLongPiece: a piece of up to longPiece bytes, which is
// every piece of natural text, is counted exactly as tiktoken counts it.
func TestCountExactUpToLongPiece(t *testing.T) {
	t.Parallel()
	c := testCounter(t)
	tests := []struct {
		name string
		in   string
	}{
		{"random letters", randomText(lowerLetters, longPiece, 1)[:longPiece]},
		{"repeated letter", strings.Repeat("a", longPiece)},
		{"hanzi", randomText(hanzi, longPiece-2, 2)},
		{"thai", randomText(thai, longPiece-2, 3)},
		{"spaces", strings.Repeat(" ", longPiece-1) + "x"},
		{"in prose", "Before it " + randomText(lowerLetters, longPiece, 4)[:longPiece-1] + " and after it."}, // " xyz...": the space joins the piece
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got, want := c.Count(tt.in), referenceCount(t, tt.in); got != want {
				t.Errorf("Count = %d, tiktoken-go says %d", got, want)
			}
		})
	}
}

// TestCountLongPieceBounds: a piece longer than longPiece is counted in
// windows, never below its exact count (mergeLong on the whole piece, which
// TestMergeLongMatchesShort holds to the quadratic merge) and at most one
// token per kilobyte above it.
func TestCountLongPieceBounds(t *testing.T) {
	t.Parallel()
	c := testCounter(t)
	const size = 20_000
	tests := []struct {
		name     string
		alphabet []string
	}{
		{"random letters", lowerLetters},
		{"hex letters", strings.Split("abcdef", "")},
		{"one letter", []string{"a"}},
		{"two letters", []string{"ab"}},
		{"hanzi", hanzi},
		{"thai", thai},
		{"emoji", emoji},
		{"spaces", []string{" "}},
		{"equals signs", []string{"="}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			for seed := range uint64(3) {
				s := randomText(tt.alphabet, size, seed)
				got, exact := c.Count(s), c.mergeLong(s)
				if got < exact || got > exact+len(s)/1024 {
					t.Errorf("seed %d: Count = %d, exact %d: want within [%d, %d]", seed, got, exact, exact, exact+len(s)/1024)
				}
			}
		})
	}
}

// BenchmarkCountPerMB compares text without spaces, the worst case, with
// ordinary text. "letters" is one piece of random lower-case letters (its
// two sizes show the cost is linear); "words" are random letters in
// 5-letter words, which no cache helps either; "prose" is chat text.
func BenchmarkCountPerMB(b *testing.B) {
	c := testCounter(b)
	prose := strings.Repeat(differentialCases[2]+" "+differentialCases[8]+" "+differentialCases[3]+"\n", 8000)[:1<<20]
	var words strings.Builder
	for seed := uint64(0); words.Len() < 1<<20; seed++ {
		words.WriteString(randomText(lowerLetters, 5, seed) + " ")
	}
	for _, bc := range []struct {
		name string
		in   string
	}{
		{"letters-1MiB", randomText(lowerLetters, 1<<20, 1)},
		{"letters-4MiB", randomText(lowerLetters, 4<<20, 1)},
		{"words-1MiB", words.String()},
		{"prose-1MiB", prose},
	} {
		b.Run(bc.name, func(b *testing.B) {
			b.SetBytes(int64(len(bc.in)))
			for b.Loop() {
				c.Count(bc.in)
			}
		})
	}
}

// mergeLong is the exact count of a piece of any length, merged whole: the
// reference the windowed count is held to.
func (c *Counter) mergeLong(piece string) int {
	var m merger
	return m.merge(c, piece)
}
