package memory

import (
	"context"
	"time"

	"github.com/perpetuity/perpetuity/memory/store"
)

// readFrame catches the tenant's arena up and reads what the frame needs
// besides retrieval, in one round trip once the arena is loaded: the
// catch-up and the frame's reads share one snapshot (store.ReadFrame), and
// the arena is caught up, and may be scanned, as soon as the catch-up's
// rows are in, while the rest of the read is still coming. The read runs
// after the viewer's deferred reheats landed, so it sees them. The frame's
// inputs arrive on the channel; ctx ending stops their read. r is the
// tenant's resident, held by the caller for as long as it uses the view.
func (e *Engine) readFrame(ctx context.Context, q FrameQuery, r *resident) (view, <-chan frameInputs, error) {
	viewer := viewerKey{q.TenantID, q.UserID}
	fr := store.FrameRead{ViewerID: q.UserID, ConvID: q.ConversationID,
		Horizon: horizon(e.opt.BaseTau * maxTauFactor), Recent: e.opt.Recent}
	if e.opt.DatedRank > 0 {
		fr.Dated = DateRanges(queryText(q.Live))
	}
	inputs := make(chan frameInputs, 1) // buffered: an early return leaks nothing
	watermark, version, loaded := e.res.position(r)
	if !loaded {
		// A cold load reads the whole tenant first; the inputs meanwhile.
		// The chain writer lets a tenant's graph go with its evicted arena
		// (budget.go): the load brings it back too.
		if e.opt.Chain != nil {
			e.opt.Chain.Kick(q.TenantID)
		}
		go func() {
			if err := e.pending.wait(ctx, viewer); err != nil {
				inputs <- frameInputs{err: err}
				return
			}
			in, err := e.store.ReadFrameInputs(ctx, q.TenantID, fr)
			inputs <- frameInputs{in, err}
		}()
		v, err := e.res.current(ctx, r)
		return v, inputs, err
	}
	if err := e.pending.wait(ctx, viewer); err != nil {
		return view{}, nil, err
	}
	start := time.Now()
	caught := make(chan store.CatchUp, 1)
	go func() {
		in, err := e.store.ReadFrame(ctx, q.TenantID, watermark, version, fr, func(cu store.CatchUp) { caught <- cu })
		inputs <- frameInputs{in, err}
	}()
	var cu store.CatchUp
	select {
	case cu = <-caught:
	case got := <-inputs:
		if got.err != nil {
			return view{}, nil, got.err
		}
		cu = <-caught // sent before the read returned
		inputs <- got
	}
	if v, ok := e.res.advance(r, version, cu, start); ok {
		return v, inputs, nil
	}
	// A dictionary flip: the arena reloads under the new version.
	v, err := e.res.current(ctx, r)
	return v, inputs, err
}
