package memory

import (
	"cmp"
	"sort"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/perpetuity/perpetuity/memory/store"
)

// Labels are set off by 【 】 (one model token each), which stored content
// cannot produce: the same brackets inside content are rendered as [ ], so a
// stored turn cannot forge a label, a speaker or a time (stored prompt
// injection stays quoted).
const (
	labelOpen  = "【"
	labelClose = "】"
)

var unforge = strings.NewReplacer(labelOpen, "[", labelClose, "]")

// turnOrder orders a conversation's turns by when they were said, then by
// when they were stored. Stored order alone is not the conversation's: a
// reply is captured after its response went out, and a harness's next
// question, sent the moment the reply arrived, often commits first (six
// replies of twelve behind the next question in a quick loop), so the
// model read "step 7" before the answer to step 6. A reply is stamped
// with the time it ended (proxy captureReply), before the next question
// can arrive; the time labels the frame prints then run forward too.
func turnOrder(a, b store.RenderItem) int {
	if c := a.BornAt.Compare(b.BornAt); c != 0 {
		return c
	}
	if a.MessageID != b.MessageID {
		return cmp.Compare(a.MessageID, b.MessageID)
	}
	return cmp.Compare(a.Part, b.Part)
}

// render turns the chosen items into alternating user/assistant turns:
// grouped by conversation, other conversations oldest first and the current
// one last, each turn labelled with its speaker and its time, both resolved
// now. The live question closes the frame.
func (e *Engine) render(q FrameQuery, chosen []cand, byID map[int64]store.RenderItem, trimmed bool, count func(string) int, memo turnLabels) Frame {
	items := make([]store.RenderItem, 0, len(chosen))
	for _, c := range chosen {
		items = append(items, byID[c.id])
	}
	first := map[int64]int64{} // conversation -> its earliest shown message
	for _, it := range items {
		if m, ok := first[it.ConvID]; !ok || it.MessageID < m {
			first[it.ConvID] = it.MessageID
		}
	}
	// The live question closes the frame even when a turn of its
	// conversation committed after it: the previous turn's reply is captured
	// after its response went out, and a harness may ask again before that.
	live := make(map[int64]bool, len(q.LiveItems))
	for _, id := range q.LiveItems {
		live[id] = true
	}
	sort.Slice(items, func(i, j int) bool {
		a, b := items[i], items[j]
		ac, bc := a.ConvID == q.ConversationID, b.ConvID == q.ConversationID
		if ac != bc {
			return bc
		}
		if al, bl := live[a.ID], live[b.ID]; al != bl {
			return bl
		}
		if a.ConvID != b.ConvID {
			return first[a.ConvID] < first[b.ConvID]
		}
		return turnOrder(a, b) < 0
	})

	var turns []Turn
	var segs []seg // per turn: how it was built, for counting it
	if len(items) > 0 {
		turns = append(turns, Turn{Role: "user", Text: preamble(trimmed, q.Tools)})
		segs = append(segs, seg{n: -1})
	}
	var conv, msg int64 = -1, -1
	var prevStamp string
	for _, it := range items {
		body := unforged(it.Body)
		if it.MessageID == msg {
			turns[len(turns)-1].Text += body // the next chunk of the same message
			segs[len(segs)-1].n = -1
			continue
		}
		var b strings.Builder
		// The time goes out once per stretch of turns, not on every turn:
		// labels are cheap so that the budget buys memory, not brackets.
		l := memo.of(q, it)
		if st := l.stamp; it.ConvID != conv {
			conv, prevStamp = it.ConvID, st
			b.WriteString(conversationHeader(it, q.ConversationID, st))
		} else if st != prevStamp {
			prevStamp = st
			b.WriteString(stampLabel(st))
		}
		msg = it.MessageID
		b.WriteString(l.speaker)
		// The stored count is the body's as stored; a body with label
		// brackets made plain is counted whole.
		s := seg{pre: b.String(), body: body, n: it.TokenCount}
		if body != it.Body {
			s.n = -1
		}
		segs = append(segs, s)
		turns = append(turns, Turn{Role: it.Role, Text: s.pre + body})
	}
	if !q.LiveStored && q.Live != "" {
		// Not stored (probe, capture off): the question is still labelled,
		// so it cannot read as part of the last quoted turn.
		live := q.Live
		if len(items) > 0 {
			live = labelOpen + "now" + labelClose + "\n" + speakerLabel(q.UserName, false) + live
		}
		turns = append(turns, Turn{Role: "user", Text: live})
		segs = append(segs, seg{n: -1})
	}
	out, parts := alternate(turns)
	f := Frame{Turns: out, Items: len(items), Trimmed: trimmed}
	around, _ := e.an.(aroundCounter)
	for _, p := range parts {
		texts := partTexts(turns, p)
		f.Tokens += joinedTokens(texts, count, func(j int, join string) int {
			if i := p[j]; around != nil && i >= 0 && segs[i].n >= 0 {
				if n, ok := e.counts.around(segs[i].pre, segs[i].body, segs[i].n, join, around.CountAround); ok {
					return n
				}
			}
			return count(texts[j] + join)
		})
	}
	return f
}

// turnLabels keeps a frame's time and speaker labels per item: fit renders
// most frames twice, and formatting them was a third of the renders' CPU
// in a profile of the bench's pipeline at 250k items.
// nil computes them each time.
type turnLabels map[int64]itemLabels

type itemLabels struct{ stamp, speaker string }

