package text

import (
	"unicode"
	"unicode/utf8"
)

// The o200k_base pre-tokenizer is this alternation, tried in order at each
// position by a backtracking engine:
//
//  1. [^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?
//  2. [^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?
//  3. \p{N}{1,3}
//  4. ` ?[^\s\p{L}\p{N}]+[\r\n/]*`
//  5. \s*[\r\n]+
//  6. \s+(?!\S)
//  7. \s+
//
// nextPiece reproduces the first match, backtracking included, without a
// regular expression engine. Every rune is covered by some branch, so pieces
// tile the text.

// Rune classes, as bits.
const (
	clUpper  = 1 << iota // Lu Lt Lm Lo M: the "upper" run of branches 1-2
	clLower              // Ll Lm Lo M: the "lower" run
	clLetter             // \p{L}
	clNumber             // \p{N}
	clSpace              // \s (unicode.IsSpace, as regexp2 defines it)
	clCRLF               // \r or \n
)

func classify(r rune) uint8 {
	if r < utf8.RuneSelf {
		switch {
		case r >= 'a' && r <= 'z':
			return clLower | clLetter
		case r >= 'A' && r <= 'Z':
			return clUpper | clLetter
		case r >= '0' && r <= '9':
			return clNumber
		case r == '\r' || r == '\n':
			return clSpace | clCRLF
		case r == ' ' || r == '\t' || r == '\v' || r == '\f':
			return clSpace
		}
		return 0
	}
	var c uint8
	switch {
	case unicode.Is(unicode.Ll, r):
		c = clLower | clLetter
	case unicode.Is(unicode.Lu, r), unicode.Is(unicode.Lt, r):
		c = clUpper | clLetter
	case unicode.Is(unicode.Lm, r), unicode.Is(unicode.Lo, r):
		c = clUpper | clLower | clLetter
	case unicode.Is(unicode.M, r):
		c = clUpper | clLower
	case unicode.Is(unicode.N, r):
		c = clNumber
	}
	if unicode.IsSpace(r) {
		c |= clSpace
	}
	return c
}

// isPrefix: [^\r\n\p{L}\p{N}]
func isPrefix(c uint8) bool { return c&(clCRLF|clLetter|clNumber) == 0 }

// isOther: [^\s\p{L}\p{N}]
func isOther(c uint8) bool { return c&(clSpace|clLetter|clNumber) == 0 }

func classAt(s string, p int) (uint8, int) {
	if p >= len(s) {
		return 0, 0
	}
	if b := s[p]; b < utf8.RuneSelf {
		return byteClass[b], 1
	}
	r, n := utf8.DecodeRuneInString(s[p:])
	return runeClass(r), n
}

// run advances from p while the rune class has any bit of want.
func run(s string, p int, want uint8) int {
	for p < len(s) {
		c, n := classAt(s, p)
		if c&want == 0 {
			break
		}
		p += n
	}
	return p
}

// nextPiece returns the end of the pre-token starting at p (p < len(s)).
func nextPiece(s string, p int) int {
	if e := fastPiece(s, p); e > 0 {
		return e
	}
	return matchPiece(s, p)
}

// matchPiece is nextPiece for any text: the pattern's branches in order.
func matchPiece(s string, p int) int {
	c0, n0 := classAt(s, p)
	if e := branchLetters(s, p, c0, n0, false); e > 0 {
		return e
	}
	if e := branchLetters(s, p, c0, n0, true); e > 0 {
		return e
	}
	if c0&clNumber != 0 {
		e := p + n0
		for k := 1; k < 3; k++ {
			c, n := classAt(s, e)
			if c&clNumber == 0 {
				break
			}
			e += n
		}
		return e
	}
	if e := branchOther(s, p, c0); e > 0 {
		return e
	}
	return branchSpace(s, p)
}

// branchLetters matches branch 1 (upperFirst=false) or 2 (upperFirst=true).
// The optional prefix is greedy, so the engine tries it first and falls back
// to no prefix (which matters only for a combining mark, both prefix and
// letter).
func branchLetters(s string, p int, c0 uint8, n0 int, upperFirst bool) int {
	if isPrefix(c0) {
		if e := lettersAt(s, p+n0, upperFirst); e > 0 {
			return e
		}
	}
	return lettersAt(s, p, upperFirst)
}

func lettersAt(s string, q int, upperFirst bool) int {
	uEnd := run(s, q, clUpper)
	if upperFirst {
		// [U]+[L]*: the first success takes both runs whole.
		if uEnd == q {
			return 0
		}
		return suffix(s, run(s, uEnd, clLower))
	}
	// [U]*[L]+: the engine gives back upper runes one at a time until the
	// lower run can start; the lower run then ends where the upper run's
	// remaining runes are not lower (or at the first non-lower after uEnd).
	if c, _ := classAt(s, uEnd); c&clLower != 0 {
		return suffix(s, run(s, uEnd, clLower))
	}
	for k := uEnd; k > q; {
		r, n := utf8.DecodeLastRuneInString(s[q:k])
		if runeClass(r)&clLower != 0 {
			return suffix(s, k)
		}
		k -= n
	}
	return 0
}

// suffix matches the optional (?i:'s|'t|'re|'ve|'m|'ll|'d) at e.
func suffix(s string, e int) int {
	if e+1 >= len(s) || s[e] != '\'' {
		return e
	}
	switch s[e+1] | 0x20 {
	case 's', 't', 'm', 'd':
		return e + 2
	case 'r', 'v':
		if e+2 < len(s) && s[e+2]|0x20 == 'e' {
			return e + 3
		}
	case 'l':
		if e+2 < len(s) && s[e+2]|0x20 == 'l' {
			return e + 3
		}
	}
	return e
}

// branchOther matches ` ?[^\s\p{L}\p{N}]+[\r\n/]*`.
func branchOther(s string, p int, c0 uint8) int {
	q := p
	if s[p] == ' ' {
		if c, _ := classAt(s, p+1); isOther(c) && p+1 < len(s) {
			q = p + 1
		} else {
			return 0
		}
	} else if !isOther(c0) {
		return 0
	}
	e := q
	for e < len(s) {
		c, n := classAt(s, e)
		if !isOther(c) {
			break
		}
		e += n
	}
	for e < len(s) && (s[e] == '\r' || s[e] == '\n' || s[e] == '/') {
		e++
	}
	return e
}

// branchSpace matches branches 5-7 on a whitespace run starting at p.
func branchSpace(s string, p int) int {
	wEnd := run(s, p, clSpace)
	if wEnd == p {
		// Unreachable for valid UTF-8 (every rune is letter, number, space
		// or other); advance one rune so the scan always progresses.
		_, n := utf8.DecodeRuneInString(s[p:])
		return p + n
	}
	// 5: \s*[\r\n]+ ends just after the last CR/LF of the run.
	for k := wEnd - 1; k >= p; k-- {
		if s[k] == '\r' || s[k] == '\n' {
			return k + 1
		}
	}
	// 6: \s+(?!\S) leaves the run's last rune for the next piece unless the
	// text ends here.
	if wEnd == len(s) {
		return wEnd
	}
	_, last := utf8.DecodeLastRuneInString(s[p:wEnd])
	if wEnd-last > p {
		return wEnd - last
	}
	// 7: \s+
	return wEnd
}
