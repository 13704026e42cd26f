package proxy

import (
	"context"
	"errors"

	"github.com/labstack/echo/v4"

	"github.com/perpetuity/perpetuity/memory"
	"github.com/perpetuity/perpetuity/proxy/limits"
)

// The import endpoint is admitted like a proxied call, under the key's
// limits (proxy/limits, Budget).

// IdentifyImport resolves and admits the caller of Perpetuity's import
// endpoint: the key, its limits (one request now), then X-Perpetuity-User,
// in the proxy's order, so a refused import creates no memory user. The
// route answers in no provider's dialect, so failures are echo HTTP
// errors; a refusal carries Retry-After and the rate-limit headers.
func (p *Proxy) IdentifyImport(c echo.Context) (memory.Who, limits.Budget, error) {
	ctx := c.Request().Context()
	who, k, err := p.resolveIdentity(ctx, c)
	if err == nil {
		err = p.admit(c, k)
	}
	if err == nil {
		err = storableHeaders(c.Request().Header)
	}
	if err == nil {
		// The users the import's lines name count against this key too.
		ctx = context.WithValue(ctx, creatorKey{}, k.KeyID)
		c.SetRequest(c.Request().WithContext(ctx))
		who, err = p.chooseUser(ctx, c, who, k, "")
	}
	var ae *APIError
	if errors.As(err, &ae) {
		if ae.RetryAfter != "" {
			c.Response().Header().Set("Retry-After", ae.RetryAfter)
		}
		return who, limits.Budget{}, echo.NewHTTPError(ae.Status, ae.Message)
	}
	if err != nil {
		return who, limits.Budget{}, err
	}
	return who, p.limits.Budget(k), nil
}
