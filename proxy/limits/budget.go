package limits

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
	"fmt"
	"time"

	"github.com/perpetuity/perpetuity/memory/store"
)

// Budget is an admitted import's hold on its key's token budgets. The zero
// Budget limits nothing.
type Budget struct {
	lm  *Limiter
	key store.KeyIdentity
}

// Budget is the import budget of a key the proxy admitted.
func (lm *Limiter) Budget(k store.KeyIdentity) Budget { return Budget{lm: lm, key: k} }

// Allow is nil when the key's token budgets are not spent; otherwise how
// long until they refill, and an error naming the limit reached.
func (b Budget) Allow(ctx context.Context) (time.Duration, error) {
	if b.lm == nil {
		return 0, nil
	}
	r := b.lm.allowTokens(ctx, b.key)
	if r == nil {
		return 0, nil
	}
	return r.Retry, fmt.Errorf("rate limit reached for this Perpetuity key on %s: limit %d", r.What, r.Limit)
}

// Charge counts tokens an import stored against the key's budgets.
func (b Budget) Charge(tokens int) {
	if b.lm != nil {
		b.lm.Charge(b.key.KeyID, tokens)
	}
}

// allowTokens is Budget.Allow: the key's token refusal under the
// tenant's current limits (the key's own where it has them), or nil.
func (lm *Limiter) allowTokens(ctx context.Context, k store.KeyIdentity) *Refusal {
	l := k.Limits.Over(lm.limits(ctx, k.TenantID))
	if l.TokensPerMinute == 0 && l.TokensPerDay == 0 {
		return nil
	}
	now := lm.now()
	lm.mu.Lock()
	defer lm.mu.Unlock()
	return tokenRefusal(now, lm.stateLocked(now, k.KeyID, l), l)
}
