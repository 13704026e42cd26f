package proxy

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"

	"github.com/labstack/echo/v4"

	"github.com/perpetuity/perpetuity/proxy/sse"
	"github.com/perpetuity/perpetuity/proxy/translate"
)

// maxUpstreamBody bounds a non-streamed provider reply held in memory.
const maxUpstreamBody = 64 << 20

// forward sends the rendered request and relays the reply, returning what
// the provider said for capture.
func (p *Proxy) forward(c echo.Context, t *turn, body []byte) (reply, error) {
	ctx := c.Request().Context()
	up, err := http.NewRequestWithContext(ctx, http.MethodPost, t.up.url, bytes.NewReader(body))
	if err != nil {
		return reply{}, fmt.Errorf("build upstream request: %w", err)
	}
	up.Header = t.up.header.Clone()
	resp, err := p.client.Do(up)
	if err != nil {
		if ctx.Err() != nil {
			return reply{interrupted: true}, nil // the client left before the provider answered
		}
		return reply{}, &APIError{Status: http.StatusBadGateway, Kind: UpstreamError, Message: "provider unreachable: " + redactURL(err)}
	}
	defer resp.Body.Close()
	if resp.StatusCode >= 300 {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
		copyResponseHeaders(c.Response().Header(), resp.Header)
		status := resp.StatusCode
		if t.up.errorBody != nil {
			status, b = t.up.errorBody(status, b)
		}
		return reply{}, &APIError{Status: status, Kind: UpstreamError, Message: "provider error", Body: b,
			RetryAfter: resp.Header.Get("Retry-After")}
	}
	if isEventStream(resp.Header.Get("Content-Type")) {
		return p.relayStream(c, t, resp)
	}
	return p.relayBody(c, t, resp)
}

func (p *Proxy) relayBody(c echo.Context, t *turn, resp *http.Response) (reply, error) {
	b, err := io.ReadAll(io.LimitReader(resp.Body, maxUpstreamBody))
	if err != nil {
		if c.Request().Context().Err() != nil {
			return reply{interrupted: true}, nil
		}
		return reply{}, &APIError{Status: http.StatusBadGateway, Kind: UpstreamError, Message: "provider reply cut short"}
	}
	r := reply{text: replyText(t.up.dialect, b), usage: readUsage(b)}
	out := b
	if t.up.response != nil {
		if out, err = t.up.response(b); err != nil {
			p.log.Warn("provider reply could not be translated", "request_id", t.rid, "provider", t.up.provider, "err", err)
			r.interrupted = true
			return r, &APIError{Status: http.StatusBadGateway, Kind: UpstreamError, Message: "provider reply could not be translated"}
		}
	}
	res := c.Response()
	copyResponseHeaders(res.Header(), resp.Header)
	if t.up.response != nil {
		res.Header().Set(echo.HeaderContentType, echo.MIMEApplicationJSON)
	}
	res.Header().Set("Content-Length", strconv.Itoa(len(out)))
	res.WriteHeader(resp.StatusCode)
	_, _ = res.Write(out)
	return r, nil
}

// relayStream forwards the provider's events one by one, translated when
// the dialects differ, flushing as each arrives, while collecting the reply
// from the provider's own events for capture. A stream that ends without
// its terminator, or with an in-band error, is an error for the client and
// a flagged capture, never a clean end. Errors returned after the response
// started reach the client as the dialect's in-band error event (WriteError).
func (p *Proxy) relayStream(c echo.Context, t *turn, resp *http.Response) (reply, error) {
	res := c.Response()
	h := res.Header()
	copyResponseHeaders(h, resp.Header)
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no")
	var ts translate.Stream
	if t.up.stream != nil {
		ts = t.up.stream()
		h.Set(echo.HeaderContentType, "text/event-stream; charset=utf-8")
	}
	res.WriteHeader(resp.StatusCode)
	rc := http.NewResponseController(res)
	_ = rc.SetWriteDeadline(noDeadline) // streams outlive any server timeout
	if err := rc.Flush(); err != nil {
		return reply{interrupted: true}, nil
	}
	acc := newAccumulator(t.up.dialect)
	rd := sse.NewReader(resp.Body)
	for {
		ev, err := rd.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			if c.Request().Context().Err() != nil {
				return acc.reply(true), nil
			}
			return acc.reply(true), &APIError{Status: http.StatusBadGateway, Kind: UpstreamError, Message: "provider stream broke off before its end"}
		}
		acc.add(ev)
		if acc.ended && !acc.done {
			// A terminator without a stop is no clean end: the client gets
			// the error below instead of the terminator.
			break
		}
		out := []sse.Event{ev}
		if ts != nil {
			if out, err = ts.Push(ev); err != nil {
				p.log.Warn("provider stream event could not be translated", "request_id", t.rid, "provider", t.up.provider, "err", err)
				return acc.reply(true), &APIError{Status: http.StatusBadGateway, Kind: UpstreamError, Message: "provider sent a malformed stream event"}
			}
		}
		if !writeEvents(res, rc, out) {
			return acc.reply(true), nil
		}
	}
	if ts != nil && acc.done {
		out, err := ts.End()
		if err != nil {
			p.log.Warn("translated stream did not end cleanly", "request_id", t.rid, "provider", t.up.provider, "err", err)
			return acc.reply(true), &APIError{Status: http.StatusBadGateway, Kind: UpstreamError, Message: "provider stream could not be translated to its end"}
		}
		if !writeEvents(res, rc, out) {
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

// writeEvents writes and flushes events; false means the client is gone.
func writeEvents(res *echo.Response, rc *http.ResponseController, evs []sse.Event) bool {
	if len(evs) == 0 {
		return true
	}
	for _, ev := range evs {
		if _, err := res.Write(ev.Raw); err != nil {
			return false
		}
	}
	return rc.Flush() == nil
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
