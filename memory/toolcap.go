package memory

import (
	"fmt"
	"strings"
)

// One tool result is held to the frame's ceiling, as the frame is: the
// model's arguments (memory_reopen's limit of 100, memory_chain's depth of
// 20) once brought 3-4 times the ceiling into a single continuation (issue
// 15, finding 11). Results are cut between turns, never inside one; what
// is left out is not marked shown, so calling again reaches it.

// piece is one part of a tool result; id is the item it quotes, 0 for a
// line of the result's own.
type piece struct {
	text string
	id   int64
}

// resultCeiling is the most tokens one result of st's turn may take.
func (e *Engine) resultCeiling(st *ToolState) int {
	if st.Ceiling <= 0 || st.Ceiling > e.opt.Ceiling {
		return e.opt.Ceiling
	}
	return st.Ceiling
}

// emit joins the longest prefix of ps that fits the ceiling, with a line
// saying how many turns did not, and marks the quoted items shown.
func (e *Engine) emit(st *ToolState, ps []piece, empty string) string {
	if len(ps) == 0 {
		return empty
	}
	max := e.resultCeiling(st)
	// Pieces are priced one by one (each distinct text once), then the
	// joined text is counted exactly: a boundary may merge a token or two.
	n, spent := 0, 0
	for n < len(ps) {
		c := e.an.Count(ps[n].text)
		if spent+c > max {
			break
		}
		spent += c
		n++
	}
	for {
		text := join(ps[:n]) + leftOut(ps[n:], max)
		if n == 0 || e.an.Count(text) <= max {
			for _, p := range ps[:n] {
				if p.id != 0 {
					st.Shown[p.id] = true
				}
			}
			return text
		}
		n--
	}
}

func join(ps []piece) string {
	var b strings.Builder
	for _, p := range ps {
		b.WriteString(p.text)
	}
	return b.String()
}

// leftOut is the closing line of a cut result ("" when nothing was cut),
// in the labels' brackets, which stored content cannot produce.
func leftOut(rest []piece, max int) string {
	if len(rest) == 0 {
		return ""
	}
	turns := 0
	for _, p := range rest {
		if p.id != 0 {
			turns++
		}
	}
	return fmt.Sprintf("%s%d more turns left out: one result holds at most %d tokens; call again for them%s\n", labelOpen, turns, max, labelClose)
}
