package memory

import (
	"context"
)

// Warm loads the resident arenas of the given tenants (the ones this
// process owns, app's PERPETUITY_SHARD), so the first request of each is
// not the one that pays for the cold load. Under a budget it stops once the
// budget is full: loading more would only evict what it just loaded, and
// the rest load on their first request. Ready reports whether it finished.
func (e *Engine) Warm(ctx context.Context, tenantIDs []int64) error {
	for _, id := range tenantIDs {
		if e.res.full() {
			break
		}
		if e.opt.Chain != nil {
			e.opt.Chain.Kick(id) // the writer loads the tenant's graph meanwhile
		}
		if err := e.res.loadNow(ctx, id); err != nil {
			return err
		}
	}
	e.res.warm.Store(true)
	return nil
}

// Ready reports whether Warm has loaded the tenants it was given (as many
// as the budget holds).
func (e *Engine) Ready() bool { return e.res.warm.Load() }
