package memory

import (
	"context"
	"sync"
	"time"

	"github.com/perpetuity/perpetuity/memory/guard"
)

// tenantJobs runs one kind of background work (a fold of frequency
// counts, a write of arena segments) off every request's path: at most one
// job per tenant at a time in this process (a start while one runs is
// dropped: the running one does the work), each bounded by timeout since
// no request's context ends it, and failures go to errs.
type tenantJobs struct {
	timeout time.Duration
	errs    func(error)
	mu      sync.Mutex
	running map[int64]bool
	wg      sync.WaitGroup
}

func newTenantJobs(timeout time.Duration, errs func(error)) *tenantJobs {
	return &tenantJobs{timeout: timeout, errs: errs, running: map[int64]bool{}}
}

// start runs job for the tenant unless one of this kind is running.
func (j *tenantJobs) start(tenantID int64, job func(ctx context.Context) error) {
	j.mu.Lock()
	if j.running[tenantID] {
		j.mu.Unlock()
		return
	}
	j.running[tenantID] = true
	j.mu.Unlock()
	j.wg.Add(1)
	go func() {
		defer j.wg.Done()
		ctx, cancel := context.WithTimeout(context.Background(), j.timeout)
		err := guard.Run(func() error { return job(ctx) })
		cancel()
		j.mu.Lock()
		delete(j.running, tenantID)
		j.mu.Unlock()
		if err != nil && j.errs != nil {
			j.errs(err)
		}
	}()
}

// wait blocks until every job started has ended (shutdown).
func (j *tenantJobs) wait() {
	if j != nil {
		j.wg.Wait()
	}
}
