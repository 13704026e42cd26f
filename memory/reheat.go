package memory

import (
	"context"
	"sync"
	"time"

	"github.com/perpetuity/perpetuity/memory/guard"
)

// A frame's reheats change nothing in the frame itself, only what later
// frames see, so with Options.DeferReheat they are written after Frame
// returns, off the request's path. Every later frame of the same viewer
// waits for them first: a viewer's frames still see each other's reheats,
// exactly as if they had been written inline.
type reheats struct {
	mu   sync.Mutex
	tail map[viewerKey]chan struct{} // the viewer's newest pending write
	wg   sync.WaitGroup
	errs func(error)
}

type viewerKey struct{ tenant, viewer int64 }

// reheatTimeout bounds a deferred write; it no longer has a request's
// context to end it.
const reheatTimeout = 10 * time.Second

func newReheats(errs func(error)) *reheats {
	return &reheats{tail: map[viewerKey]chan struct{}{}, errs: errs}
}

// wait returns once every deferred reheat of the viewer is written.
func (r *reheats) wait(ctx context.Context, k viewerKey) error {
	r.mu.Lock()
	ch := r.tail[k]
	r.mu.Unlock()
	if ch == nil {
		return nil
	}
	select {
	case <-ch:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// start writes in the background, after the viewer's earlier writes.
func (r *reheats) start(ctx context.Context, k viewerKey, write func(context.Context) error) {
	done := make(chan struct{})
	r.mu.Lock()
	prev := r.tail[k]
	r.tail[k] = done
	r.mu.Unlock()
	r.wg.Add(1)
	go func() {
		defer r.wg.Done()
		if prev != nil {
			<-prev
		}
		wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), reheatTimeout)
		err := guard.Run(func() error { return write(wctx) })
		cancel()
		r.mu.Lock()
		if r.tail[k] == done {
			delete(r.tail, k)
		}
		r.mu.Unlock()
		close(done)
		if err != nil && r.errs != nil {
			r.errs(err)
		}
	}()
}

// WaitReheats blocks until every deferred reheat is written and every
// background fold of frequency counts and write of arena segments has
// ended (shutdown).
func (e *Engine) WaitReheats() {
	e.pending.wg.Wait()
	e.folds.wait()
	e.res.segs.wait()
}
