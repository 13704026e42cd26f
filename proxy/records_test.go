package proxy

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/perpetuity/perpetuity/memory/store"
)

// batchStore is a record writer that keeps each batch it was handed,
// refusing (as the database would, a whole batch) any holding a record
// named in refuse, and failing every write when down.
type batchStore struct {
	mu      sync.Mutex
	batches [][]string
	refuse  string
	down    bool
	panics  string // a batch holding this record panics in the write
}

func (s *batchStore) write(_ context.Context, recs []store.RequestRecord) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	ids := make([]string, len(recs))
	for i, r := range recs {
		ids[i] = r.RequestID
	}
	if s.panics != "" && slices.Contains(ids, s.panics) {
		s.batches = append(s.batches, nil)
		var codes map[string]string
		codes["record"] = s.panics // a nil map: a runtime error, as a bug would be
	}
	if s.down {
		s.batches = append(s.batches, nil)
		return errors.New("dial tcp: connection refused")
	}
	if s.refuse != "" && slices.Contains(ids, s.refuse) {
		s.batches = append(s.batches, nil)
		return &pgconn.PgError{Code: "23503", Message: "violates foreign key constraint"}
	}
	s.batches = append(s.batches, ids)
	return nil
}

func (s *batchStore) written() [][]string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.batches)
}

func records(prefix string, n int) []store.RequestRecord {
	out := make([]store.RequestRecord, n)
	for i := range out {
		out[i] = store.RequestRecord{TenantID: 1, RequestID: prefix + strconv.Itoa(i)}
	}
	return out
}

// TestRecordBatcher: records wait for their batch's time or its size,
// whichever comes first, and are written in order, once; a shutdown
// writes what waits; one that quotes memory does not wait; a record the database refuses costs only itself;
// a database that is gone is not asked again per record.
func TestRecordBatcher(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		run  func(t *testing.T, w *recordBatcher, s *batchStore, wg *sync.WaitGroup)
		want [][]string
		logs int // "record request failed" lines
	}{{
		name: "a batch is written once its time is up",
		run: func(t *testing.T, w *recordBatcher, s *batchStore, wg *sync.WaitGroup) {
			w.wait = 300 * time.Millisecond // long enough to look before it is up
			for _, r := range records("r", 3) {
				w.add(r)
			}
			if got := s.written(); len(got) != 0 {
				t.Errorf("written before the batch's time: %v", got)
			}
			wg.Wait()
		},
		want: [][]string{{"r0", "r1", "r2"}},
	}, {
		name: "a full batch is written at once, the rest at shutdown",
		run: func(t *testing.T, w *recordBatcher, s *batchStore, wg *sync.WaitGroup) {
			w.wait = time.Hour
			for _, r := range records("r", 5) {
				w.add(r)
			}
			if got := s.written(); len(got) != 1 {
				t.Errorf("after a full batch and one more, %d batches written, want 1", len(got))
			}
			w.flushNow()
			wg.Wait()
		},
		want: [][]string{{"r0", "r1", "r2", "r3"}, {"r4"}},
	}, {
		name: "a record quoting memory is written at once, alone",
		run: func(t *testing.T, w *recordBatcher, s *batchStore, wg *sync.WaitGroup) {
			w.wait = time.Hour
			for _, r := range records("r", 2) {
				w.add(r)
			}
			w.add(store.RequestRecord{TenantID: 1, RequestID: "quoting", Inspection: &store.Inspection{Question: "q"}})
			if got := s.written(); len(got) != 1 {
				t.Errorf("after the quoting record, %d batches written, want it alone", len(got))
			}
			w.flushNow()
			wg.Wait()
		},
		want: [][]string{{"quoting"}, {"r0", "r1"}},
	}, {
		name: "a refused record costs only itself",
		run: func(t *testing.T, w *recordBatcher, s *batchStore, wg *sync.WaitGroup) {
			s.refuse = "r1"
			for _, r := range records("r", 3) {
				w.add(r)
			}
			w.flushNow()
			wg.Wait()
		},
		want: [][]string{nil, {"r0"}, nil, {"r2"}},
		logs: 1,
	}, {
		name: "a database gone is asked once",
		run: func(t *testing.T, w *recordBatcher, s *batchStore, wg *sync.WaitGroup) {
			s.down = true
			for _, r := range records("r", 3) {
				w.add(r)
			}
			w.flushNow()
			wg.Wait()
		},
		want: [][]string{nil},
		logs: 1,
	}, {
		name: "a write that panics fails its batch, not the process",
		run: func(t *testing.T, w *recordBatcher, s *batchStore, wg *sync.WaitGroup) {
			s.panics = "r1"
			for _, r := range records("r", 3) {
				w.add(r)
			}
			wg.Wait() // written on the batch timer's goroutine
			w.add(store.RequestRecord{TenantID: 1, RequestID: "after"})
			w.flushNow()
			wg.Wait()
		},
		want: [][]string{nil, {"after"}},
		logs: 1,
	}} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s := &batchStore{}
			var wg sync.WaitGroup
			var logs bytes.Buffer
			w := newRecordBatcher(s.write, &wg, time.Second, slog.New(slog.NewTextHandler(&logs, nil)))
			w.wait, w.max = 20*time.Millisecond, 4
			tc.run(t, w, s, &wg)
			if got := s.written(); !slices.EqualFunc(got, tc.want, slices.Equal) {
				t.Errorf("batches written %q, want %q", got, tc.want)
			}
			if got := strings.Count(logs.String(), "record request failed"); got != tc.logs {
				t.Errorf("%d failures logged, want %d:\n%s", got, tc.logs, logs.String())
			}
		})
	}
}
