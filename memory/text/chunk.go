package text

import (
	"cmp"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Chunk splits s into consecutive pieces of at most maxTokens model tokens
// each, counted with c, whose concatenation is exactly s: items store text
// verbatim, so nothing may be trimmed or normalized here.
//
// Cuts are placed at the coarsest boundary that makes the pieces fit:
// harness scaffolding blocks (see Content), then blank lines, then line
// ends, then sentence ends, then whitespace, and only as a last resort
// inside a word (at a rune boundary). Whitespace after a boundary stays with
// the piece before it, so chunks start with text. Pieces are packed
// greedily: a chunk holds as many consecutive boundary-delimited pieces as
// fit.
//
// An empty s gives no chunks. maxTokens < 1 is treated as 1; a single rune
// that alone is more than maxTokens tokens (some emoji are several) is a
// chunk by itself, the only case a chunk exceeds maxTokens.
func Chunk(s string, maxTokens int, c *Counter) []string {
	chunks, _ := ChunkCounted(s, maxTokens, c)
	return chunks
}

// ChunkCounted is Chunk with each chunk's token count. A message within
// the budget, most of them, is counted once: its count is the one that
// decided it needs no cut.
func ChunkCounted(s string, maxTokens int, c *Counter) (chunks []string, counts []int) {
	if s == "" {
		return nil, nil
	}
	if maxTokens < 1 {
		maxTokens = 1
	}
	if n := c.Count(s); n <= maxTokens {
		return []string{s}, []int{n}
	}
	ch := chunker{s: s, max: maxTokens, c: c, spans: blockSpans(s)}
	ch.pack(0, len(s), levelScaffold)
	return ch.out, ch.counts
}

// Split levels, coarsest first.
const (
	levelScaffold = iota
	levelParagraph
	levelLine
	levelSentence
	levelWord
	levelRune
)

type chunker struct {
	s   string
	max int
	c   *Counter
	out []string
	// counts are the token counts of out: each was taken to decide the
	// chunk fits, and counting it again doubled the work of a long message.
	counts []int
	// spans are the scaffolding blocks of s, cut around at levelScaffold.
	spans []span
}

// pack appends chunks covering s[from:to] (which is over budget), cutting at
// boundaries of the given level and recursing into pieces that alone are
// still too large.
func (ch *chunker) pack(from, to, level int) {
	if level == levelRune {
		ch.hardSplit(from, to)
		return
	}
	start, est := -1, 0 // the open chunk s[start:p], its estimated count
	flush := func(end int) {
		if start >= 0 {
			ch.emit(start, end, level)
			start = -1
		}
	}
	for p := from; p < to; {
		e := ch.boundary(p, to, level)
		if p == from && e == to {
			// No boundary of this level: the piece is the whole range,
			// already known to be over budget.
			ch.pack(from, to, level+1)
			return
		}
		n := ch.c.Count(ch.s[p:e])
		switch {
		case n > ch.max:
			flush(p)
			ch.pack(p, e, level+1)
		case start < 0:
			start, est = p, n
		case est+n <= ch.max-ch.max/8:
			// Comfortably inside the budget: token counts are nearly
			// additive, so skip the exact count; emit verifies it.
			est += n
		default:
			if exact := ch.c.Count(ch.s[start:e]); exact <= ch.max {
				est = exact
			} else {
				flush(p)
				start, est = p, n
			}
		}
		p = e
	}
	flush(to)
}

// emit appends s[from:to] if it fits exactly, and otherwise (the estimate in
// pack was wrong, which needs counts that are not additive) re-packs it with
// every step counted exactly.
func (ch *chunker) emit(from, to, level int) {
	if n := ch.c.Count(ch.s[from:to]); n <= ch.max {
		ch.add(from, to, n)
		return
	}
	start := from
	for p := from; p < to; {
		e := ch.boundary(p, to, level)
		if p > start && ch.c.Count(ch.s[start:e]) > ch.max {
			ch.appendFitting(start, p, level)
			start = p
		}
		p = e
	}
	ch.appendFitting(start, to, level)
}

func (ch *chunker) appendFitting(from, to, level int) {
	if n := ch.c.Count(ch.s[from:to]); n <= ch.max {
		ch.add(from, to, n)
		return
	}
	ch.pack(from, to, level+1)
}

// add appends the chunk s[from:to], whose count is n.
func (ch *chunker) add(from, to, n int) {
	ch.out = append(ch.out, ch.s[from:to])
	ch.counts = append(ch.counts, n)
}

// hardSplit cuts s[from:to] at rune boundaries into prefixes that fit.
// Each cut is searched between a prefix that fits and one that does not,
// guessing by proportion of tokens (counts are nearly linear in length
// inside one run of text) and falling back to bisection; it stops once the
// prefix is within 1/16 of the budget, so a chunk costs a handful of counts
// of its own size, never counts of the whole remainder. The first guess is
// the length the previous chunk's density gives: a run long enough to need
// this is usually uniform (a blob, a word of megabytes), and the guess then
// fits at once instead of after two or three counts.
func (ch *chunker) hardSplit(from, to int) {
	span := 4 * ch.max
	for from < to {
		lo, hi := from, to+1 // s[from:lo] fits (or is empty); s[from:hi] does not (hi > to: none known)
		loN := 0             // Count(s[from:lo])
		g := runeStartAtOrAfter(ch.s, from+span, to)
		for {
			n := ch.c.Count(ch.s[from:g])
			if n <= ch.max {
				lo, loN = g, n
				if g == to || n >= ch.max-ch.max/16 {
					break
				}
			} else {
				hi = g
			}
			next := min(to, from+int(int64(g-from)*int64(ch.max)/int64(max(n, 1))))
			if next <= lo || next >= hi {
				next = lo + (hi-lo)/2
			}
			if next = runeStartAtOrAfter(ch.s, next, to); next >= hi {
				next = runeEnd(ch.s, lo)
			}
			if next <= lo || next >= hi {
				break
			}
			g = next
		}
		if lo == from {
			lo = runeEnd(ch.s, from) // one rune alone exceeds the budget
			loN = ch.c.Count(ch.s[from:lo])
		}
		ch.add(from, lo, loN)
		// Aim at the middle of the accepted band, [max-max/16, max].
		span = max(1, int(int64(lo-from)*int64(ch.max-ch.max/32)/int64(max(loN, 1))))
		from = lo
	}
}

func runeStartAtOrAfter(s string, i, limit int) int {
	if i >= limit {
		return limit
	}
	for i < limit && !utf8.RuneStart(s[i]) {
		i++
	}
	return i
}

func runeEnd(s string, i int) int {
	_, n := utf8.DecodeRuneInString(s[i:])
	return i + n
}

// boundary returns the end of the piece of the given level starting at p,
// never beyond to, always beyond p.
func (ch *chunker) boundary(p, to, level int) int {
	s := ch.s[:to]
	var e int
	switch level {
	case levelScaffold:
		e = scaffoldBoundary(ch.spans, p, to)
	case levelParagraph:
		e = paragraphBoundary(s, p)
	case levelLine:
		if i := strings.IndexByte(s[p:], '\n'); i >= 0 {
			e = p + i + 1
		} else {
			e = to
		}
	case levelSentence:
		e = sentenceBoundary(s, p)
	default:
		e = wordBoundary(s, p)
	}
	if e <= p {
		return to
	}
	return e
}

// scaffoldBoundary keeps every scaffolding block (and the text between
// blocks) a piece of its own, so a block that fits lands whole in a chunk
// and Content can recognize it there.
func scaffoldBoundary(spans []span, p, to int) int {
	// The first span that ends after p decides; spans are sorted and
	// disjoint, so it is found by search, not by walking them all.
	first, _ := slices.BinarySearchFunc(spans, p, func(sp span, p int) int { return cmp.Compare(sp.end, p+1) })
	for _, sp := range spans[first:] {
		switch {
		case sp.start <= p && p < sp.end:
			return min(sp.end, to)
		case sp.start > p:
			return min(sp.start, to)
		}
	}
	return to
}

// paragraphBoundary ends after the first whitespace run holding two
// newlines (a blank line).
func paragraphBoundary(s string, p int) int {
	for i := p; i < len(s); {
		j := strings.IndexByte(s[i:], '\n')
		if j < 0 {
			return len(s)
		}
		i += j + 1
		k := i
		for k < len(s) && (s[k] == ' ' || s[k] == '\t' || s[k] == '\r') {
			k++
		}
		if k < len(s) && s[k] == '\n' {
			return skipSpace(s, k+1)
		}
	}
	return len(s)
}

// sentenceBoundary ends after a sentence terminator, any closing quotes or
// brackets, and the whitespace that follows.
func sentenceBoundary(s string, p int) int {
	for i := p; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		i += n
		if !isTerminator(r) {
			continue
		}
		for i < len(s) {
			r, n := utf8.DecodeRuneInString(s[i:])
			if !isTerminator(r) && !isCloser(r) {
				break
			}
			i += n
		}
		if i == len(s) {
			return i
		}
		if r, _ := utf8.DecodeRuneInString(s[i:]); unicode.IsSpace(r) {
			return skipSpace(s, i)
		}
		if r, _ := utf8.DecodeLastRuneInString(s[:i]); r == '。' || r == '！' || r == '？' {
			return i // CJK sentences are not followed by spaces
		}
	}
	return len(s)
}

func isTerminator(r rune) bool {
	switch r {
	case '.', '!', '?', '…', '。', '！', '？':
		return true
	}
	return false
}

func isCloser(r rune) bool {
	switch r {
	case '"', '\'', ')', ']', '}', '”', '’', '»', '」', '』':
		return true
	}
	return false
}

// wordBoundary ends after the first whitespace run that follows text.
func wordBoundary(s string, p int) int {
	i := p
	for i < len(s) {
		r, n := utf8.DecodeRuneInString(s[i:])
		if unicode.IsSpace(r) {
			break
		}
		i += n
	}
	return skipSpace(s, i)
}

func skipSpace(s string, i int) int {
	for i < len(s) {
		r, n := utf8.DecodeRuneInString(s[i:])
		if !unicode.IsSpace(r) {
			break
		}
		i += n
	}
	return i
}
