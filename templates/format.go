package templates

import (
	"strconv"
	"strings"
)

// Count writes a whole number with thousands separators (21,812), as the
// console shows every count, clock and size.
func Count(n int64) string {
	s := strconv.FormatInt(n, 10)
	neg := n < 0
	if neg {
		s = s[1:]
	}
	out := make([]byte, 0, len(s)+len(s)/3+1)
	if neg {
		out = append(out, '-')
	}
	for i := range len(s) {
		if i > 0 && (len(s)-i)%3 == 0 {
			out = append(out, ',')
		}
		out = append(out, s[i])
	}
	return string(out)
}

// count is Count for an int.
func count(n int) string { return Count(int64(n)) }

// wordList quotes words and joins them as a sentence does: “a”, “b” and “c”.
func wordList(words []string) string {
	q := make([]string, len(words))
	for i, w := range words {
		q[i] = "“" + w + "”"
	}
	switch len(q) {
	case 0:
		return ""
	case 1:
		return q[0]
	}
	return strings.Join(q[:len(q)-1], ", ") + " and " + q[len(q)-1]
}

// matchWords says in a sentence or two why a search found an item.
func matchWords(m *Match) string {
	s := "None of the searched words appear in it as written."
	if len(m.Found) > 0 {
		s = "It contains " + wordList(m.Found)
		if len(m.Missing) > 0 {
			s += "; not " + wordList(m.Missing)
		}
		s += "."
	}
	if m.Ranking != "" {
		s += " " + m.Ranking
	}
	return s
}

// memoryCaption says how many items the memory browser lists and in which
// order they really are: newest first when browsing, by relevance when
// searching.
func memoryCaption(m Memory) string {
	scope := ""
	if m.AllUsers {
		scope = " across all users"
	}
	if m.Query != "" {
		return count(len(m.Items)) + " items matching “" + m.Query + "”" + scope + ", most relevant first."
	}
	return "The " + count(len(m.Items)) + " newest items" + scope + ", newest first. Type words above to search by relevance."
}
