package proxy

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/perpetuity/perpetuity/memory/guard"
	"github.com/perpetuity/perpetuity/memory/store"
)

// Request records are written in batches: one transaction for each
// recordWait, or sooner once recordBatchMax are waiting. Written each on
// its own, a record was a transaction beside the next request's work on
// the same two cores and pool: that was the pass-through's tail. Batched,
// its added p99 at concurrency 1 went from 1.06-1.47 ms to 0.28-0.75 and
// its p50 at concurrency 64 from 6.5-8.1 ms to 5.5-6.3 (`bench proxy
// --mode quick`, three runs each, alternated). A record reaches the
// console at most recordWait later, with the time its request ended; a
// process killed loses the batch waiting (a request's figures, never
// its turns: those are captured before and after the reply).
//
// A record that keeps the inspector's copy of a frame is written at once,
// alone, as before: a purge or redaction removes the records that quote
// what it erases, and one written 250 ms after the reply could come in
// after such a purge and keep the text. The full pipeline, whose records
// these are, did not move when they were batched (the database's CPU per
// record is the cost, not its transaction).
const (
	recordWait     = 250 * time.Millisecond
	recordBatchMax = 256
)

// recordBatcher gathers request records and writes them in batches.
type recordBatcher struct {
	write func(ctx context.Context, recs []store.RequestRecord) error
	log   *slog.Logger
	// track counts a batch from its first record until it is written, so
	// the proxy's Drain waits for it.
	track   *sync.WaitGroup
	timeout time.Duration
	// wait and max are recordWait and recordBatchMax but in tests.
	wait time.Duration
	max  int

	mu      sync.Mutex
	pending []store.RequestRecord
	gen     uint64 // which batch pending is; a timer armed for an earlier one does nothing
	timer   *time.Timer
}

func newRecordBatcher(write func(context.Context, []store.RequestRecord) error, track *sync.WaitGroup, timeout time.Duration, log *slog.Logger) *recordBatcher {
	return &recordBatcher{write: write, track: track, timeout: timeout, log: log, wait: recordWait, max: recordBatchMax}
}

// add queues r; the caller's goroutine (one the proxy's Drain waits for)
// writes the batch when r fills it, and r alone when it quotes memory.
func (w *recordBatcher) add(r store.RequestRecord) {
	if r.Inspection != nil {
		w.writeBatch([]store.RequestRecord{r})
		return
	}
	w.mu.Lock()
	w.pending = append(w.pending, r)
	gen := w.gen
	if len(w.pending) == 1 {
		w.track.Add(1)
		w.timer = time.AfterFunc(w.wait, func() { w.flush(gen) })
	}
	full := len(w.pending) >= w.max
	w.mu.Unlock()
	if full {
		w.flush(gen)
	}
}

// flushNow writes what is waiting, for a shutdown.
func (w *recordBatcher) flushNow() {
	w.mu.Lock()
	gen := w.gen
	w.mu.Unlock()
	w.flush(gen)
}

// flush writes batch gen if it is still the one waiting.
func (w *recordBatcher) flush(gen uint64) {
	w.mu.Lock()
	if gen != w.gen || len(w.pending) == 0 {
		w.mu.Unlock()
		return
	}
	batch := w.pending
	w.pending, w.gen = nil, w.gen+1
	w.timer.Stop()
	w.mu.Unlock()
	defer w.track.Done()
	w.writeBatch(batch)
}

// writeBatch writes batch, and its records one by one when the database
// refused one of them.
func (w *recordBatcher) writeBatch(batch []store.RequestRecord) {
	ctx, cancel := context.WithTimeout(context.Background(), w.timeout)
	defer cancel()
	// It runs on a timer's goroutine or after a reply: a panic is this
	// batch's failure, not the process's end.
	err := guard.Run(func() error { return w.write(ctx, batch) })
	var pe *pgconn.PgError
	if err == nil || len(batch) == 1 || !errors.As(err, &pe) {
		if err != nil {
			w.log.Warn("record request failed", "requests", len(batch), "request_id", batch[0].RequestID, "err", err)
		}
		return
	}
	// One record the database refused (its tenant deleted meanwhile, say)
	// failed the batch: the others are written each on its own.
	for _, r := range batch {
		if err := guard.Run(func() error { return w.write(ctx, []store.RequestRecord{r}) }); err != nil {
			w.log.Warn("record request failed", "request_id", r.RequestID, "err", err)
		}
	}
}
