package memory

import (
	"context"
	"errors"
	"slices"
	"sync"
	"time"
)

// ErrBusy is a scan refused because its tenant's scans kept every worker
// slot it may use for longer than the gate waits (or had too many waiting):
// the caller should answer "busy, retry" rather than "broken".
var ErrBusy = errors.New("memory: scans are busy")

// Scans share the process's cores through a gate of worker slots. Why this
// and not a plain semaphore: a scan is short (bounded by the term cap) but
// uses every core it is given, and requests of many tenants arrive at once.
//
//   - A tenant holds at most share slots at once (default GOMAXPROCS, one
//     machine's worth), however many requests it sends: its other scans wait
//     in its own queue, first come first served. So a tenant flooding wide
//     questions keeps at most share workers busy, and a scan of another
//     tenant starts at once beside them: the Go scheduler then splits the
//     cores between the running workers, which costs the other tenant a
//     fraction of its (short) scan, not a wait for the flood.
//   - The process runs at most total slots (default 4*share), so many
//     tenants at once queue instead of piling up goroutines; waiting scans
//     are admitted tenant by tenant in turn, each taking what its tenant may
//     still hold, so no tenant's queue can starve another's.
//   - A scan gets as many workers as it asked for and its tenant and the
//     process can spare, at least one; the result does not depend on it.
//   - A scan waits at most wait (or its request's deadline), and a tenant
//     may have at most queue scans waiting; beyond either it gets ErrBusy.
type scanGate struct {
	mu      sync.Mutex
	total   int
	share   int
	queue   int
	wait    time.Duration
	free    int
	held    map[int64]int
	waiting map[int64][]*scanWaiter
	ring    []int64 // tenants with waiting scans, in turn order
	turn    int     // the ring position served next
}

type scanWaiter struct {
	tenant int64
	want   int
	got    chan int // the slots granted; buffered, so granting never blocks
}

func newScanGate(total, share, queue int, wait time.Duration) *scanGate {
	share = max(share, 1)
	return &scanGate{total: max(total, share), share: share, queue: max(queue, 1), wait: wait,
		free: max(total, share), held: map[int64]int{}, waiting: map[int64][]*scanWaiter{}}
}

// acquire admits one scan of tenant wanting want workers and returns how
// many slots it holds, to be given back with release.
func (g *scanGate) acquire(ctx context.Context, tenant int64, want int) (int, error) {
	want = max(want, 1)
	g.mu.Lock()
	if len(g.waiting[tenant]) == 0 {
		if n := g.grantable(tenant, want); n > 0 {
			g.take(tenant, n)
			g.mu.Unlock()
			return n, nil
		}
	}
	if len(g.waiting[tenant]) >= g.queue {
		g.mu.Unlock()
		return 0, ErrBusy
	}
	w := &scanWaiter{tenant: tenant, want: want, got: make(chan int, 1)}
	if len(g.waiting[tenant]) == 0 {
		g.ring = append(g.ring, tenant)
	}
	g.waiting[tenant] = append(g.waiting[tenant], w)
	g.mu.Unlock()

	timer := time.NewTimer(g.wait)
	defer timer.Stop()
	var err error
	select {
	case n := <-w.got:
		return n, nil
	case <-ctx.Done():
		err = ctx.Err()
	case <-timer.C:
		err = ErrBusy
	}
	g.mu.Lock()
	queued := g.drop(w)
	g.mu.Unlock()
	if !queued { // granted while giving up: hand the slots back
		g.release(tenant, <-w.got)
	}
	return 0, err
}

// release gives back n slots of tenant and admits whoever can run now.
func (g *scanGate) release(tenant int64, n int) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.free += n
	if g.held[tenant] -= n; g.held[tenant] <= 0 {
		delete(g.held, tenant)
	}
	g.dispatch()
}

// grantable is how many slots a scan of tenant wanting want gets now.
func (g *scanGate) grantable(tenant int64, want int) int {
	return max(0, min(want, g.free, g.share-g.held[tenant]))
}

func (g *scanGate) take(tenant int64, n int) {
	g.free -= n
	g.held[tenant] += n
}

// dispatch admits waiting scans in turn, one per tenant per round, while
// slots are free and some waiting tenant may hold more.
func (g *scanGate) dispatch() {
	for g.free > 0 && len(g.ring) > 0 {
		served := false
		for k := range len(g.ring) {
			i := (g.turn + k) % len(g.ring)
			t := g.ring[i]
			w := g.waiting[t][0]
			n := g.grantable(t, w.want)
			if n == 0 {
				continue
			}
			g.take(t, n)
			g.waiting[t] = g.waiting[t][1:]
			g.turn = i + 1
			if len(g.waiting[t]) == 0 {
				g.unring(i)
			}
			w.got <- n
			served = true
			break
		}
		if !served {
			return
		}
	}
}

// drop removes a waiter that gave up; false if it was granted already.
func (g *scanGate) drop(w *scanWaiter) bool {
	q := g.waiting[w.tenant]
	k := slices.Index(q, w)
	if k < 0 {
		return false
	}
	g.waiting[w.tenant] = slices.Delete(q, k, k+1)
	if len(g.waiting[w.tenant]) == 0 {
		g.unring(slices.Index(g.ring, w.tenant))
	}
	return true
}

// unring removes the tenant at ring position i, which has no waiters left.
func (g *scanGate) unring(i int) {
	delete(g.waiting, g.ring[i])
	g.ring = slices.Delete(g.ring, i, i+1)
	if g.turn > i {
		g.turn--
	}
	if len(g.ring) == 0 || g.turn >= len(g.ring) {
		g.turn = 0
	}
}
