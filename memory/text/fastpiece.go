package text

import (
	"sync"
	"sync/atomic"
	"unicode/utf8"
)

// The general matcher (matchPiece) classifies runes with up to eight
// binary searches of Unicode tables each and tries the pattern's branches
// one after another, re-reading the same runes; it was half of Count. Two
// shortcuts remove most of that: class tables (byteClass, runeClass), and
// fastPiece, which decides in one scan the pieces whose runes are ASCII
// and the punctuation-led ones of English text (’s, “Quote, —).

// clNonASCII marks, in byteClass, a byte that starts or continues a
// multi-byte rune: its class is unknown until the rune is decoded.
const clNonASCII = 1 << 7

// byteClass is classify for ASCII bytes, taken from classify itself so the
// two cannot disagree.
var byteClass = func() (t [256]uint8) {
	for b := range t {
		if b < utf8.RuneSelf {
			t[b] = classify(rune(b))
		} else {
			t[b] = clNonASCII
		}
	}
	return t
}()

// bmpClasses is classify of every rune of the Basic Multilingual Plane
// (64 kB), built on first use (a few milliseconds: NewCounter does it, so
// importing the package costs nothing). The pointer is atomic so that
// nextPiece, which needs no Counter, may build it from any goroutine.
var (
	bmpOnce    sync.Once
	bmpClasses atomic.Pointer[[0x10000]uint8]
)

func bmp() *[0x10000]uint8 {
	if t := bmpClasses.Load(); t != nil {
		return t
	}
	return buildBMP()
}

func buildBMP() *[0x10000]uint8 {
	bmpOnce.Do(func() {
		t := new([0x10000]uint8)
		for r := range t {
			t[r] = classify(rune(r))
		}
		bmpClasses.Store(t)
	})
	return bmpClasses.Load()
}

// runeClass is classify, by table lookup below U+10000.
func runeClass(r rune) uint8 {
	if uint32(r) < 0x10000 {
		return bmp()[r]
	}
	return classify(r)
}

// fastPiece is nextPiece for the pieces it can decide in one scan: those
// that start with an ASCII rune, or with a non-ASCII punctuation rune (not
// a mark) that ASCII follows. It returns 0 when a non-ASCII rune
// would join the piece (extend a run of letters, digits, whitespace or
// punctuation, or start the letters after a prefix); matchPiece decides
// those.
//
// The shortcuts hold because the runes fastPiece accepts into a piece are
// ASCII, where no rune is both upper and lower, none is a mark, and
// letters, digits, whitespace and the rest partition the bytes: so the
// first branch that can start at p is the one that matches, and it takes
// its greedy runs whole, without backtracking. TestFastPieceMatchesGeneral
// holds it to matchPiece.
func fastPiece(s string, p int) int {
	c0, n0 := byteClass[s[p]], 1
	if c0&clNonASCII != 0 {
		if c0, n0 = classAt(s, p); !isOther(c0) || c0&(clUpper|clLower) != 0 {
			return 0 // a non-ASCII letter, digit or space, or a mark
		}
	}
	// Branches 1 and 2: letters, after an optional prefix.
	q := p // where the letters would start
	if isPrefix(c0) && p+n0 < len(s) {
		c1 := byteClass[s[p+n0]]
		if c1&clNonASCII != 0 {
			if c1, _ = classAt(s, p+n0); c1&(clUpper|clLower|clLetter) != 0 || isOther(c1) {
				return 0 // starts letters, or joins the punctuation of branch 4
			}
		} else if c1&clLetter != 0 {
			q = p + n0
		}
	}
	if q > p || c0&clLetter != 0 {
		// Branch 1 if lower letters follow the upper ones ([U]*[L]+),
		// else branch 2 ([U]+[L]*): either way, both runs whole.
		e := q
		for e < len(s) && byteClass[s[e]]&clUpper != 0 {
			e++
		}
		for e < len(s) && byteClass[s[e]]&clLower != 0 {
			e++
		}
		if stopsAt(s, e, clUpper|clLower) {
			return suffix(s, e)
		}
		return 0
	}
	// Branch 3: up to three digits.
	if c0&clNumber != 0 {
		e := p + 1
		for e < len(s) && e < p+3 && byteClass[s[e]]&clNumber != 0 {
			e++
		}
		if e == p+3 || stopsAt(s, e, clNumber) {
			return e
		}
		return 0
	}
	// Branch 4, with the optional space when punctuation follows it (a
	// non-ASCII rune after the space is not punctuation: that returned
	// above).
	const notOther = clSpace | clLetter | clNumber | clNonASCII
	if s[p] == ' ' && p+1 < len(s) && byteClass[s[p+1]]&notOther == 0 {
		q = p + 1
	}
	if q > p || isOther(c0) {
		e := q + 1
		if q == p {
			e = p + n0
		}
		for e < len(s) && byteClass[s[e]]&notOther == 0 {
			e++
		}
		if !stopsAt(s, e, 0) {
			return 0
		}
		for e < len(s) && (s[e] == '\r' || s[e] == '\n' || s[e] == '/') {
			e++
		}
		return e
	}
	// Branches 5-7, as in branchSpace, on a run of ASCII whitespace.
	e := p + 1
	for e < len(s) && byteClass[s[e]]&clSpace != 0 {
		e++
	}
	if !stopsAt(s, e, clSpace) {
		return 0
	}
	for k := e - 1; k >= p; k-- {
		if s[k] == '\r' || s[k] == '\n' {
			return k + 1
		}
	}
	if e == len(s) || e-1 == p {
		return e
	}
	return e - 1
}

// stopsAt reports whether an ASCII scan that ended at e ends the run: the
// text ends, or an ASCII byte ended it, or the rune at e has no bit of
// runBits (0 means a run of punctuation: the rune is not punctuation).
func stopsAt(s string, e int, runBits uint8) bool {
	return e >= len(s) || s[e] < utf8.RuneSelf || runeStops(s, e, runBits)
}

func runeStops(s string, e int, runBits uint8) bool {
	c, _ := classAt(s, e)
	if runBits == 0 {
		return !isOther(c)
	}
	return c&runBits == 0
}
