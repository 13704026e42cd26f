package memory

import (
	"context"
	"time"
)

// A capture appends its message's frequency counts as one row instead of
// adding to each of its terms' (store/stats.go): the engine folds the rows
// into the per-term counts in the background (background.go), off every
// request's path, when a capture's log position is a multiple of
// Options.FoldEvery. One fold per tenant runs at a time in a process;
// folds of several processes exclude each other in the database.

// foldTimeout bounds a fold.
const foldTimeout = time.Minute

// startFold folds the tenant's pending counts unless a fold of it is running.
func (e *Engine) startFold(tenantID int64) {
	e.folds.start(tenantID, func(ctx context.Context) error {
		_, err := e.store.FoldStats(ctx, tenantID)
		return err
	})
}