func (m turnLabels) of(q FrameQuery, it store.RenderItem) itemLabels {
	if l, ok := m[it.ID]; ok {
		return l
	}
	l := itemLabels{stamp: stamp(it.BornAt, q.Now)}
	if q.Tools {
		l.speaker = speakerLabelID(it.Speaker, it.Interrupted, it.ID)
	} else {
		l.speaker = speakerLabel(it.Speaker, it.Interrupted)
	}
	if m != nil {
		m[it.ID] = l
	}
	return l
}

// seg is how render built a turn: labels, then a stored body whose stored
// token count is n; n < 0 when the turn is to be counted whole.
type seg struct {
	pre, body string
	n         int
}

// aroundCounter counts a stored body between labels from its stored count,
// counting only around the seams (text.Counter.CountAround); ok is false
// when it cannot, and the whole is counted.
type aroundCounter interface {
	CountAround(pre, mid string, n int, post string) (int, bool)
}

// A merged turn's tokens are counted part by part where that is exact, so
// a re-render (fit drops an item and renders again) counts only the parts
// that changed: count memoizes each distinct text.
//
// A part ending in a newline and a part after it that starts with neither
// whitespace nor '/' count apart as they do joined: the o200k pre-tokenizer
// (memory/text/pretokenize.go) ends every piece holding a newline at the
// first rune that is not whitespace (branches 5-7) or one of \r, \n, '/'
// (branch 4), and no other branch reads across a newline; BPE merges stay
// within a piece. TestAlternatedTokens holds it to counting the joined text.
//
// joinedTokens counts strings.Join(parts, turnJoin) with whole, or part
// by part when every part after the first starts where a piece must start:
// part(j, join) counts parts[j] + join (join is turnJoin but after the
// last part).
func joinedTokens(parts []string, whole func(string) int, part func(j int, join string) int) int {
	for _, p := range parts[1:] {
		if !startsPiece(p) {
			return whole(strings.Join(parts, turnJoin))
		}
	}
	n := 0
	for j := range parts {
		join := turnJoin
		if j == len(parts)-1 {
			join = ""
		}
		n += part(j, join)
	}
	return n
}

// startsPiece: after a newline, s begins a pre-token of its own.
func startsPiece(s string) bool {
	r, _ := utf8.DecodeRuneInString(s)
	return s != "" && !unicode.IsSpace(r) && r != '/'
}

func preamble(trimmed, tools bool) string {
	s := labelOpen + "memory: past turns verbatim, oldest first" + labelClose
	switch {
	case trimmed && tools:
		s += "\n" + labelOpen + "less relevant memory left out; " + ToolReopen + " reaches it" + labelClose
	case trimmed:
		s += "\n" + labelOpen + "less relevant memory left out" + labelClose
	}
	return s
}

// conversationHeader opens a conversation's stretch with its time (st, the
// stamp of its first turn); the current conversation says so.
func conversationHeader(it store.RenderItem, current int64, st string) string {
	if it.ConvID == current {
		return labelOpen + "this conversation, " + st + labelClose + "\n"
	}
	return stampLabel(st)
}

// stamp is a date with its age; the time of day only for the last two days,
// where it still tells turns apart.
func stamp(at, now time.Time) string {
	layout := "2 Jan 2006"
	if now.Sub(at) < 48*time.Hour {
		layout = "2 Jan 2006 15:04"
	}
	return at.UTC().Format(layout) + ", " + Age(at, now)
}

func timeLabel(at, now time.Time) string { return stampLabel(stamp(at, now)) }

func stampLabel(st string) string { return labelOpen + st + labelClose + "\n" }

// unforged is s with the label brackets made plain. Both brackets start
// with the bytes labelBytes, which almost no stored text holds: such text
// is returned as it is without the replacer's scan.
func unforged(s string) string {
	if !strings.Contains(s, labelBytes) {
		return s
	}
	return unforge.Replace(s)
}

// labelBytes are the first two bytes of labelOpen and labelClose (UTF-8
// E3 80 90 and E3 80 91).
const labelBytes = "\xe3\x80"

func speakerLabel(speaker string, interrupted bool) string {
	speaker = unforged(strings.TrimSpace(speaker))
	if speaker == "" {
		speaker = "unknown"
	}
	if interrupted {
		speaker += " · interrupted"
	}
	return labelOpen + speaker + labelClose + " "
}

// speakerLabelID is the speaker label with the turn id the tools take.
func speakerLabelID(speaker string, interrupted bool, id int64) string {
	l := speakerLabel(speaker, interrupted)
	return l[:len(l)-len(labelClose)-1] + " #" + strconv.FormatInt(id, 10) + labelClose + " "
}

// itemCost estimates what an item adds to the rendered frame, but for a time
// or conversation label it may share with its neighbours: its token count,
// stored at capture, plus its speaker label. The second pass counts the
// rendered text exactly.
func itemCost(count func(string) int, it store.RenderItem) int {
	return it.TokenCount + count(speakerLabel(it.Speaker, it.Interrupted)) + 1
}

// Age is a relative time, computed at render time.
func Age(at, now time.Time) string {
	d := now.Sub(at)
	switch {
	case d < time.Minute:
		return "just now"
	case d < time.Hour:
		return plural(int(d/time.Minute), "minute") + " ago"
	case d < 24*time.Hour:
		return plural(int(d/time.Hour), "hour") + " ago"
	case d < 60*24*time.Hour:
		return plural(int(d/(24*time.Hour)), "day") + " ago"
	case d < 730*24*time.Hour:
		return plural(int(d/(30*24*time.Hour)), "month") + " ago"
	default:
		return plural(int(d/(365*24*time.Hour)), "year") + " ago"
	}
}

func plural(n int, unit string) string {
	if n == 1 {
		return "1 " + unit
	}
	return strconv.Itoa(n) + " " + unit + "s"
}
