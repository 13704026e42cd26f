package proxy

import (
	"fmt"
	"net/http"
	"strconv"

	"github.com/labstack/echo/v4"

	"github.com/perpetuity/perpetuity/memory/store"
	"github.com/perpetuity/perpetuity/proxy/limits"
)

// admit is the proxy's limit check for a resolved key (proxy/limits): nil,
// or the 429 in the caller's dialect. The rate-limit headers go on the
// refusal.
func (p *Proxy) admit(c echo.Context, k store.KeyIdentity) error {
	v := p.limits.Admit(c.Request().Context(), k)
	if v.Refused == nil {
		return nil
	}
	r := v.Refused
	secs := limits.RetryAfter(r.Retry)
	v.SetHeaders(c.Response().Header(), DialectOf(c))
	return &APIError{
		Status: http.StatusTooManyRequests, Kind: RateLimited, OpenAIType: r.Kind,
		Message: fmt.Sprintf("Rate limit reached for this Perpetuity key on %s: limit %d. Please try again in %ds.",
			r.What, r.Limit, secs),
		RetryAfter: strconv.FormatInt(secs, 10),
	}
}

// spent is what a reply cost in provider tokens: the provider's usage, or
// when it reported none (an OpenAI stream without include_usage), an
// estimate of four bytes to a token over what was sent and received.
func spent(r reply, sentBytes int) int {
	if n := r.usage.in + r.usage.out; n > 0 {
		return n
	}
	if r.text == "" {
		return 0
	}
	return (sentBytes + len(r.text) + 3) / 4
}
