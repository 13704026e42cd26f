package text

import (
	"math/rand/v2"
	"strings"
	"testing"
)

// pieceAlphabet has a rune of every class the pattern tells apart, ASCII
// and not, and the bytes of the contraction suffixes.
var pieceAlphabet = []string{
	"A", "b", "s", "l", "e", "'", "7", " ", "\n", "\r", "\t", ".", "/",
	"é", "É", "\u0301", "½", "\u00a0", "…", "ǅ", "ʰ", "日",
	"’", "“", "—", "😀", "\u2028", "\xff",
}

// checkPieces holds nextPiece, with its shortcut, to the general
// matcher at every position of s. (Not a t.Helper: that costs more than the
// check, over the hundreds of thousands of strings of the exhaustive test.)
func checkPieces(t *testing.T, s string) {
	for p := 0; p < len(s); {
		got, want := nextPiece(s, p), matchPiece(s, p)
		if got != want {
			t.Fatalf("nextPiece(%q, %d) = %d, general matcher says %d", s, p, got, want)
		}
		p = want
	}
}

// TestFastPieceMatchesGeneral: every string of up to four runes of the
// alphabet, then random longer ones.
func TestFastPieceMatchesGeneral(t *testing.T) {
	t.Parallel()
	var walk func(prefix string, depth int)
	walk = func(prefix string, depth int) {
		checkPieces(t, prefix)
		if depth == 0 {
			return
		}
		for _, r := range pieceAlphabet {
			walk(prefix+r, depth-1)
		}
	}
	walk("", 4)
	rng := rand.New(rand.NewPCG(3, 4))
	for range 50_000 {
		var b strings.Builder
		for n := 5 + rng.IntN(20); n > 0; n-- {
			b.WriteString(pieceAlphabet[rng.IntN(len(pieceAlphabet))])
		}
		checkPieces(t, b.String())
	}
}

func FuzzNextPiece(f *testing.F) {
	for _, s := range differentialCases {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		checkPieces(t, s)
	})
}

// TestClassTables: the tables the pre-tokenizer reads are classify's
// answers, for every byte and every rune they cover.
func TestClassTables(t *testing.T) {
	t.Parallel()
	for b := range 256 {
		want := uint8(clNonASCII)
		if b < 0x80 {
			want = classify(rune(b))
		}
		if byteClass[b] != want {
			t.Errorf("byteClass[%#x] = %#x, want %#x", b, byteClass[b], want)
		}
	}
	for r := rune(0x80); r <= 0x10ffff; r++ {
		if got, want := runeClass(r), classify(r); got != want {
			t.Fatalf("runeClass(%U) = %#x, classify says %#x", r, got, want)
		}
	}
}
