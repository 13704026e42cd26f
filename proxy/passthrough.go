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

// passthrough relays every other provider path (/v1/models,
// /v1/messages/count_tokens, /v1/embeddings, ...) unchanged, so adopting the
// proxy breaks nothing. The provider is read from the credential alone
// (these bodies need not name a model): an OpenRouter key goes to
// OpenRouter, an Anthropic-style caller to Anthropic, anything else to
// OpenAI. A valid Perpetuity key is still required: the proxy
// is not an open relay.
func (p *Proxy) passthrough(c echo.Context) error {
	req := c.Request()
	if _, _, err := p.resolveIdentity(req.Context(), c); err != nil {
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
		if n > 0 {
			if _, werr := res.Write(buf[:n]); werr != nil {
				return nil
			}
			_ = rc.Flush()
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
