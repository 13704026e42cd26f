package memory

import (
	"unicode/utf8"

	"github.com/perpetuity/perpetuity/memory/store"
)

// Reason is why a candidate was in the running for the frame; a candidate
// may have several. The request inspector shows them in words, so that an
// admin can tell "it was not found" from "it was found and left out".
type Reason uint8

const (
	ReasonMatch     Reason = 1 << iota // this turn's retrieval found it
	ReasonNeighbour                    // a conversation neighbour of a match
	ReasonChain                        // a chain link of a match (memory/chain)
	ReasonDate                         // of a date or range the question names
	ReasonMandatory                    // one of the best matches, never trimmed
	ReasonRecent                       // the recent stretch of this conversation, never trimmed
	ReasonLive                         // the live question itself
	ReasonWarm                         // still warm from earlier turns
)

var reasonCodes = []struct {
	r    Reason
	code string
}{
	{ReasonMatch, "match"}, {ReasonNeighbour, "neighbour"}, {ReasonChain, "chain"}, {ReasonDate, "date"},
	{ReasonMandatory, "mandatory"}, {ReasonRecent, "recent"}, {ReasonLive, "live"}, {ReasonWarm, "warm"},
}

// Codes are the reasons as stable words, the order fixed, for a record
// that outlives a release.
func (r Reason) Codes() []string {
	var out []string
	for _, c := range reasonCodes {
		if r&c.r != 0 {
			out = append(out, c.code)
		}
	}
	return out
}

// Considered is one candidate of a frame as the request inspector shows
// it. ConvID, UserID, Role, Speaker and Excerpt are known only for the
// candidates whose text was read (every shown one).
type Considered struct {
	ID      int64
	Score   float32 // retrieval score; 0 when not a match
	Rank    int     // retrieval rank (or the rank it was brought in at), -1 when none
	Heat    float64 // after this turn's reheat
	Reasons Reason
	Shown   bool
	Tokens  int // stored tokens, as priced for the budget
	ConvID  int64
	UserID  int64
	Role    string
	Speaker string
	Excerpt string
}

// Bounds of an explanation: the shown items are all there (the frame is
// capped), the left-out ones only the best of them, each excerpt short.
const (
	explainLeftOut = 50
	excerptRunes   = 240
)

// explain lists the candidates in priority order: every shown one and the
// first explainLeftOut of those left out, with the number left out.
func explain(cands []cand, shown map[int64]bool, toks map[int64]int, byID map[int64]store.RenderItem) ([]Considered, int) {
	out := make([]Considered, 0, len(shown)+explainLeftOut)
	left := 0
	for _, c := range cands {
		s := shown[c.id]
		if !s {
			left++
			if left > explainLeftOut {
				continue
			}
		}
		k := Considered{ID: c.id, Score: c.score, Rank: c.rank, Heat: c.heat, Reasons: c.why, Shown: s, Tokens: toks[c.id]}
		if it, ok := byID[c.id]; ok {
			k.ConvID, k.UserID, k.Role, k.Speaker, k.Excerpt = it.ConvID, it.UserID, it.Role, it.Speaker, excerpt(it.Body)
			if k.Tokens == 0 {
				k.Tokens = it.TokenCount
			}
		}
		out = append(out, k)
	}
	return out, left
}

// excerpt is the first excerptRunes runes of a body.
func excerpt(s string) string {
	if utf8.RuneCountInString(s) <= excerptRunes {
		return s
	}
	n := 0
	for i := range s {
		if n == excerptRunes {
			return s[:i] + "…"
		}
		n++
	}
	return s
}
