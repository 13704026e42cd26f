package proxy

import (
	"net/http"
	"strconv"
	"strings"
	"time"
)

// HeaderServerTiming names where a proxied answer's time went before the
// proxy began it (W3C Server-Timing), so a caller, a load balancer's log or
// the bench can tell memory's share from the provider's without the
// proxy's own logs:
//
//   - memory: storing the live question and building the frame beside it
//     (absent when the request asked for neither);
//   - forward: from the handler taking up the request until the proxy
//     began to forward it, memory included;
//   - upstream: from then until the proxy began its answer: sending the
//     request (its connection, its body) and waiting for the provider's
//     response headers for a stream; for a whole reply, also reading it,
//     every memory tool round (their memory calls included) and the
//     translation between dialects.
//
// What the caller waited beyond forward and upstream is its own hop, the
// server before the handler and, for a stream, the provider's first event
// after its headers and its relay.
//
// It holds durations only, never what was stored or recalled.
const HeaderServerTiming = "Server-Timing"

// setServerTiming sets the turn's Server-Timing. It runs as the response
// headers go out, the last moment a header can carry the upstream time.
func (t *turn) setServerTiming(h http.Header) {
	var b strings.Builder
	if t.memRan {
		b.WriteString("memory;dur=")
		b.WriteString(durMS(t.memDur))
	}
	if !t.sent.IsZero() {
		if b.Len() > 0 {
			b.WriteString(", ")
		}
		b.WriteString("forward;dur=")
		b.WriteString(durMS(t.sent.Sub(t.start)))
		b.WriteString(", upstream;dur=")
		b.WriteString(durMS(time.Since(t.sent)))
	}
	if b.Len() > 0 {
		h.Set(HeaderServerTiming, b.String())
	}
}

// durMS is d as Server-Timing's dur: milliseconds, to the microsecond the
// clock can tell on every platform.
func durMS(d time.Duration) string {
	return strconv.FormatFloat(float64(d.Microseconds())/1000, 'f', 3, 64)
}
