package memory

import (
	"context"
)

// Warm loads the resident arenas of the given tenants, so the first
// request of each is not the one that pays for the cold load. Ready reports
// whether it finished.
func (e *Engine) Warm(ctx context.Context, tenantIDs []int64) error {
	for _, id := range tenantIDs {
		if e.opt.Chain != nil {
			e.opt.Chain.Kick(id) // the writer loads the tenant's graph meanwhile
		}
		if _, err := e.res.current(ctx, id); err != nil {
			return err
		}
	}
	e.res.warm.Store(true)
	return nil
}

// Ready reports whether Warm has loaded every tenant's arena.
func (e *Engine) Ready() bool { return e.res.warm.Load() }
