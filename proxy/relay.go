package proxy

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/perpetuity/perpetuity/proxy/provider"
	"github.com/perpetuity/perpetuity/proxy/sse"
	"github.com/perpetuity/perpetuity/proxy/toolloop"
	"github.com/perpetuity/perpetuity/proxy/translate"
)

// maxUpstreamBody bounds a non-streamed provider reply held in memory.
const maxUpstreamBody = 64 << 20

// forward sends the rendered request and relays the reply, returning what
// the provider said for capture. With memory tools on, the reply may take
// several rounds (proxy/toolloop); the client sees one.
func (p *Proxy) forward(c echo.Context, t *turn, body []byte) (reply, error) {
	resp, r, err := p.send(c, t, body)
	if resp == nil {
		return r, err
	}
	if isEventStream(resp.Header.Get("Content-Type")) {
		return p.relayStream(c, t, resp)
	}
	return p.relayBody(c, t, resp)
}

// send posts one round's request. Without a response it returns what the
// pipeline should: the client left (an interrupted reply, no error), or
// the provider could not be reached or answered with an error, which is
// turned into the client's dialect.
func (p *Proxy) send(c echo.Context, t *turn, body []byte) (*http.Response, reply, error) {
	ctx := c.Request().Context()
	up, err := http.NewRequestWithContext(ctx, http.MethodPost, t.up.url, bytes.NewReader(body))
	if err != nil {
		return nil, reply{}, fmt.Errorf("build upstream request: %w", err)
	}
	up.Header = t.up.header.Clone()
	if t.rounds == 0 {
		t.sent = time.Now()
	}
	resp, err := p.client.Do(up)
	t.rounds++
	if err == nil {
		t.upStatus = resp.StatusCode
		if t.rounds == 1 {
			t.upLatency = time.Since(t.sent)
		}
	}
	if err != nil {
		if ctx.Err() != nil {
			return nil, reply{interrupted: true}, nil // the client left before the provider answered
		}
		return nil, reply{}, &APIError{Status: http.StatusBadGateway, Kind: UpstreamError, Message: "provider unreachable: " + redactURL(err)}
	}
	if isRedirect(resp.StatusCode) {
		resp.Body.Close()
		return nil, reply{}, redirected(resp.StatusCode)
	}
	if resp.StatusCode >= 300 {
		defer resp.Body.Close()
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
		if !c.Response().Committed {
			// A later round's error comes in band, in the stream's own type.
			provider.CopyResponseHeaders(c.Response().Header(), resp.Header)
		}
		if !json.Valid(b) {
			// Only a JSON error is relayed; a page (a gateway's HTML) is named, never served.
			ae := unservedBody(resp.StatusCode, resp.Header.Get("Content-Type"))
			ae.RetryAfter = resp.Header.Get("Retry-After")
			return nil, reply{}, ae
		}
		status := resp.StatusCode
		if t.up.errorBody != nil {
			status, b = t.up.errorBody(status, b)
		}
		return nil, reply{}, &APIError{Status: status, Kind: UpstreamError, Message: "provider error", Body: b,
			RetryAfter: resp.Header.Get("Retry-After")}
	}
	return resp, reply{}, nil
}

