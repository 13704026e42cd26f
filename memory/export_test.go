package memory

import (
	"context"

	"github.com/perpetuity/perpetuity/memory/arena"

	"github.com/perpetuity/perpetuity/memory/store"
)

// CachedItems is which of ids the engine keeps the text of, for the tenant.
func (e *Engine) CachedItems(tenantID int64, ids []int64) []int64 {
	got, _ := e.res.texts.get(tenantID, ids)
	var out []int64
	for _, id := range ids {
		if _, ok := got[id]; ok {
			out = append(out, id)
		}
	}
	return out
}

// FrameItems reads ids as a frame of viewer renders them after its
// catch-up, with the viewer's labels read up front (viewer 0: none).
func (e *Engine) FrameItems(ctx context.Context, tenantID, viewer int64, ids []int64) (map[int64]store.RenderItem, error) {
	if err := e.res.loadNow(ctx, tenantID); err != nil {
		return nil, err
	}
	var labels store.Labels
	if viewer != 0 {
		in, err := e.store.ReadFrameInputs(ctx, tenantID, store.FrameRead{ViewerID: viewer})
		if err != nil {
			return nil, err
		}
		labels = in.Labels
	}
	return e.frameItems(ctx, tenantID, ids, labels, nil)
}

// IsResident reports whether the tenant's arena is loaded in this process.
func (e *Engine) IsResident(tenantID int64) bool {
	e.res.mu.Lock()
	defer e.res.mu.Unlock()
	r := e.res.by[tenantID]
	return r != nil && r.use.bytes > 0
}

// HoldArena loads the tenant's arena and holds it as a scan does, until
// release: what a scan in progress sees while other tenants come and go.
func (e *Engine) HoldArena(ctx context.Context, tenantID int64) (a *arena.Arena, release func(), err error) {
	r := e.res.use(tenantID)
	v, err := e.res.current(ctx, r)
	if err != nil {
		e.res.done(r)
		return nil, nil, err
	}
	return v.arena, func() { e.res.done(r) }, nil
}

// Rescans is how many frames scanned an arena their catch-up then moved on.
func (e *Engine) Rescans() int64 { return e.res.rescans.Load() }

// Watermark is how far the tenant's loaded arena has read the tenant's log
// (0: not loaded).
func (e *Engine) Watermark(tenantID int64) int64 {
	e.res.mu.Lock()
	r := e.res.by[tenantID]
	e.res.mu.Unlock()
	if r == nil {
		return 0
	}
	v, _, _ := e.res.position(r)
	return v.watermark
}
