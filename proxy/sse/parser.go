package sse

import (
	"bytes"
	"errors"
)

// DefaultMaxEventSize bounds one event (and any comment blocks carried into
// it) when no WithMaxEventSize option is given. Provider events are a few
// KiB; a large tool-call argument or a base64 image in a single delta is the
// biggest legitimate case, well under this.
const DefaultMaxEventSize = 8 << 20

var (
	// ErrEventTooLarge means an event grew past the parser's size limit. The
	// parser stops at that point: a relay cannot resynchronise mid-event.
	ErrEventTooLarge = errors.New("sse: event exceeds maximum size")
	// ErrTruncated means the stream ended in the middle of an event (or of a
	// line), so at least one event was lost.
	ErrTruncated = errors.New("sse: stream ended in the middle of an event")
)

// Option configures a Parser or a Reader.
type Option func(*config)

type config struct {
	maxEventSize int
}

// WithMaxEventSize sets the largest event, in bytes of Raw, the parser
// accepts. n <= 0 means DefaultMaxEventSize.
func WithMaxEventSize(n int) Option {
	return func(c *config) { c.maxEventSize = n }
}

var bom = []byte{0xEF, 0xBB, 0xBF}

// Parser turns network bytes into events. The zero value is ready to use
// with the default limit. A Parser is not safe for concurrent use.
//
// Dispatch rules (WHATWG, adapted to relaying LLM streams):
//   - lines end in "\n", "\r\n" or "\r"; a leading UTF-8 BOM is skipped;
//   - "data" lines are joined with "\n"; "event" and "id" set the fields
//     (an id containing NUL is ignored); "retry", unknown fields and
//     comment lines (starting with ":") are ignored;
//   - a blank line ends a block; the block is returned as an Event if it had
//     at least one data, event or id field, so "event: x" with no data is an
//     event (WHATWG would drop it);
//   - ID belongs to the event that carried it; it is not inherited.
//
// Raw holds the exact bytes of the event. Blocks that are not events
// (comment-only keep-alives such as ": ping", stray blank lines) are not lost:
// their bytes are carried into the Raw of the next event, so concatenating
// the Raw of every event reproduces the stream byte for byte up to the last
// event. A relay that forwards Raw therefore forwards keep-alives too, just
// late, together with the next event.
//
// A blank line ending in a lone "\r" that is the last byte pushed so far is
// held until the next byte shows whether an "\n" follows (it belongs to this
// event's Raw) or until End. Only streams that use bare CR line endings see
// this one-chunk delay; "\n" and "\r\n" streams never do.
type Parser struct {
	cfg config

	buf   []byte
	start int // start of the current block (carried bytes included) in buf
	scan  int // bytes before scan have been split into lines and interpreted
	// lineScan is how far the unfinished line at scan is known to hold no
	// CR or LF, so pushing a long line byte by byte stays linear.
	lineScan int

	crPending bool // the last line ended in CR at the end of buf
	held      bool // a blank line completed the block; dispatch waits on crPending
	bomDone   bool

	hasField bool
	hasData  bool
	event    string
	id       string
	spans    [][2]int // data values, as offsets into buf

	err error
}

// NewParser returns a Parser configured by opts.
func NewParser(opts ...Option) *Parser {
	p := &Parser{}
	for _, o := range opts {
		o(&p.cfg)
	}
	return p
}

func (p *Parser) maxSize() int {
	if p.cfg.maxEventSize <= 0 {
		return DefaultMaxEventSize
	}
	return p.cfg.maxEventSize
}

// Err reports ErrEventTooLarge once the limit was hit; the parser then
// ignores further input.
func (p *Parser) Err() error { return p.err }

// Pending reports whether bytes of an event that has not been returned yet
// are buffered: an unfinished line, field lines without their blank line, or
// an event held for a possible "\n". Buffered comment-only blocks do not
// count. At the end of a stream Pending means the stream was cut mid-event;
// call End rather than Pending there, because End also releases a held event.
func (p *Parser) Pending() bool {
	return p.held || p.hasField || p.scan < len(p.buf)
}

// Push appends network bytes and returns every event they complete, in
// order. Returned events do not alias b or the parser's buffer.
func (p *Parser) Push(b []byte) []Event {
	if p.err != nil || len(b) == 0 {
		return nil
	}
	p.buf = append(p.buf, b...)
	var out []Event
	out = p.process(out)
	p.compact()
	return out
}

