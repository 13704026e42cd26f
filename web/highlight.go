package web

import (
	"regexp"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/perpetuity/perpetuity/templates"
)

// Search words, for marking them in results and saying why an item
// matched. They are the query's words as a person typed them; retrieval's
// own terms (stems, dictionary entries) are not shown.
const (
	maxMarkedWords = 16
	minMarkedRunes = 2 // single letters would mark half of every text
)

// queryWords splits a query into distinct lower-case words of letters and
// digits, in the order typed.
func queryWords(q string) []string {
	var out []string
	for _, w := range strings.FieldsFunc(q, func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) }) {
		w = strings.ToLower(w)
		if utf8.RuneCountInString(w) < minMarkedRunes || slices.Contains(out, w) {
			continue
		}
		out = append(out, w)
		if len(out) == maxMarkedWords {
			break
		}
	}
	return out
}

// wordsPattern matches any of words, case-insensitively, longest first so
// that "deploys" wins over "deploy"; nil for no words.
func wordsPattern(words []string) *regexp.Regexp {
	if len(words) == 0 {
		return nil
	}
	alts := make([]string, len(words))
	for i, w := range words {
		alts[i] = regexp.QuoteMeta(w)
	}
	slices.SortStableFunc(alts, func(a, b string) int { return len(b) - len(a) })
	return regexp.MustCompile(`(?i)` + strings.Join(alts, "|"))
}

// highlight cuts text into runs, marking each match of re. The runs are
// text: the template escapes each, so content can never become markup.
func highlight(text string, re *regexp.Regexp) []templates.TextPart {
	parts := []templates.TextPart{}
	at := 0
	for _, m := range re.FindAllStringIndex(text, -1) {
		if m[0] > at {
			parts = append(parts, templates.TextPart{Text: text[at:m[0]]})
		}
		parts = append(parts, templates.TextPart{Text: text[m[0]:m[1]], Mark: true})
		at = m[1]
	}
	if at < len(text) || len(parts) == 0 {
		parts = append(parts, templates.TextPart{Text: text[at:]})
	}
	return parts
}

// matchOf says which searched words an item contains, as written or among
// the words retrieval stored for it.
func matchOf(it Item, words []string, ranking string) *templates.Match {
	m := &templates.Match{Ranking: ranking}
	lower := strings.ToLower(it.Text)
	for _, w := range words {
		if strings.Contains(lower, w) || slices.Contains(it.Terms, w) {
			m.Found = append(m.Found, w)
		} else {
			m.Missing = append(m.Missing, w)
		}
	}
	return m
}
