package sse

import (
	"bytes"
	"io"
	"strings"
)

// Format renders ev as SSE text ending in the blank line that dispatches it.
// It writes from the Event, ID and Data fields, never from Raw (a relay that
// wants the original bytes writes Raw itself). Data is split into one
// "data:" line per line, so multi-line data survives a round trip; CR and LF
// are removed from Event and ID because a line break there would inject
// fields. A nil Data with a name or an id writes no data line; everything
// else writes at least one, so the event is always dispatched.
func Format(ev Event) []byte {
	var b bytes.Buffer
	b.Grow(len(ev.Data) + len(ev.Event) + len(ev.ID) + 24)
	if ev.Event != "" {
		b.WriteString("event: ")
		b.WriteString(stripBreaks(ev.Event))
		b.WriteByte('\n')
	}
	if ev.ID != "" {
		b.WriteString("id: ")
		b.WriteString(stripBreaks(ev.ID))
		b.WriteByte('\n')
	}
	if ev.Data != nil || (ev.Event == "" && ev.ID == "") {
		data := ev.Data
		for {
			i := bytes.IndexAny(data, "\r\n")
			line := data
			if i >= 0 {
				line = data[:i]
			}
			if len(line) == 0 {
				b.WriteString("data:\n")
			} else {
				b.WriteString("data: ")
				b.Write(line)
				b.WriteByte('\n')
			}
			if i < 0 {
				break
			}
			if data[i] == '\r' && i+1 < len(data) && data[i+1] == '\n' {
				i++
			}
			data = data[i+1:]
		}
	}
	b.WriteByte('\n')
	return b.Bytes()
}

// Write writes Format(ev) to w in a single Write call, so a flushing writer
// sends the event as one unit.
func Write(w io.Writer, ev Event) error {
	_, err := w.Write(Format(ev))
	return err
}

func stripBreaks(s string) string {
	if !strings.ContainsAny(s, "\r\n") {
		return s
	}
	return strings.NewReplacer("\r", "", "\n", "").Replace(s)
}
