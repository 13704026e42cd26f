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
// Melanie!"), which match the name just as well. On the development set
// 97% of the evidence of a question naming one speaker of its memory is
// that speaker's turns (859 of 886, categories 1-4). So when the question names exactly one person the
// viewer's memory knows (by the label it renders: a display name or a
// speaker's latest binding), every ranked candidate of that person ranks
// as if it stood at a third of its rank and every other labelled
// speaker's (the assistant's too) at three times it: a reordering of what
// retrieval brought, never a filter, and nothing changes for a question
// naming no one or several. Tuned on the development set: factors of 2
// gain at the server frame and at 2000 tokens on each of its four
// conversations; 3 adds a multi-hop question and 2000-token recall; 4 added
// nothing more in an offline re-ranking of logged candidates.
//
// Retrieval's keptPlaces best-placed candidates are never pushed down: a
// question that puts one person's words in the other's mouth ("What did
// Caroline realize after her charity race?", when the race was Melanie's)
// is answered by the other's turn, which is usually among retrieval's very
// best matches. On the development set, keeping 5 places raised the
// adversarial questions' recall in a 1000-token frame from 0.686 to 0.856
// (500 tokens: 0.662 to 0.689) and left categories 1-4 overall where they
// were at every budget (within 0.01 per category); 6 cost them recall at
// 1000 tokens, and a guard that also held the named person's candidates
// out of those places cost them at 500 and 1000.
const (
	namedSpeakerRank = 1.0 / 3
	otherSpeakerRank = 3
	keptPlaces       = 5
)

// namedIn is the person the question (its questionText) names
// (namedSpeaker), or "" without reading it when the labels cannot tell
// people apart: labels
// cut short (a memory of more speakers than a frame reads up front, where
// a name left out could be the one meant), or fewer than two people (a
// memory of one person's talk with an assistant, a coding agent's, has no
// one to tell apart, and a display name that is a common word, "main",
// must not demote every assistant reply).
func namedIn(question string, labels store.Labels) string {
	if labels.Of == 0 {
		return ""
	}
	people := map[string]bool{}
	for _, v := range labels.By {
		if name := fold(v); name != "" {
			people[name] = true
		}
	}
	if len(people) < 2 {
		return ""
	}
	return namedSpeaker(question, people)
}

func fold(s string) string { return strings.ToLower(strings.TrimSpace(s)) }

// namedSpeaker is the one of people (folded names) that the question names
// as a whole word, case folded, or "" when it names none or several. A
// name inside another that is named too ("Jo" in "Jo-Ann") does not count
// apart from it.
func namedSpeaker(question string, people map[string]bool) string {
	q := fold(question)
	var named []string
	for name := range people {
		if utf8.RuneCountInString(name) >= 2 && containsWord(q, name) {
			named = append(named, name)
		}
	}
	one := ""
	for _, n := range named {
		inside := false
		for _, m := range named {
			inside = inside || (m != n && containsWord(m, n))
		}
		if inside {
			continue
		}
		if one != "" {
			return ""
		}
		one = n
	}
	return one
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
// naming the person named: every candidate retrieval placed (a match, a
// neighbour, a chain link, a dated turn) that is not mandatory takes the
// heat of its preferredRank, or its warmth if higher, and the list is
// sorted again. Each candidate is judged by its own speaker: the
// reply that answers a turn naming the person is often the person's own.
// Whose turn an item is comes from the item cache where it holds the item,
// else from a read of those few fields (never the bodies of candidates
// that may not be shown); an item's owner, role and speaker never change
// and its label is the viewer's latest, so the same store gives the same
// order whatever the cache holds. The reheat written after the frame keeps
// the retrieval rank: the preference serves this question, not the next.
func (e *Engine) preferSpeaker(ctx context.Context, tenantID int64, cands []cand, named string, labels store.Labels) ([]cand, error) {
	if named == "" {
		return cands, nil
	}
	var ids []int64
	for _, c := range cands {
		if c.placed >= 0 && !c.mandatory {
			ids = append(ids, c.id)
		}
	}
	if len(ids) < 2 {
		return cands, nil
	}
	whose, missing := e.res.texts.get(tenantID, ids)
	if len(missing) > 0 {
		got, err := e.store.ItemSpeakers(ctx, tenantID, missing)
		if err != nil {
			return nil, err
		}
		for _, it := range got {
			whose[it.ID] = it
		}
	}
	for i := range cands {
		c := &cands[i]
		it, ok := whose[c.id]
		if c.placed < 0 || c.mandatory || !ok {
			continue
		}
		c.heat = max(c.warm, rankPeakAt(preferredRank(c.placed, fold(labelOf(it, labels)), named)))
	}
	sortCands(cands)
	return cands, nil
}

// preferredRank is the rank a candidate placed at placed by retrieval
// takes for a question naming named, by the folded label of its speaker
// ("" for none).
func preferredRank(placed int, speaker, named string) float64 {
	f := 1.0
	switch {
	case speaker == named:
		f = namedSpeakerRank
	case speaker != "" && placed >= keptPlaces:
		f = otherSpeakerRank
	}
	return max((float64(placed)+1)*f-1, 0)
}
