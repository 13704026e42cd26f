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
//   - forward: from the request's arrival until the proxy forwarded it to
//     the provider, memory included;
//   - upstream: from forwarding the request to the provider until the
//     proxy began its answer, which is the provider's response headers for
//     a stream and its whole reply (every memory tool round's) otherwise.
//
// What the caller waited beyond forward and upstream is the network and,
// for a stream, the first event's relay.
//
// It holds durations only, never what was stored or recalled.
const HeaderServerTiming = "Server-Timing"

// setServerTiming sets the turn's Server-Timing; called just before the
// response headers go out.
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

// durMS is d in milliseconds to the microsecond, as Server-Timing's dur.
func durMS(d time.Duration) string {
	return strconv.FormatFloat(float64(d.Microseconds())/1000, 'f', 3, 64)
}
