package memory

import (
	"context"
	"time"

	"github.com/perpetuity/perpetuity/memory/guard"
	"github.com/perpetuity/perpetuity/memory/store"
)

// readFrame reads what the frame needs besides retrieval, in one round
// trip once the arena is loaded: the tenant's catch-up and the frame's
// reads share one snapshot (store.ReadFrame). It returns the arena as it
// stands, to scan while the read is in flight, and settle, which waits for
// the catch-up, applies it, and says whether it brought anything the
// scanned view lacked (then the caller scans settle's view again). The
// turn's own capture is in the arena already (own.go), so the catch-up is
// usually empty and the scan need not wait for the round trip; when others
// wrote last (resident.tip), readFrame settles first. The read runs after
// the viewer's deferred reheats landed, so it sees them. The frame's
// inputs arrive on the channel; ctx ending stops their read. r is the
// tenant's resident, held by the caller for as long as it uses the view.
//
// Beside a capture (lc not nil, beside.go) neither the read nor the scan
// waits for it, except a cold load, which loads what the capture stored.
func (e *Engine) readFrame(ctx context.Context, q FrameQuery, r *resident, lc *liveCapture) (view, <-chan frameInputs, func() (view, bool, error), error) {
	viewer := viewerKey{q.TenantID, q.UserID}
	fr := store.FrameRead{ViewerID: q.UserID, ConvID: q.ConversationID,
		Horizon: horizon(e.opt.BaseTau * maxTauFactor), Recent: e.opt.Recent}
	if e.opt.DatedRank > 0 {
		fr.Dated = DateRanges(queryText(q.Live))
	}
	inputs := make(chan frameInputs, 1) // buffered: an early return leaks nothing
	v, loaded, tip := e.res.position(r)
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
			var in store.FrameInputs
			err := guard.Run(func() (err error) { in, err = e.store.ReadFrameInputs(ctx, q.TenantID, fr); return err })
			inputs <- frameInputs{in, err}
		}()
		if lc != nil {
			if err := lc.committed(ctx); err != nil { // the load reads it from the store
				return view{}, nil, nil, err
			}
		}
		v, err := e.res.current(ctx, r)
		return v, inputs, func() (view, bool, error) { return v, false, nil }, err
	}
	if err := e.pending.wait(ctx, viewer); err != nil {
		return view{}, nil, nil, err
	}
	start := time.Now()
	caught := make(chan store.CatchUp, 1)
	go func() {
		// Off the request's goroutine, so guarded: settle takes a failed
		// read's error even when its catch-up never came.
		var in store.FrameInputs
		err := guard.Run(func() (err error) {
			in, err = e.store.ReadFrame(ctx, q.TenantID, v.watermark, v.dict, fr, func(cu store.CatchUp) { caught <- cu })
			return err
		})
		inputs <- frameInputs{in, err}
	}()
	settled := false
	settle := func() (view, bool, error) {
		if settled { // the view it gave is current to the snapshot
			return v, false, nil
		}
		settled = true
		var cu store.CatchUp
		select {
		case cu = <-caught:
		case got := <-inputs:
			if got.err != nil {
				return view{}, false, got.err
			}
			cu = <-caught // sent before the read returned
			inputs <- got
		}
		if cu.Head.DictVersion == v.dict && cu.Head.Seq <= v.watermark {
			return v, false, nil // the scanned view held all the snapshot does
		}
		var ok bool
		if v, ok = e.res.advance(r, v.dict, cu, start); ok {
			return v, true, nil
		}
		// A dictionary flip: the arena reloads under the new version.
		var err error
		v, err = e.res.current(ctx, r)
		return v, true, err
	}
	if !tip {
		// Others wrote last: the catch-up likely brings something, so the
		// scan waits for it rather than run twice.
		if _, _, err := settle(); err != nil {
			return view{}, nil, nil, err
		}
	}
	return v, inputs, settle, nil
}
