package memory

import (
	"context"
	"sync"
	"time"
)

// A capture appends its message's frequency counts as one row instead of
// adding to each of its terms' (store/stats.go): the engine folds the rows
// into the per-term counts in the background, off every request's path,
// when a capture's log position is a multiple of Options.FoldEvery. One
// fold per tenant runs at a time in a process; folds of several processes
// exclude each other in the database.
type folds struct {
	mu      sync.Mutex
	running map[int64]bool
	wg      sync.WaitGroup
	errs    func(error)
}

// foldTimeout bounds a fold; it has no request's context to end it.
const foldTimeout = time.Minute

func newFolds(errs func(error)) *folds {
	return &folds{running: map[int64]bool{}, errs: errs}
}

// start folds the tenant's pending counts unless a fold of it is running.
func (f *folds) start(st Store, tenantID int64) {
	f.mu.Lock()
	if f.running[tenantID] {
		f.mu.Unlock()
		return
	}
	f.running[tenantID] = true
	f.mu.Unlock()
	f.wg.Add(1)
	go func() {
		defer f.wg.Done()
		ctx, cancel := context.WithTimeout(context.Background(), foldTimeout)
		_, err := st.FoldStats(ctx, tenantID)
		cancel()
		f.mu.Lock()
		delete(f.running, tenantID)
		f.mu.Unlock()
		if err != nil && f.errs != nil {
			f.errs(err)
		}
	}()
}
