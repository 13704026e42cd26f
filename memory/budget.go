package memory

import (
	"container/list"
	"time"

	"github.com/perpetuity/perpetuity/memory/arena"
)

// residency keeps the resident arenas within a memory budget: bytes as the
// arenas count them (arena.Bytes, the figure make bench reports per item),
// least recently used out first. An arena in use (a scan, a catch-up, a
// frame still reading its hits) is never evicted: each use holds a
// reference (use, done), and eviction passes over held arenas. So the
// resident bytes exceed the budget by at most the arenas in use at once:
// with requests one at a time, by one tenant, and a tenant larger than the
// whole budget is loaded, served and evicted after. An evicted tenant is
// simply not resident: its next use loads it from watermark 0, as a first
// use does, and the watermark rules of current decide the rest.
type residency struct {
	budget    int64     // bytes; <= 0 is unlimited
	order     list.List // of *resident, most recently used at the front
	bytes     int64     // sum of the residents' bytes
	items     int
	peak      int64 // the most bytes resident at once
	loads     int64 // loads from scratch: first uses, reloads after eviction, flips
	evictions int64
	loadTime  time.Duration
}

// usage is one resident's part of the bookkeeping, under residents.mu.
type usage struct {
	refs  int   // uses holding the arena
	bytes int64 // the arena's size at its last catch-up; 0 until loaded
	items int
	elem  *list.Element
}

func (l *residency) init(budget int64) {
	l.budget = budget
	l.order.Init()
}

// use returns the tenant's resident, created empty (to load) when it has
// none, and holds it until done: it will not be evicted meanwhile.
func (rs *residents) use(tenantID int64) *resident {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	r := rs.by[tenantID]
	if r == nil {
		r = &resident{tenant: tenantID, arena: arena.New(rs.opts)}
		rs.by[tenantID] = r
		r.use.elem = rs.lru.order.PushFront(r)
	} else {
		rs.lru.order.MoveToFront(r.use.elem)
	}
	r.use.refs++
	return r
}

// done lets go of what use held, and evicts down to the budget: the
// arena just used is the most recent, so it goes last, and only when it
// alone is over the budget.
func (rs *residents) done(r *resident) {
	rs.tell(rs.underLock(func() []int64 {
		r.use.refs--
		if r.use.refs == 0 && r.use.bytes == 0 {
			// Never loaded (a failed load, a tenant that does not exist): an
			// empty entry is not worth keeping.
			rs.drop(r)
		}
		return rs.evict()
	}))
}

// underLock runs f under rs.mu, released however f ends: a panic recovered
// above (memory/guard) must not leave every later use waiting on it.
func (rs *residents) underLock(f func() []int64) []int64 {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	return f()
}

// resize records the arena's size after a catch-up changed it, and evicts
// others down to the budget at once, so that a load adds at most itself to
// what is resident. The caller holds r.mu (never rs.mu).
func (rs *residents) resize(r *resident) {
	b, n := int64(r.arena.Bytes()), r.arena.Len()
	rs.tell(rs.underLock(func() []int64 {
		rs.lru.bytes += b - r.use.bytes
		rs.lru.items += n - r.use.items
		r.use.bytes, r.use.items = b, n
		rs.lru.peak = max(rs.lru.peak, rs.lru.bytes)
		return rs.evict()
	}))
}

// loaded counts a load from scratch and its time.
func (rs *residents) loaded(d time.Duration) {
	rs.mu.Lock()
	rs.lru.loads++
	rs.lru.loadTime += d
	rs.mu.Unlock()
	rs.observe("load", d)
}

// evict drops unheld residents, least recently used first, until the
// budget holds; it returns their tenants. The caller holds rs.mu.
func (rs *residents) evict() []int64 {
	if rs.lru.budget <= 0 {
		return nil
	}
	var gone []int64
	for e := rs.lru.order.Back(); e != nil && rs.lru.bytes > rs.lru.budget; {
		prev := e.Prev()
		if r := e.Value.(*resident); r.use.refs == 0 {
			rs.drop(r)
			rs.lru.evictions++
			gone = append(gone, r.tenant)
		}
		e = prev
	}
	return gone
}

// drop forgets a resident (the caller holds rs.mu); the arena goes to the
// garbage collector, nobody holding it.
func (rs *residents) drop(r *resident) {
	rs.lru.order.Remove(r.use.elem)
	if rs.by[r.tenant] == r {
		delete(rs.by, r.tenant)
	}
	rs.lru.bytes -= r.use.bytes
	rs.lru.items -= r.use.items
	r.use.bytes, r.use.items = 0, 0
}

// tell passes evictions on (outside rs.mu), skipping a tenant already back
// in use: its next user needs what goes with it.
func (rs *residents) tell(gone []int64) {
	if rs.evicted == nil {
		return
	}
	for _, id := range gone {
		rs.mu.Lock()
		_, back := rs.by[id]
		rs.mu.Unlock()
		if !back {
			rs.evicted(id)
		}
	}
}

// full reports whether the budget holds no more arenas.
func (rs *residents) full() bool {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	return rs.lru.budget > 0 && rs.lru.bytes >= rs.lru.budget
}

// ResidentStats sums the resident arenas of this process.
type ResidentStats struct {
	Tenants int   // tenants with an arena loaded
	Items   int   // items held
	Bytes   int64 // bytes held, as the arenas count them
	Budget  int64 // the budget (0: unlimited)
	Peak    int64 // the most bytes held at once so far
	// Loads counts loads from scratch (a first use, a reload after an
	// eviction, a dictionary flip), LoadTime their sum.
	Loads     int64
	Evictions int64
	LoadTime  time.Duration
}

// Resident reports what this process holds resident. It reads the
// bookkeeping only, so it never waits for a load in progress.
func (e *Engine) Resident() ResidentStats {
	rs := e.res
	rs.mu.Lock()
	defer rs.mu.Unlock()
	s := ResidentStats{Items: rs.lru.items, Bytes: rs.lru.bytes, Budget: max(rs.lru.budget, 0), Peak: rs.lru.peak,
		Loads: rs.lru.loads, Evictions: rs.lru.evictions, LoadTime: rs.lru.loadTime}
	for _, r := range rs.by {
		if r.use.bytes > 0 {
			s.Tenants++
		}
	}
	return s
}
