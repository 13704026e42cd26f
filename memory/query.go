package memory

import (
	"unicode"
	"unicode/utf8"

	"github.com/perpetuity/perpetuity/memory/text"
)

// What one request's retrieval may cost. The live message is stored and
// forwarded whole; what retrieval reads of it is bounded, so a question's
// cost does not grow with its length:
//
//   - its analysis (normalizing, dictionary lookups, reading dates) reads at
//     most MaxQueryBytes of it: the first and the last half of that, where a
//     question sits before or after what it pastes;
//   - the scan scores with at most arena.DefaultMaxTerms of its terms, the
//     rarest (memory/arena), so each scan tests at most
//     arena.ProbeCeiling(items, terms) signature words;
//   - a frame runs two scans (the question, then its expansion), and the
//     memory tools at most MaxToolScans more per turn, each on a query
//     bounded the same way.

// MaxQueryBytes is how much of a question retrieval reads. 16 KiB is about
// 2,500 words, far more than any question and enough of a pasted page to
// find its rarest words.
const MaxQueryBytes = 16 << 10

// queryText is what retrieval reads of s: s itself when it is short enough,
// else its first and last MaxQueryBytes/2, cut between words.
func queryText(s string) string {
	if len(s) <= MaxQueryBytes {
		return s
	}
	half := MaxQueryBytes / 2
	head := s[:wordCutBefore(s, half)]
	tail := s[wordCutAfter(s, len(s)-half):]
	return head + "\n" + tail
}

// wordCutBefore is a cut at or before i that does not split a word (unless
// the word is longer than any token: text.MaxTokenBytes), at a rune start.
func wordCutBefore(s string, i int) int {
	for i > 0 && !utf8.RuneStart(s[i]) {
		i--
	}
	for j := i; j > 0 && i-j <= text.MaxTokenBytes; {
		r, n := utf8.DecodeLastRuneInString(s[:j])
		if unicode.IsSpace(r) {
			return j
		}
		j -= n
	}
	return i
}

// wordCutAfter is wordCutBefore's mirror: a cut at or after i.
func wordCutAfter(s string, i int) int {
	for i < len(s) && !utf8.RuneStart(s[i]) {
		i++
	}
	for j := i; j < len(s) && j-i <= text.MaxTokenBytes; {
		r, n := utf8.DecodeRuneInString(s[j:])
		if unicode.IsSpace(r) {
			return j
		}
		j += n
	}
	return i
}

// questionTerms are the query terms of a live message: its content (harness
// scaffolding recognized on the whole message, which is a linear scan),
// bounded by queryText.
func (e *Engine) questionTerms(d Dictionary, live string) []uint32 {
	return d.QueryTerms(e.questionTokens(live))
}

// questionTokens are the normalized words retrieval reads of the live
// question, within the same bound: the terms and the dense query vector
// both come from them.
func (e *Engine) questionTokens(live string) []string {
	content := e.an.ChunkContent(live, []string{live})[0]
	return e.an.Normalize(queryText(content))
}

// textTerms are the query terms of a tool's or the console's query.
func (e *Engine) textTerms(d Dictionary, query string) []uint32 {
	return d.QueryTerms(e.textTokens(query))
}

// textTokens are the normalized words of a tool's or the console's query,
// within the question's bound.
func (e *Engine) textTokens(query string) []string {
	return e.an.Normalize(queryText(query))
}
