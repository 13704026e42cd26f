package memory

import (
	"context"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/perpetuity/perpetuity/memory/store"
)

// A question about a person is answered mostly by that person's own words:
// "What does Melanie do to destress?" by Melanie's "I've been running
// farther to de-stress", rarely by her friend's turns that name her ("Hey
// Melanie!"), which match the name just as well. On the development set 96%
// of the evidence of a question naming one speaker of its memory is that
// speaker's turns. So when the question names exactly one speaker the
// viewer's memory knows (by the label it renders: a display name or a
// speaker's latest binding), every ranked candidate of that speaker ranks
// as if it stood at a third of its rank and every other labelled
// speaker's (the assistant's too) at three times it: a reordering of what
// retrieval brought, never a filter, and nothing changes for a question
// naming no one or several. Tuned on the development set: factors of 2
// gain at the server frame and at 2000 tokens on each of its four
// conversations; 3 adds a multi-hop question and 2000-token recall, 4 no
// more.
const (
	namedSpeakerRank = 1.0 / 3
	otherSpeakerRank = 3
)

// namedSpeaker is the one label of labels that the question names as a
// whole word (case folded), or "" when it names none or several, or when
// the labels name fewer than two people: a memory of one person's talk
// with an assistant (a coding agent's) has no one to tell apart, and a
// display name that is a common word ("main") must not demote every
// assistant reply.
func namedSpeaker(question string, labels store.Labels) string {
	people := map[string]bool{}
	for _, v := range labels.By {
		if name := strings.ToLower(strings.TrimSpace(v)); name != "" {
			people[name] = true
		}
	}
	if len(people) < 2 {
		return ""
	}
	q := strings.ToLower(question)
	named := ""
	for _, v := range labels.By {
		name := strings.ToLower(strings.TrimSpace(v))
		if utf8.RuneCountInString(name) < 2 || name == named || !containsWord(q, name) {
			continue
		}
		if named != "" {
			return ""
		}
		named = name
	}
	return named
}

// containsWord says whether w occurs in s with no letter or digit
// touching it on either side.
func containsWord(s, w string) bool {
	for from := 0; from <= len(s)-len(w); {
		i := strings.Index(s[from:], w)
		if i < 0 {
			return false
		}
		i += from
		before, _ := utf8.DecodeLastRuneInString(s[:i])
		after, _ := utf8.DecodeRuneInString(s[i+len(w):])
		if !wordRune(before) && !wordRune(after) {
			return true
		}
		_, n := utf8.DecodeRuneInString(s[i:])
		from = i + n
	}
	return false
}

func wordRune(r rune) bool {
	return r != utf8.RuneError && (unicode.IsLetter(r) || unicode.IsDigit(r))
}

// preferSpeaker reranks the candidates (in frame order) for a question
// naming the speaker named: every ranked candidate that is not mandatory
// (a match, a neighbour, a chain link, a dated turn) takes the heat of its
// rank times namedSpeakerRank, otherSpeakerRank or 1 (no label, or gone
// since the scan), or its warmth if higher, and the list is sorted again.
// Each candidate is judged by its own speaker: the reply that answers a
// turn naming the person is often the person's own. The labels are read
// through the item cache, so what the frame renders next is mostly read
// already; only immutable fields and the labels decide, so the same store
// gives the same order whatever the cache holds.
func (e *Engine) preferSpeaker(ctx context.Context, tenantID int64, cands []cand, named string, labels store.Labels) ([]cand, error) {
	if named == "" {
		return cands, nil
	}
	var ids []int64
	for _, c := range cands {
		if c.rank >= 0 && !c.mandatory {
			ids = append(ids, c.id)
		}
	}
	if len(ids) < 2 {
		return cands, nil
	}
	items, err := e.frameItems(ctx, tenantID, ids, labels)
	if err != nil {
		return nil, err
	}
	for i := range cands {
		c := &cands[i]
		it, ok := items[c.id]
		if c.rank < 0 || c.mandatory || !ok || it.Speaker == "" {
			continue
		}
		f := float64(otherSpeakerRank)
		if strings.ToLower(strings.TrimSpace(it.Speaker)) == named {
			f = namedSpeakerRank
		}
		c.heat = max(c.warm, rankPeakAt(max((float64(c.rank)+1)*f-1, 0)))
	}
	sortCands(cands)
	return cands, nil
}
