package text

import (
	"strings"
	"unicode"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"
)

// MaxTokenBytes caps one stored token. Longer runs of letters and digits are
// base64 blobs, hashes or minified code: useless as search terms and costly
// in every retrieval row. The cap keeps their first bytes (at a rune
// boundary), which still match an identical blob.
const MaxTokenBytes = 64

// Normalize returns the stored tokens of s: the sequence every retrieval row
// is derived from, whatever the dictionary version. It is deliberately
// lossless about words: it keeps numbers, stopwords and words no dictionary
// knows (names, places, brands), and drops only what separates them, so a
// later dictionary can change its mind without re-reading the text.
//
//   - Text is lowercased rune by rune (Unicode-aware) and each token
//     NFC-composed, so "Café" typed with a combining accent equals the
//     precomposed one.
//   - A token is a run of letters, digits and combining marks.
//   - An apostrophe (', ’ or ʼ) between two letters stays inside the token as
//     ASCII ': "I'm" -> "i'm", "Caroline's" -> "caroline's", "rock'n'roll".
//     Contractions and possessives are thereby left to the dictionary (a
//     stopword "i'm", a possessive stripped to "caroline"), which is data and
//     versioned. Quotes around words ('hello', students') are separators.
//   - A '.' between two digits stays ("3.5", "192.168.0.1"); a ',' between a
//     digit and exactly three digits is a thousands separator and is dropped
//     ("1,000" -> "1000"); otherwise both separate.
//   - Everything else (whitespace, punctuation, symbols, emoji) separates.
func Normalize(s string) []string {
	var (
		out []string
		tok strings.Builder
	)
	flush := func() {
		if tok.Len() > 0 {
			t := tok.String()
			if !norm.NFC.IsNormalString(t) {
				t = norm.NFC.String(t)
			}
			out = append(out, truncateToken(t))
			tok.Reset()
		}
	}
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		switch {
		case isWordRune(r):
			tok.WriteRune(unicode.ToLower(r))
		case tok.Len() > 0 && isApostrophe(r) && lastIsLetter(tok.String()) && letterAt(s, i+n):
			tok.WriteByte('\'')
		case tok.Len() > 0 && r == '.' && lastIsDigit(tok.String()) && digitAt(s, i+n):
			tok.WriteByte('.')
		case tok.Len() > 0 && r == ',' && lastIsDigit(tok.String()) && thousandsAt(s, i+n):
			// Thousands separator: dropped, the digits join.
		default:
			flush()
		}
		i += n
	}
	flush()
	return out
}

func isWordRune(r rune) bool {
	if r < utf8.RuneSelf {
		return r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9'
	}
	return unicode.IsLetter(r) || unicode.IsDigit(r) || unicode.Is(unicode.M, r)
}

func isApostrophe(r rune) bool { return r == '\'' || r == '\u2019' || r == '\u02bc' }

func lastIsLetter(tok string) bool {
	r, _ := utf8.DecodeLastRuneInString(tok)
	return unicode.IsLetter(r) || unicode.Is(unicode.M, r)
}

func lastIsDigit(tok string) bool {
	r, _ := utf8.DecodeLastRuneInString(tok)
	return unicode.IsDigit(r)
}

func letterAt(s string, i int) bool {
	r, _ := utf8.DecodeRuneInString(s[i:])
	return i < len(s) && unicode.IsLetter(r)
}

func digitAt(s string, i int) bool {
	r, _ := utf8.DecodeRuneInString(s[i:])
	return i < len(s) && unicode.IsDigit(r)
}

// thousandsAt reports whether exactly three digits start at i.
func thousandsAt(s string, i int) bool {
	k := 0
	for ; k < 4 && i+k < len(s) && s[i+k] >= '0' && s[i+k] <= '9'; k++ {
	}
	if k != 3 {
		return false
	}
	return !digitAt(s, i+3)
}

func truncateToken(t string) string {
	if len(t) <= MaxTokenBytes {
		return t
	}
	cut := MaxTokenBytes
	for cut > 0 && !utf8.RuneStart(t[cut]) {
		cut--
	}
	return strings.TrimRight(t[:cut], "'.")
}
