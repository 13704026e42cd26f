package proxy

import (
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/perpetuity/perpetuity/proxy/dialect"
	"github.com/perpetuity/perpetuity/proxy/provider"
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

// passthrough relays the provider's other documented endpoints
// (/v1/models, /v1/messages/count_tokens, /v1/embeddings, ...; passpath.go)
// so adopting the proxy breaks nothing. The provider is read from the
// credential alone (these bodies need not name a model): an OpenRouter key
// goes to OpenRouter, an Anthropic-style caller to Anthropic, anything else
// to OpenAI. A valid Perpetuity key is still required: the proxy is not an
// open relay. Headers go by the one outbound policy, replies by the
// response policy (both in proxy/provider).
func (p *Proxy) passthrough(c echo.Context) error {
	req := c.Request()
	_, key, err := p.resolveIdentity(req.Context(), c)
	if err != nil {
		return err
	}
	if err := provider.CheckCredential(req.Header); err != nil {
		return refused(err)
	}
	tg, err := p.providers.PassthroughTarget(req.Header)
	if err != nil {
		return refused(err)
	}
	// Errors from here on are the provider's dialect: the caller speaks it.
	c.Set(dialectKey, tg.Provider.Dialect)
	segs, err := passthroughSegments(req.URL.EscapedPath())
	if err != nil {
		return err
	}
	if err := checkQuery(req.URL.RawQuery); err != nil {
		return err
	}
	if allow, err := matchPath(tg.Provider.Paths, req.Method, segs); err != nil {
		if allow != nil {
			c.Response().Header().Set("Allow", strings.Join(allow, ", "))
		}
		return err
	}
	if err := p.admit(c, key); err != nil {
		return err
	}
	base, err := url.Parse(tg.Provider.Base)
	if err != nil {
		return fmt.Errorf("provider base URL: %w", err)
	}
	if tg.Provider.Dialect == dialect.AnthropicMessages {
		base = base.JoinPath("v1")
	}
	body := http.MaxBytesReader(c.Response(), req.Body, p.cfg.MaxBodyBytes)
	up, err := http.NewRequestWithContext(req.Context(), req.Method, upstreamURL(base, segs, req.URL.RawQuery).String(), body)
	if err != nil {
		return errBadRequest("bad path")
	}
	up.Header = provider.Outbound(req.Header, tg)
	up.ContentLength = req.ContentLength
	resp, err := p.client.Do(up)
	if err != nil {
		return &APIError{Status: http.StatusBadGateway, Kind: UpstreamError, Message: "provider unreachable: " + redactURL(err)}
	}
	defer resp.Body.Close()
	if isRedirect(resp.StatusCode) {
		return redirected(resp.StatusCode)
	}
	ct, disposition, ok := provider.ServedContentType(resp.Header.Get("Content-Type"))
	if !ok {
		return unservedBody(resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	res := c.Response()
	h := res.Header()
	provider.CopyResponseHeaders(h, resp.Header)
	h.Set(echo.HeaderContentType, ct)
	if disposition != "" {
		h.Set("Content-Disposition", disposition)
	}
	res.WriteHeader(resp.StatusCode)
	rc := http.NewResponseController(res)
	buf := make([]byte, 32<<10)
	for {
		n, err := resp.Body.Read(buf)
		if n > 0 && !writeFlush(res, rc, p.writeStall(), buf[:n]) {
			return nil
		}
		if err != nil {
			return nil // the provider's end, or it broke off: the status is out
		}
	}
}
