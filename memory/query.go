package memory

import (
	"strings"
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
	return e.an.Normalize(e.questionText(live))
}

// questionText is what retrieval reads of the live question: its content,
// bounded by queryText.
func (e *Engine) questionText(live string) string {
	return queryText(e.an.ChunkContent(live, []string{live})[0])
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

// meaningTokens are the tokens of s (normalized as toks) the dense side of a
// hybrid scan reads: toks without the names s writes, the words it
// capitalizes other than at a sentence's start. A name is found by its
// words (every turn of a speaker carries the speaker's name, and BM25 finds
// the turns that say it); in the mean of the question's word vectors it
// weighs as much as the topic and pulls towards whoever speaks or is spoken
// of rather than what is said (development set, all four samples: see the
// commit). A question that capitalizes most of its words (title case,
// shouting) names nothing this way, and a question of names only keeps them.
func (e *Engine) meaningTokens(s string, toks []string) []string {
	names := map[string]bool{}
	words, caps := 0, 0
	for _, line := range strings.Split(s, "\n") {
		start := true
		for _, f := range strings.Fields(line) {
			w := strings.TrimLeftFunc(f, func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) })
			if r, _ := utf8.DecodeRuneInString(w); w != "" {
				words++
				if unicode.IsUpper(r) {
					caps++
					if !start {
						for _, t := range e.an.Normalize(w) {
							names[t] = true
						}
					}
				}
			}
			last, _ := utf8.DecodeLastRuneInString(f)
			start = strings.ContainsRune(".?!:;", last)
		}
	}
	if len(names) == 0 || 2*caps > words {
		return toks
	}
	out := make([]string, 0, len(toks))
	for _, t := range toks {
		if !names[t] {
			out = append(out, t)
		}
	}
	return out
}
