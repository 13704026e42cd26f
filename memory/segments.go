package memory

import (
	"context"
	"sync"
	"time"

	"github.com/perpetuity/perpetuity/memory/store"
)

// SegmentStore is where a cold load's rows are kept as arena segments, so
// that the next process loading the tenant reads a few hundred values
// instead of joining every item with its row (store/segment.go).
type SegmentStore interface {
	WriteSegments(ctx context.Context, tenantID int64, dictVersion int, asOf int64, segs []store.Segment) (int, error)
}

// segmentWriter writes, in the background, the segments a cold load's read
// allows past the chain it read: a load from rows alone (a tenant's first,
// or one grown since) leaves the next one segments. One write per tenant
// runs at a time in a process; processes exclude each other in the
// database, and the segments written are the same whoever writes them.
type segmentWriter struct {
	st      SegmentStore
	size    int // rows a segment holds, at least
	mu      sync.Mutex
	running map[int64]bool
	wg      sync.WaitGroup
	errs    func(error)
}

// segmentTimeout bounds a write; it has no request's context to end it.
const segmentTimeout = 5 * time.Minute

func newSegmentWriter(st SegmentStore, size int, errs func(error)) *segmentWriter {
	return &segmentWriter{st: st, size: size, running: map[int64]bool{}, errs: errs}
}

// loaded is told of every cold load: cu is its whole read, complete up to
// its head under dictVersion.
func (w *segmentWriter) loaded(tenantID int64, dictVersion int, cu store.CatchUp) {
	if w == nil || len(cu.Items) == 0 || cu.Items[len(cu.Items)-1].Seq-cu.Segmented <= 0 {
		return
	}
	// Cheap test before cutting: enough rows past the chain for one segment.
	past := 0
	for i := len(cu.Items) - 1; i >= 0 && cu.Items[i].Seq > cu.Segmented && past < w.size; i-- {
		past++
	}
	if past < w.size {
		return
	}
	w.mu.Lock()
	if w.running[tenantID] {
		w.mu.Unlock()
		return
	}
	w.running[tenantID] = true
	w.mu.Unlock()
	w.wg.Add(1)
	go func() {
		defer w.wg.Done()
		defer func() {
			w.mu.Lock()
			delete(w.running, tenantID)
			w.mu.Unlock()
		}()
		segs := store.CutSegments(cu.Items, cu.Segmented, cu.Head.Seq, w.size)
		if len(segs) == 0 {
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), segmentTimeout)
		defer cancel()
		if _, err := w.st.WriteSegments(ctx, tenantID, dictVersion, cu.Head.Seq, segs); err != nil && w.errs != nil {
			w.errs(err)
		}
	}()
}

// wait blocks until every write started has ended.
func (w *segmentWriter) wait() {
	if w != nil {
		w.wg.Wait()
	}
}