// relayBody relays a non-streamed reply. With memory tools, each round's
// reply is read for memory calls; the rounds are merged into one reply.
func (p *Proxy) relayBody(c echo.Context, t *turn, resp *http.Response) (reply, error) {
	ctx := c.Request().Context()
	var bodies [][]byte
	merge := false
	for {
		b, err := io.ReadAll(io.LimitReader(resp.Body, maxUpstreamBody))
		resp.Body.Close()
		if err != nil {
			if ctx.Err() != nil {
				return reply{interrupted: true}, nil
			}
			return reply{}, &APIError{Status: http.StatusBadGateway, Kind: UpstreamError, Message: "provider reply cut short"}
		}
		if !json.Valid(b) {
			// The reply is served as JSON, so it must be JSON: a page
			// (HTML from a gateway or a hostile provider) never reaches the client.
			return reply{}, unservedBody(resp.StatusCode, resp.Header.Get("Content-Type"))
		}
		bodies = append(bodies, b)
		if t.loop == nil {
			break
		}
		round, err := t.loop.Read(b)
		if err != nil {
			break // not a reply the loop can read: relayed as it came
		}
		if !t.loop.Continues(round) {
			merge = len(bodies) > 1 || round.CalledMemory()
			break
		}
		next, err := t.loop.Next(ctx, round)
		if err != nil {
			return reply{}, fmt.Errorf("memory tools: %w", err)
		}
		var r reply
		if resp, r, err = p.send(c, t, next); resp == nil {
			return r, err
		}
		if isEventStream(resp.Header.Get("Content-Type")) {
			resp.Body.Close()
			return reply{}, &APIError{Status: http.StatusBadGateway, Kind: UpstreamError, Message: "provider streamed a reply that was asked for whole"}
		}
	}
	b := bodies[len(bodies)-1]
	if merge {
		m, err := t.loop.Merge(bodies)
		if err != nil {
			p.log.Warn("memory tool rounds could not be merged", "request_id", t.rid, "provider", t.up.provider, "err", err)
			return reply{interrupted: true}, &APIError{Status: http.StatusBadGateway, Kind: UpstreamError, Message: "provider reply could not be read"}
		}
		b = m
	}
	r := reply{text: replyText(t.up.dialect, b), usage: readUsage(b), response: replyID(t.up.dialect, b)}
	out := b
	var err error
	if t.up.response != nil {
		if out, err = t.up.response(b); err != nil {
			p.log.Warn("provider reply could not be translated", "request_id", t.rid, "provider", t.up.provider, "err", err)
			r.interrupted = true
			return r, &APIError{Status: http.StatusBadGateway, Kind: UpstreamError, Message: "provider reply could not be translated"}
		}
	}
	res := c.Response()
	provider.CopyResponseHeaders(res.Header(), resp.Header)
	res.Header().Set(echo.HeaderContentType, echo.MIMEApplicationJSON)
	res.Header().Set("Content-Length", strconv.Itoa(len(out)))
	t.setServerTiming(res.Header())
	res.WriteHeader(resp.StatusCode)
	// Under the stall deadline, as a stream's events are: a client that
	// asks for a whole reply and never reads it must not hold the handler
	// (and the reply, and its capture and charge) for as long as it likes.
	if !writeFlush(res, http.NewResponseController(res), p.writeStall(), out) {
		r.interrupted = true
	}
	return r, nil
}

// relayStream forwards the provider's events one by one, translated when
// the dialects differ, flushing as each arrives, while collecting the reply
// from the provider's own events for capture. A stream that ends without
// its terminator, or with an in-band error, is an error for the client and
// a flagged capture, never a clean end. Errors returned after the response
// started reach the client as the dialect's in-band error event (WriteError).
//
// With memory tools, a stitcher makes one stream of the rounds (proxy/toolloop);
// capture follows the stitched events, which are what the harness got.
func (p *Proxy) relayStream(c echo.Context, t *turn, resp *http.Response) (reply, error) {
	defer func() {
		if resp != nil { // a later round's send may have failed
			resp.Body.Close()
		}
	}()
	ctx := c.Request().Context()
	res := c.Response()
	h := res.Header()
	provider.CopyResponseHeaders(h, resp.Header)
	h.Set(echo.HeaderContentType, resp.Header.Get(echo.HeaderContentType)) // an event stream: forward checked
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no")
	rl := &relayer{p: p, t: t, res: res, acc: newAccumulator(t.up.dialect)}
	if t.up.stream != nil {
		rl.ts = t.up.stream()
		h.Set(echo.HeaderContentType, "text/event-stream; charset=utf-8")
	}
	t.setServerTiming(h)
	res.WriteHeader(resp.StatusCode)
	rl.rc = http.NewResponseController(res)
	_ = rl.rc.SetWriteDeadline(noDeadline) // streams outlive any server timeout
	if err := rl.rc.Flush(); err != nil {
		return reply{interrupted: true}, nil
	}
	rl.wrote = time.Now()
	var st toolloop.Stitcher
	if t.loop != nil {
		st = t.loop.Stitcher()
	}
	acc := rl.acc
	rd := sse.NewReader(resp.Body)
	for {
		ev, err := rd.Next()
		// A round that called memory ends at its terminator (or its end):
		// the calls run and the next round's events follow on.
		if st != nil && st.Continuing() && (errors.Is(err, io.EOF) || err == nil && st.Terminator(ev)) {
			next, err := t.loop.Next(ctx, st.Round())
			if err != nil {
				return acc.reply(true), fmt.Errorf("memory tools: %w", err)
			}
			resp.Body.Close()
			if resp, _, err = p.send(c, t, next); resp == nil {
				return acc.reply(true), err
			}
			if !isEventStream(resp.Header.Get("Content-Type")) {
				return acc.reply(true), &APIError{Status: http.StatusBadGateway, Kind: UpstreamError, Message: "provider answered a streamed request whole"}
			}
			st.NextRound()
			rd = sse.NewReader(resp.Body)
			continue
		}
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			if ctx.Err() != nil {
				// A client may hang up as soon as it has the final event;
				// once the terminator went out untranslated, it had the
				// whole reply, which is not an interrupted one.
				return acc.reply(!(acc.done && rl.ts == nil)), nil
			}
			return acc.reply(true), &APIError{Status: http.StatusBadGateway, Kind: UpstreamError, Message: "provider stream broke off before its end"}
		}
		rl.one[0] = ev
		evs := rl.one[:]
		if st != nil {
			evs = st.Push(ev)
		}
		if brk, gone, err := rl.relay(evs); err != nil || gone {
			return acc.reply(true), err
		} else if brk {
			break
		}
	}
	if st != nil {
		// A stream that broke off still shows what it held.
		if _, gone, err := rl.relay(st.Flush()); err != nil || gone {
			return acc.reply(true), err
		}
	}
	if rl.ts != nil && acc.done {
		out, err := rl.ts.End()
		if err != nil {
			p.log.Warn("translated stream did not end cleanly", "request_id", t.rid, "provider", t.up.provider, "err", err)
			return acc.reply(true), &APIError{Status: http.StatusBadGateway, Kind: UpstreamError, Message: "provider stream could not be translated to its end"}
		}
		if !writeEvents(res, rl.rc, p.writeStall(), out) {
			return acc.reply(true), nil
		}
	}
	switch {
	case acc.failed:
		// The provider's own error event already reached the client,
		// translated when the dialects differ.
		return acc.reply(true), nil
	case !acc.done:
		return acc.reply(true), &APIError{Status: http.StatusBadGateway, Kind: UpstreamError, Message: "provider stream ended without its terminator"}
	}
	return acc.reply(false), nil
}