// End marks the end of the stream. It returns an event that was held for a
// possible trailing "\n", and ErrTruncated if the stream stopped inside an
// event or a line (or the parser's own error, if it failed earlier). The
// parser must not be used after End.
func (p *Parser) End() ([]Event, error) {
	if p.err != nil {
		return nil, p.err
	}
	var out []Event
	if p.held {
		end := p.scan
		if !p.fits(end) {
			return nil, p.err
		}
		out = append(out, p.dispatch(end))
		p.held = false
		p.crPending = false
	}
	if p.Pending() {
		return out, ErrTruncated
	}
	return out, nil
}

// fits enforces the size limit on the block running from start to end.
func (p *Parser) fits(end int) bool {
	if end-p.start > p.maxSize() {
		p.err = ErrEventTooLarge
		return false
	}
	return true
}

func (p *Parser) process(out []Event) []Event {
	if !p.bomDone {
		n := len(p.buf)
		if n < len(bom) && bytes.Equal(p.buf, bom[:n]) {
			return out // could still become a BOM
		}
		p.bomDone = true
		if bytes.HasPrefix(p.buf, bom) {
			p.scan, p.lineScan = len(bom), len(bom)
		}
	}
	if p.crPending && p.scan < len(p.buf) {
		p.crPending = false
		if p.buf[p.scan] == '\n' {
			p.scan++
			p.lineScan = p.scan
		}
		if !p.fits(p.scan) {
			return out
		}
		if p.held {
			p.held = false
			out = append(out, p.dispatch(p.scan))
		}
	}
	for p.scan < len(p.buf) {
		ls := p.scan
		rest := p.buf[p.lineScan:]
		i := bytes.IndexByte(rest, '\n')
		if i >= 0 {
			rest = rest[:i]
		}
		j := bytes.IndexByte(rest, '\r')
		var le, next int // line end (exclusive) and start of the next line
		switch {
		case j >= 0:
			le = p.lineScan + j
			next = le + 1
			if next < len(p.buf) {
				if p.buf[next] == '\n' {
					next++
				}
			} else {
				p.crPending = true
			}
		case i >= 0:
			le = p.lineScan + i
			next = le + 1
		default:
			p.lineScan = len(p.buf)
			p.fits(len(p.buf))
			return out
		}
		p.scan, p.lineScan = next, next
		if !p.fits(next) {
			return out
		}
		if ls == le {
			if !p.hasField {
				continue // comment-only block or stray blank line: carried
			}
			if p.crPending {
				p.held = true
				return out
			}
			out = append(out, p.dispatch(next))
			continue
		}
		p.field(ls, le)
	}
	return out
}

func (p *Parser) field(ls, le int) {
	line := p.buf[ls:le]
	if line[0] == ':' {
		return
	}
	name, value, found := bytes.Cut(line, []byte{':'})
	vs := le
	if found {
		vs = ls + len(name) + 1
		if len(value) > 0 && value[0] == ' ' {
			value = value[1:]
			vs++
		}
	}
	switch string(name) {
	case "data":
		p.hasField, p.hasData = true, true
		p.spans = append(p.spans, [2]int{vs, le})
	case "event":
		p.hasField = true
		p.event = string(value)
	case "id":
		if bytes.IndexByte(value, 0) >= 0 {
			return
		}
		p.hasField = true
		p.id = string(value)
	}
}

// dispatch emits the block from start to end and resets the block state.
func (p *Parser) dispatch(end int) Event {
	raw := make([]byte, end-p.start)
	copy(raw, p.buf[p.start:end])
	ev := Event{Event: p.event, ID: p.id, Raw: raw}
	if p.hasData {
		if len(p.spans) == 1 {
			s, e := p.spans[0][0]-p.start, p.spans[0][1]-p.start
			ev.Data = raw[s:e:e]
		} else {
			n := len(p.spans) - 1
			for _, sp := range p.spans {
				n += sp[1] - sp[0]
			}
			data := make([]byte, 0, n)
			for k, sp := range p.spans {
				if k > 0 {
					data = append(data, '\n')
				}
				data = append(data, p.buf[sp[0]:sp[1]]...)
			}
			ev.Data = data
		}
	}
	p.start = end
	p.hasField, p.hasData = false, false
	p.event, p.id = "", ""
	p.spans = p.spans[:0]
	return ev
}

// compact drops consumed bytes so the buffer holds only the current block.
func (p *Parser) compact() {
	if p.start == 0 {
		return
	}
	n := copy(p.buf, p.buf[p.start:])
	p.buf = p.buf[:n]
	for k := range p.spans {
		p.spans[k][0] -= p.start
		p.spans[k][1] -= p.start
	}
	p.scan -= p.start
	p.lineScan -= p.start
	p.start = 0
	// A single huge event must not pin its buffer for the rest of a long stream.
	if cap(p.buf) > 1<<20 && n < cap(p.buf)/4 {
		p.buf = append([]byte(nil), p.buf...)
	}
}
