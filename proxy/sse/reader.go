package sse

import (
	"errors"
	"fmt"
	"io"
)

// readSize is one network read. Provider events are small, so a read
// usually carries several; Next hands them out before reading again.
const readSize = 32 << 10

// Reader pulls events from a byte stream such as an HTTP response body.
type Reader struct {
	r     io.Reader
	p     *Parser
	buf   []byte
	queue []Event
	err   error // terminal: returned once the queue is drained
}

// NewReader returns a Reader over r. Options are those of NewParser.
func NewReader(r io.Reader, opts ...Option) *Reader {
	return &Reader{r: r, p: NewParser(opts...)}
}

// Next returns the next event. It returns an already buffered event without
// reading, so a relay never waits for the next network chunk to forward an
// event it has. At the end of the stream it returns io.EOF, or ErrTruncated
// if the stream stopped inside an event; a failing read is returned wrapped
// (an aborted HTTP body gives io.ErrUnexpectedEOF), and the parser's
// ErrEventTooLarge as is.
func (r *Reader) Next() (Event, error) {
	empty := 0
	for {
		if len(r.queue) > 0 {
			ev := r.queue[0]
			r.queue[0] = Event{}
			r.queue = r.queue[1:]
			return ev, nil
		}
		if r.err != nil {
			return Event{}, r.err
		}
		if r.buf == nil {
			r.buf = make([]byte, readSize)
		}
		n, err := r.r.Read(r.buf)
		if n > 0 {
			empty = 0
			r.queue = append(r.queue, r.p.Push(r.buf[:n])...)
			if perr := r.p.Err(); perr != nil {
				r.err = perr
				continue
			}
		}
		switch {
		case errors.Is(err, io.EOF):
			evs, endErr := r.p.End()
			r.queue = append(r.queue, evs...)
			r.err = io.EOF
			if endErr != nil {
				r.err = endErr
			}
		case err != nil:
			r.err = fmt.Errorf("sse: read: %w", err)
		case n == 0:
			empty++
			if empty >= 100 {
				r.err = io.ErrNoProgress
			}
		}
	}
}
