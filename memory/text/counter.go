package text

import (
	"fmt"
	"strings"
	"unicode/utf8"

	tiktoken_loader "github.com/pkoukk/tiktoken-go-loader"
)

// Encoding is the BPE vocabulary the Counter embeds. o200k_base is the
// vocabulary of current OpenAI models; Anthropic publishes no tokenizer, and
// o200k counts English prose within a few percent of what Claude bills, which
// is what a budget needs.
const Encoding = "o200k_base"

// Counter counts model tokens with a real BPE vocabulary embedded in the
// binary. Build one per process with NewCounter and share it: it is safe for
// concurrent use (its only mutable part is an internal, lock-free cache).
//
// tiktoken-go's own encoder runs a backtracking regular expression over a
// rune copy of the text and allocates per piece, which is too slow for a
// count taken on every rendered frame segment. Counter keeps its vocabulary
// (the same ranks, from the same embedded file) but pre-tokenizes with a
// hand-written scanner equivalent to the o200k_base pattern and counts merges
// without building token slices. A differential test and fuzz target hold it
// to tiktoken-go's EncodeOrdinary, exactly except on pieces (runs without a
// space or punctuation) of more than 2 KiB, which it counts in windows and
// at most a token per KiB over (bpe.go, longPiece).
type Counter struct {
	ranks  *rankTable
	pieces *pieceCache // counts of multi-token pieces, filled as they are met
}

// NewCounter loads the embedded o200k_base vocabulary (about 200k ranks; tens
// of milliseconds). Call it once at start, never per request.
func NewCounter() (*Counter, error) {
	ranks, err := tiktoken_loader.NewOfflineLoader().LoadTiktokenBpe(Encoding + ".tiktoken")
	if err != nil {
		return nil, fmt.Errorf("load %s: %w", Encoding, err)
	}
	if len(ranks) == 0 {
		return nil, fmt.Errorf("load %s: empty vocabulary", Encoding)
	}
	bmp() // the pre-tokenizer's rune classes, built here rather than in a request
	table, err := newRankTable(ranks)
	if err != nil {
		return nil, fmt.Errorf("load %s: %w", Encoding, err)
	}
	return &Counter{ranks: table, pieces: newPieceCache()}, nil
}

// Count returns the number of model tokens of s, encoded as ordinary text
// (special-token spellings such as "<|endoftext|>" count as the text they
// are, which is how a provider sees them inside a message).
func (c *Counter) Count(s string) int {
	if !utf8.ValidString(s) {
		s = replaceInvalid(s)
	}
	n := 0
	for p := 0; p < len(s); {
		end := nextPiece(s, p)
		n += c.pieceTokens(s[p:end])
		p = end
	}
	return n
}

// replaceInvalid mirrors Go's []rune conversion, which tiktoken-go applies:
// every invalid byte becomes one U+FFFD.
func replaceInvalid(s string) string {
	var b strings.Builder
	b.Grow(len(s) + 8)
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b.WriteString("\uFFFD")
		} else {
			b.WriteString(s[i : i+size])
		}
		i += size
	}
	return b.String()
}

func (c *Counter) pieceTokens(piece string) int {
	var (
		k pieceKey
		h uint64
	)
	if len(piece) <= maxPacked {
		// One key and hash serve the vocabulary and the cache.
		k = packKey(piece)
		h = k.hash()
		if _, ok := c.ranks.lookupPacked(k, h); ok {
			return 1
		}
		if len(piece) <= 1 {
			return len(piece)
		}
	} else {
		if _, ok := c.ranks.long[piece]; ok {
			return 1
		}
		if len(piece) > shortPiece {
			return c.countLong(piece) // rare, and not worth keeping
		}
		k, h = c.pieces.longKey(piece)
	}
	if n, ok := c.pieces.get(piece, k, h); ok {
		return n
	}
	n := c.mergeShort(piece)
	c.pieces.put(piece, k, h, n)
	return n
}
