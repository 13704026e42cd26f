package memory

import (
	"cmp"
	"context"
	"slices"
	"sync"

	"github.com/perpetuity/perpetuity/memory/guard"
	"github.com/perpetuity/perpetuity/memory/store"
)

// FrameBeside builds the frame of a live question while capture stores it:
// the frame's one read (catch-up, clock, warm, recent, dates, labels) and
// its scan run while the capture's statements do, and the rest of the
// frame (candidates, render) while its commit flushes: the frame needs the
// stored ids, not their durability. The frame is the one Frame would build
// after Capture with q.LiveItems set to the captured items (settleLive
// mends what the read's earlier snapshot could not see), but for one
// thing: the scan's term statistics usually do not count the question
// itself yet, as a probe's do not (a frame after Capture counts it; an
// arena that took the question in before the scan is scanned again without
// it among the matches). It returns only once capture has returned,
// whatever happened to the frame: nothing may go upstream before the
// question is stored, and a failed capture (its commit included) wins over
// the frame (the caller answers that memory is unavailable).
//
// capture runs on its own goroutine and must not use ctx's cancellation if
// a client hanging up must not lose the turn; it passes b's hooks to the
// capture (memory.Message.Stored, Sending), or the frame waits for its
// return. q's LiveStored and LiveItems are set from what it stored.
//
// The frame's scan starts once the capture has sent its statements: the
// scan's workers take every core, and a capture started beside them
// waited for the whole scan before it sent anything (at 250k items its
// statements went out 1.0 ms into the turn at p50, 2.9 ms at p90), its
// round trips then coming after the scan instead of beside it.
func (e *Engine) FrameBeside(ctx context.Context, q FrameQuery, capture func(b Beside) (store.Captured, error)) (store.Captured, Frame, error) {
	lc := &liveCapture{sending: make(chan struct{}), stored: make(chan struct{}), done: make(chan struct{})}
	var final store.Captured
	said := false // only the capture's goroutine sets it, before done
	var sent sync.Once
	send := func() { sent.Do(func() { close(lc.sending) }) }
	go func() {
		defer close(lc.done)
		var got store.Captured
		// A panic in the capture (it runs here, outside the request's
		// recovery) fails the turn, as a capture error does.
		err := guard.Run(func() (err error) {
			got, err = capture(Beside{Sending: send, Stored: func(c store.Captured) {
				send() // what was stored was sent
				if !said {
					said, lc.got = true, c
					close(lc.stored)
				}
			}})
			return err
		})
		final, lc.err = got, err
		send()
		if !said {
			lc.got, lc.storeErr = got, err
			close(lc.stored)
		}
	}()
	f, err := e.frame(ctx, q, lc)
	<-lc.done
	if lc.err != nil {
		return store.Captured{}, Frame{}, lc.err
	}
	if said && !slices.Equal(final.ItemIDs, lc.got.ItemIDs) {
		// The statements the frame went on with were rolled back and the
		// capture stored the question again (a retry after a failed
		// commit, which no current schema makes): the frame is built
		// again on what was stored.
		q.LiveStored, q.LiveItems, q.SentAfter = true, final.ItemIDs, final.SentAfter
		f, err = e.frame(ctx, q, nil)
	}
	return final, f, err
}

// Beside is what FrameBeside hands the capture it runs beside, for the
// capture's message (memory.Message.Stored, Sending).
type Beside struct {
	Stored  func(store.Captured)
	Sending func()
}

// liveCapture is the capture a frame runs beside. sending is closed once
// the capture sent its statements (or ended without); got and storeErr
// are set before stored is closed (the statements succeeded, or the
// capture ended without), err before done (the capture returned).
type liveCapture struct {
	sending  chan struct{}
	stored   chan struct{}
	got      store.Captured
	storeErr error
	done     chan struct{}
	err      error
}

// adopt sets q's live items from the capture if it has stored them (a nil
// capture is none).
func (lc *liveCapture) adopt(q *FrameQuery) {
	if lc == nil || q.LiveStored {
		return
	}
	select {
	case <-lc.stored:
		if lc.storeErr == nil {
			q.LiveStored, q.LiveItems, q.SentAfter = true, lc.got.ItemIDs, lc.got.SentAfter
		}
	default:
	}
}

// waitSending waits until the capture (none: nil) has sent its statements
// or ended.
func (lc *liveCapture) waitSending(ctx context.Context) error {
	if lc == nil {
		return nil
	}
	select {
	case <-lc.sending:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// waitStored waits for the capture's statements; its error ends the frame
// (FrameBeside reports it). The rows are not yet visible to other
// connections then: what reads them from the store waits for committed.
func (lc *liveCapture) waitStored(ctx context.Context) error {
	select {
	case <-lc.stored:
		return lc.storeErr
	case <-ctx.Done():
		return ctx.Err()
	}
}

// committed waits for the capture to return.
func (lc *liveCapture) committed(ctx context.Context) error {
	select {
	case <-lc.done:
		return lc.err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// settleLive makes inputs read beside a capture what they would have been
// read after it: the read's snapshot may predate the commit, so the
// conversation's newest items and the viewer's latest activations may lack
// the question's items (born hot at the capture's clock, with tau; a
// duplicate stored nothing), and the viewer's clock its advance.
func settleLive(in *store.FrameInputs, got store.Captured, recent int, tau float64) {
	in.Clock = max(in.Clock, got.Clock)
	ids := append([]int64(nil), in.Recent...)
	var born []store.WarmRow
	for _, it := range got.Items {
		if !slices.Contains(ids, it.ID) {
			ids = append(ids, it.ID)
		}
		if !slices.ContainsFunc(in.Warm, func(w store.WarmRow) bool { return w.ItemID == it.ID }) {
			born = append(born, store.WarmRow{ItemID: it.ID, TLast: got.Clock, Peak: BornPeak, Tau: tau, Tokens: it.TokenCount})
		}
		in.Tokens[it.ID] = it.TokenCount
	}
	slices.SortFunc(ids, func(a, b int64) int { return cmp.Compare(b, a) }) // newest first, as recentSQL
	in.Recent = ids[:min(len(ids), recent)]
	if len(born) > 0 {
		// The newest first, as warmSQL, within its limit.
		in.Warm = append(born, in.Warm...)
		in.Warm = in.Warm[:min(len(in.Warm), store.WarmLimit)]
	}
}
