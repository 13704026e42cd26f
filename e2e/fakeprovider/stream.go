package fakeprovider

import (
	"net/http"
	"time"

	"github.com/perpetuity/perpetuity/proxy/sse"
)

// streamer writes SSE events one at a time, flushing each, pacing them and
// injecting the scripted failures.
type streamer struct {
	x       *exchange
	pl      *plan
	rc      *http.ResponseController
	written int // events sent
	deltas  int // content deltas sent
	stopped bool
}

func (x *exchange) startStream(pl *plan, replyID string, headers map[string]string) *streamer {
	x.p.streaming(x.rec, replyID)
	h := x.w.Header()
	h.Set("Content-Type", "text/event-stream; charset=utf-8")
	for k, v := range headers {
		h.Set(k, v)
	}
	x.w.WriteHeader(http.StatusOK)
	s := &streamer{x: x, pl: pl, rc: http.NewResponseController(x.w)}
	_ = s.rc.Flush()
	return s
}

// send writes one event; false means stop (client gone or write failed).
func (s *streamer) send(name string, data []byte) bool {
	if s.stopped {
		return false
	}
	if s.written > 0 && !sleep(s.x.r.Context(), s.pl.ChunkDelay) {
		s.stopped = true
		return false
	}
	s.x.p.sending(s.x.rec, time.Now())
	if err := sse.Write(s.x.w, sse.Event{Event: name, Data: data}); err != nil {
		s.stopped = true
		return false
	}
	if err := s.rc.Flush(); err != nil {
		s.stopped = true
		return false
	}
	s.written++
	return true
}

// delta sends a content delta and applies FailAfter and InBandErrorAfter;
// false means the stream is over.
func (s *streamer) delta(name string, data []byte, inBand func()) bool {
	if !s.send(name, data) {
		return false
	}
	s.deltas++
	if s.pl.FailAfter > 0 && s.deltas >= s.pl.FailAfter {
		s.abort()
	}
	if s.pl.InBandErrorAfter > 0 && s.deltas >= s.pl.InBandErrorAfter {
		inBand()
		s.stopped = true
		return false
	}
	return true
}

// contentDone applies a failure scripted after more deltas than the reply
// has: it happens after the last delta, before the stop events.
func (s *streamer) contentDone(inBand func()) bool {
	if s.stopped {
		return false
	}
	if s.pl.FailAfter > 0 {
		s.abort()
	}
	if s.pl.InBandErrorAfter > 0 {
		inBand()
		s.stopped = true
		return false
	}
	return true
}

// abort cuts the connection without the chunked terminator: net/http
// closes it when a handler panics with ErrAbortHandler, and does not log.
func (s *streamer) abort() {
	_ = s.rc.Flush()
	panic(http.ErrAbortHandler)
}
