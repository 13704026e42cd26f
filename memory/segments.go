package memory

import (
	"context"
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
// runs at a time in a process (background.go); processes exclude each
// other in the database, and the segments written are the same whoever
// writes them.
type segmentWriter struct {
	st   SegmentStore
	size int // rows a segment holds, at least
	jobs *tenantJobs
}

// segmentTimeout bounds a write.
const segmentTimeout = 5 * time.Minute

func newSegmentWriter(st SegmentStore, size int, errs func(error)) *segmentWriter {
	return &segmentWriter{st: st, size: size, jobs: newTenantJobs(segmentTimeout, errs)}
}

// loaded is told of every cold load: cu is its whole read, complete up to
// its head under dictVersion.
func (w *segmentWriter) loaded(tenantID int64, dictVersion int, cu store.CatchUp) {
	if w == nil || len(cu.Items)-store.RowsUpTo(cu.Items, cu.Segmented) < w.size {
		return
	}
	w.jobs.start(tenantID, func(ctx context.Context) error {
		segs := store.CutSegments(cu.Items, cu.Segmented, cu.Head.Seq, w.size)
		if len(segs) == 0 {
			return nil
		}
		_, err := w.st.WriteSegments(ctx, tenantID, dictVersion, cu.Head.Seq, segs)
		return err
	})
}

// wait blocks until every write started has ended.
func (w *segmentWriter) wait() {
	if w != nil {
		w.jobs.wait()
	}
}
