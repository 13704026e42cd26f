package proxy

import (
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/labstack/echo/v4"
)

// noDeadline clears a write deadline for a long stream.
var noDeadline time.Time

// defaultWriteStall is Config.WriteStall's default.
const defaultWriteStall = time.Minute

func (p *Proxy) writeStall() time.Duration {
	if p.cfg.WriteStall > 0 {
		return p.cfg.WriteStall
	}
	return defaultWriteStall
}

// writeFlush writes chunks and flushes them with at most stall for the
// whole, then clears the deadline for the wait before the next write. False
// means the client is gone or stopped reading.
func writeFlush(w io.Writer, rc *http.ResponseController, stall time.Duration, chunks ...[]byte) bool {
	_ = rc.SetWriteDeadline(time.Now().Add(stall))
	for _, c := range chunks {
		if _, err := w.Write(c); err != nil {
			return false
		}
	}
	if rc.Flush() != nil {
		return false
	}
	_ = rc.SetWriteDeadline(noDeadline)
	return true
}

// passthrough relays every other provider path (/v1/models,
// /v1/messages/count_tokens, /v1/embeddings, ...) unchanged, so adopting the
// proxy breaks nothing. The provider is read from the credential alone
// (these bodies need not name a model): an OpenRouter key goes to
// OpenRouter, an Anthropic-style caller to Anthropic, anything else to
// OpenAI. A valid Perpetuity key is still required: the proxy
// is not an open relay.
func (p *Proxy) passthrough(c echo.Context) error {
	req := c.Request()
	_, key, err := p.resolveIdentity(req.Context(), c)
	if err != nil {
		return err
	}
	if err := p.admit(c, key); err != nil {
		return err
	}
	if err := perpetuityKeyAsCredential(req.Header); err != nil {
		return err
	}
	rest := c.Param("*")
	var target string
	switch {
	case readCredentials(req.Header).bearer.kind == keyOpenRouter:
		target = p.providers.openrouter.base + "/" + rest
	case isAnthropic(req.Header):
		target = p.providers.anthropic.base + "/v1/" + rest
	default:
		target = p.providers.openai.base + "/" + rest
	}
	if req.URL.RawQuery != "" {
		target += "?" + req.URL.RawQuery
	}
	body := http.MaxBytesReader(c.Response(), req.Body, p.cfg.MaxBodyBytes)
	up, err := http.NewRequestWithContext(req.Context(), req.Method, target, body)
	if err != nil {
		return errBadRequest("bad path")
	}
	up.Header = outboundHeaders(req.Header)
	up.ContentLength = req.ContentLength
	resp, err := p.client.Do(up)
	if err != nil {
		return &APIError{Status: http.StatusBadGateway, Kind: UpstreamError, Message: "provider unreachable: " + redactURL(err)}
	}
	defer resp.Body.Close()
	res := c.Response()
	copyResponseHeaders(res.Header(), resp.Header)
	res.WriteHeader(resp.StatusCode)
	rc := http.NewResponseController(res)
	buf := make([]byte, 32<<10)
	for {
		n, err := resp.Body.Read(buf)
		if n > 0 && !writeFlush(res, rc, p.writeStall(), buf[:n]) {
			return nil
		}
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return nil
		}
	}
}

// isAnthropic tells an Anthropic-style caller by its headers.
func isAnthropic(h http.Header) bool {
	if h.Get("x-api-key") != "" || h.Get("anthropic-version") != "" {
		return true
	}
	return strings.HasPrefix(strings.TrimPrefix(h.Get("Authorization"), "Bearer "), "sk-ant-")
}
