package toolloop

import (
	"bytes"
	"encoding/json"
	"strings"

	"github.com/perpetuity/perpetuity/proxy/sse"
	"github.com/perpetuity/perpetuity/proxy/wire/jsonx"
)

// A Stitcher makes one stream of a memory-tool loop's rounds, in the
// provider's dialect, so the harness (through a translator when the
// dialects cross) sees one continuous reply:
//
//   - the first round's opening (message_start, role chunk) only;
//   - text as it comes, every round, a blank line between rounds;
//   - never a memory call: its events are taken out (and Anthropic block
//     indexes renumbered, OpenAI tool-call indexes too);
//   - harness calls held from their first event to the round's end: they
//     go out when the round is the last, and are dropped (the model makes
//     them again) when it continues;
//   - no stop events of a round that continues; the last round's stop
//     carries the usage of every round, and an answer's stop reason when
//     only memory calls were dropped.
//
// After Push returns the event that ended a round (message_stop, [DONE]),
// Continuing says whether the loop goes on: the caller runs the round
// (Loop.Next), sends the next round's request and calls NextRound before
// pushing that round's events.
type Stitcher interface {
	// Push takes the provider's next event and returns what the harness
	// gets of it, now.
	Push(ev sse.Event) []sse.Event
	// Terminator tells the provider's last event of a round's stream.
	Terminator(ev sse.Event) bool
	Continuing() bool
	// Round is the round that just ended.
	Round() Round
	NextRound()
	// Flush returns the held events when the stream breaks off.
	Flush() []sse.Event
}

// hold keeps a round's events from its first harness call on, until the
// round ends: only then is it known whether memory was called too.
type hold struct {
	held    []sse.Event
	holding bool
	// holdFrom is the harness's next block or call index when holding
	// began: where the next round's numbering resumes if the held calls
	// are dropped.
	holdFrom int
}

func (h *hold) emit(ev sse.Event) []sse.Event {
	if h.holding {
		h.held = append(h.held, ev)
		return nil
	}
	return []sse.Event{ev}
}

// release ends holding and returns the held events.
func (h *hold) release() []sse.Event {
	out := h.held
	h.held, h.holding = nil, false
	return out
}

func (h *hold) Flush() []sse.Event { return h.release() }

// stitchText tracks the text the harness was sent, for the break between
// rounds.
type stitchText struct {
	sent       strings.Builder
	breakAhead bool // the round's first text needs roundBreak before it
}

func (s *stitchText) text(t string) string {
	if t == "" {
		return t
	}
	if s.breakAhead {
		s.breakAhead = false
		if needsBreak(s.sent.String()) {
			t = roundBreak + t
		}
	}
	s.sent.WriteString(t)
	return t
}

// compactArgs makes streamed argument text one JSON object; anything that
// does not parse becomes {} (the tool reports missing arguments).
func compactArgs(s string) string {
	var b bytes.Buffer
	if strings.TrimSpace(s) == "" || json.Compact(&b, []byte(s)) != nil {
		return "{}"
	}
	return b.String()
}

// sumUsage adds two usage objects member by member: numbers add up, nested
// objects add up recursively, anything else takes b's value. Either may be
// empty. Both dialects' usage objects (and their details) sum this way.
func sumUsage(a, b json.RawMessage) json.RawMessage {
	if len(a) == 0 || jsonx.IsNull(a) {
		return b
	}
	if len(b) == 0 || jsonx.IsNull(b) {
		return a
	}
	oa, err1 := jsonx.ParseObject(a)
	ob, err2 := jsonx.ParseObject(b)
	if err1 != nil || err2 != nil {
		return b
	}
	for _, k := range ob.Keys() {
		va, vb := oa.Get(k), ob.Get(k)
		var na, nb json.Number
		switch {
		case json.Unmarshal(va, &na) == nil && json.Unmarshal(vb, &nb) == nil:
			x, e1 := na.Int64()
			y, e2 := nb.Int64()
			if e1 == nil && e2 == nil {
				oa.Set(k, x+y)
				continue
			}
			oa.SetRaw(k, vb)
		case len(bytes.TrimSpace(va)) > 0 && bytes.TrimSpace(va)[0] == '{' && len(bytes.TrimSpace(vb)) > 0 && bytes.TrimSpace(vb)[0] == '{':
			oa.SetRaw(k, sumUsage(va, vb))
		default:
			oa.SetRaw(k, vb)
		}
	}
	return oa.JSON()
}

// overlay applies b's members over a (message_delta's cumulative counts
// over message_start's).
func overlay(a, b json.RawMessage) json.RawMessage {
	if len(a) == 0 || jsonx.IsNull(a) {
		return b
	}
	if len(b) == 0 || jsonx.IsNull(b) {
		return a
	}
	oa, err1 := jsonx.ParseObject(a)
	ob, err2 := jsonx.ParseObject(b)
	if err1 != nil || err2 != nil {
		return b
	}
	for _, k := range ob.Keys() {
		if v := ob.Get(k); !jsonx.IsNull(v) {
			oa.SetRaw(k, v)
		}
	}
	return oa.JSON()
}

// newEvent formats an event the proxy wrote itself.
func newEvent(name string, data []byte) sse.Event {
	ev := sse.Event{Event: name, Data: data}
	ev.Raw = sse.Format(ev)
	return ev
}

// rewriteEvent re-encodes ev's data after edit changed it; an event whose
// data is not an object comes back as it was.
func rewriteEvent(ev sse.Event, edit func(o *jsonx.Object)) sse.Event {
	o, err := jsonx.ParseObject(bytes.TrimSpace(ev.Data))
	if err != nil {
		return ev
	}
	edit(o)
	return newEvent(ev.Event, o.JSON())
}
