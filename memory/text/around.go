package text

import "unicode/utf8"

// A frame renders each stored turn between labels ("【Caroline】 " before
// it, a blank line after it when the next turn is of the same role) and
// counts the rendered text exactly, though the turn's own count was taken
// when it was stored. Counting is a sum over pre-tokenizer pieces, and a
// piece depends only on the text from its start (nextPiece reads forward,
// never back), so wrapping a text changes only the pieces near its ends:
// CountAround counts those and takes the rest from the stored count.
//
// Where the seams go: a piece always ends between an ASCII letter and a
// space that an ASCII letter follows, whatever came before. The piece
// holding the letter can only be a letter run (branches 1-2), which stops
// at the space (a contraction would need an apostrophe there), and from the
// space on the pieces are the same as those of the text that starts there.
// So the text before the first such place, and the text after the last,
// are all that wrapping can change.

// CountAround returns Count(pre + mid + post), given n == Count(mid),
// counting only pre, mid's first and last words and post. ok is false when
// mid holds no place to cut (no ASCII letter, space, ASCII letter) or a text
// is not valid UTF-8; the caller then counts the whole.
func (c *Counter) CountAround(pre, mid string, n int, post string) (int, bool) {
	if !utf8.ValidString(pre) || !utf8.ValidString(mid) || !utf8.ValidString(post) {
		return 0, false
	}
	first, last := -1, -1
	for i := 1; i+1 < len(mid); i++ {
		if mid[i] == ' ' && isASCIILetter(mid[i-1]) && isASCIILetter(mid[i+1]) {
			first = i
			break
		}
	}
	if first < 0 {
		return 0, false
	}
	for i := len(mid) - 2; i >= first; i-- {
		if mid[i] == ' ' && isASCIILetter(mid[i-1]) && isASCIILetter(mid[i+1]) {
			last = i
			break
		}
	}
	head, tail := mid[:first], mid[last:]
	n += c.Count(pre+head) - c.Count(head)
	n += c.Count(tail+post) - c.Count(tail)
	return n, true
}

func isASCIILetter(b byte) bool { return b|0x20 >= 'a' && b|0x20 <= 'z' }
