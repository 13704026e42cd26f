package proxy

import (
	"sync"
	"time"
)

// every says when a per-id write is due again: at most once per interval per
// id in this process, so that bookkeeping a request triggers (a key's "last
// used" time, the inspector's prune) costs the store once a minute, not
// once a request.
type every struct {
	interval time.Duration
	mu       sync.Mutex
	last     map[int64]time.Time
}

func newEvery(interval time.Duration) *every {
	return &every{interval: interval, last: map[int64]time.Time{}}
}

// due reports whether id's write is due at now, and if so counts it done.
func (e *every) due(id int64, now time.Time) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	if last, seen := e.last[id]; seen && now.Sub(last) < e.interval {
		return false
	}
	e.last[id] = now
	return true
}