// relayer writes a stream's events to the client, translated when the
// dialects differ, while the accumulator follows them.
type relayer struct {
	p   *Proxy
	t   *turn
	res *echo.Response
	rc  *http.ResponseController
	ts  translate.Stream
	acc *accumulator
	// wrote is when the client last got an event (keepalive.go).
	wrote time.Time
	// one holds the event read, so that relaying it makes no slice: a
	// stream relays one an event.
	one [1]sse.Event
}

// relay reports brk when a terminator came without a stop (the client
// gets an error instead of it), gone when the client left, and an error
// for an event that could not be translated.
func (rl *relayer) relay(evs []sse.Event) (brk, gone bool, err error) {
	wrote := false // held or dropped, the client may need a keepalive
	for i, ev := range evs {
		rl.acc.add(ev)
		if rl.acc.ended && !rl.acc.done {
			return true, false, nil
		}
		out := evs[i : i+1]
		if rl.ts != nil {
			if out, err = rl.ts.Push(ev); err != nil {
				rl.p.log.Warn("provider stream event could not be translated", "request_id", rl.t.rid, "provider", rl.t.up.provider, "err", err)
				return false, false, &APIError{Status: http.StatusBadGateway, Kind: UpstreamError, Message: "provider sent a malformed stream event"}
			}
		}
		if !writeEvents(rl.res, rl.rc, rl.p.writeStall(), out) {
			return false, true, nil
		}
		if len(out) > 0 {
			rl.wrote, wrote = time.Now(), true
		}
	}
	if !wrote && !rl.keepAlive() {
		return false, true, nil
	}
	return false, false, nil
}

// writeEvents writes and flushes events under the stall deadline; false
// means the client is gone or stopped reading.
func writeEvents(res *echo.Response, rc *http.ResponseController, stall time.Duration, evs []sse.Event) bool {
	switch len(evs) {
	case 0:
		return true
	case 1:
		return writeFlush(res, rc, stall, evs[0].Raw)
	}
	raw := make([][]byte, len(evs))
	for i, ev := range evs {
		raw[i] = ev.Raw
	}
	return writeFlush(res, rc, stall, raw...)
}

// redactURL keeps transport errors from echoing full URLs (which may carry
// credentials in a query) back to clients.
func redactURL(err error) string {
	var ue interface{ Unwrap() error }
	if errors.As(err, &ue) {
		if inner := ue.Unwrap(); inner != nil {
			return inner.Error()
		}
	}
	return "connection failed"
}
