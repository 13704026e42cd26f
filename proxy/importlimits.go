package proxy

// The import endpoint under the key's rate limits (issue 15, finding 8).
//
// An import is one request against the key's requests per minute, admitted
// or refused like a proxied call, before anything is read or stored (not
// even the memory user X-Perpetuity-User names). Its size is counted
// against the key's token budgets line by line, as the importer stores the
// lines: a line may start while the key's minute bucket is not empty and
// its day is not used up, and what it stored is charged when it is stored,
// so the line in flight can take the key into debt, as a proxied reply
// can; the next line then waits for refill, which the import does not do:
// it stops there and says where to resume.

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/perpetuity/perpetuity/memory"
	"github.com/perpetuity/perpetuity/memory/store"
)

// ImportBudget is an admitted import's hold on its key's token budgets.
type ImportBudget struct {
	lm  *limiter
	key store.KeyIdentity
}

// Allow is nil when the key's token budgets are not spent; otherwise how
// long until they refill, and an error naming the limit reached.
func (b ImportBudget) Allow(ctx context.Context) (time.Duration, error) {
	if b.lm == nil {
		return 0, nil
	}
	r := b.lm.allowTokens(ctx, b.key)
	if r == nil {
		return 0, nil
	}
	return r.retry, fmt.Errorf("rate limit reached for this Perpetuity key on %s: limit %d", r.what, r.limit)
}

// Charge counts tokens an import stored against the key's budgets.
func (b ImportBudget) Charge(tokens int) {
	if b.lm != nil {
		b.lm.charge(b.key.KeyID, tokens)
	}
}

// allowTokens is ImportBudget.Allow: the key's token refusal under the
// tenant's current limits, or nil.
func (lm *limiter) allowTokens(ctx context.Context, k store.KeyIdentity) *refusal {
	l := lm.limits(ctx, k.TenantID)
	if l.TokensPerMinute == 0 && l.TokensPerDay == 0 {
		return nil
	}
	now := lm.now()
	lm.mu.Lock()
	defer lm.mu.Unlock()
	return tokenRefusal(now, lm.stateLocked(now, k.KeyID, l), l)
}

// IdentifyImport resolves and admits the caller of Perpetuity's import
// endpoint: the key, its limits (one request now), then X-Perpetuity-User,
// in the proxy's order, so a refused import creates no memory user. The
// route answers in no provider's dialect, so failures are echo HTTP
// errors; a refusal carries Retry-After and the rate-limit headers.
func (p *Proxy) IdentifyImport(c echo.Context) (memory.Who, ImportBudget, error) {
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
		return who, ImportBudget{}, echo.NewHTTPError(ae.Status, ae.Message)
	}
	if err != nil {
		return who, ImportBudget{}, err
	}
	return who, ImportBudget{lm: p.limits, key: k}, nil
}
