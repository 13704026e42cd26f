package bench

import (
	"context"
	"fmt"
	"runtime"
	"runtime/metrics"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/perpetuity/perpetuity/memory/chain"
	"github.com/perpetuity/perpetuity/memory/store"
)

// ChainResult is section 8: the chain graph's one writer (memory/chain) on
// the bench tenant, first from scratch, then after a restart.
type ChainResult struct {
	Loaded int   // synthetic items the tenant was grown to (its size label)
	Items  int   // items in its log: Loaded and what §2, §3's mempath and §6 captured
	Seq    int64 // the watermark both writers ended at

	// A fresh writer from watermark 0: derive and store every edge.
	Took        time.Duration
	Read, Write time.Duration // in ReadChainBatch and WriteChainEdges; the rest is the rules
	Edges       int           // edges written
	PerSec      float64       // items per second
	// PeakHeap is the Go heap's peak above the baseline during the
	// catch-up; HeapPerItem what the writer holds once it is done (its
	// graph and in-memory edges), per item, after a collection.
	PeakHeap    uint64
	HeapPerItem float64

	// A second fresh writer, the tenant already at its watermark: replay
	// the items into its graph and read the stored edges, over Rounds.
	Rounds                        int
	Restart, RestartLo, RestartHi time.Duration
	RestartRead                   time.Duration // median time in the store's reads
	RestartEdges                  int           // edges read back
	RestartWritten                int           // edges a restart wrote (0: nothing left to derive)
	RestartPerSec                 float64
}

// RestartRatio is a restart's time over the catch-up from scratch.
func (c *ChainResult) RestartRatio() float64 { return float64(c.Restart) / float64(max(1, c.Took)) }

// ChainSettle is the served writer catching up on one growth of the bench
// tenant before §2 is measured at that size (setup, not a figure).
type ChainSettle struct {
	Tenant string // "" for the bench tenant
	Items  int
	Took   time.Duration
	Caught bool // false: it was still behind at the bound and §2 ran beside it
	// Checkpoint is the CHECKPOINT after it (checkpointGrowth); CheckpointErr
	// says why there was none.
	Checkpoint    time.Duration
	CheckpointErr string
}

// chainSettleBound is how long the bench waits for the served writer
// before measuring beside it (a million items are minutes at worst).
const chainSettleBound = 30 * time.Minute

const (
	// The owner may delete under row-level security (owner_all); the
	// application role may not touch chain_heads but through the writer.
	resetChainEdgesSQL = `DELETE FROM chain_edges WHERE tenant_id = $1`
	resetChainHeadSQL  = `DELETE FROM chain_heads WHERE tenant_id = $1`
	// A from-scratch catch-up would otherwise insert among the dead index
	// entries of the deleted edges, which a real first catch-up never sees.
	vacuumChainSQL = `VACUUM (ANALYZE) chain_edges, chain_heads`
	// Autovacuum analyzes a table this much bigger within its naptime, long
	// before a process restarts; without it the planner reads the stored
	// edges as if there were none.
	analyzeChainSQL = `ANALYZE chain_edges, chain_heads`
)

// countingStore is the writer's store, timing and counting what passes
// through it. A writer calls it from one goroutine at a time.
type countingStore struct {
	db                     *store.DB
	read, write            time.Duration
	items, written, loaded int
}

func (s *countingStore) ChainHead(ctx context.Context, tenantID int64) (int64, error) {
	t0 := time.Now()
	defer func() { s.read += time.Since(t0) }()
	return s.db.ChainHead(ctx, tenantID)
}

func (s *countingStore) ReadChainBatch(ctx context.Context, tenantID, after, upto int64) (store.ChainBatch, error) {
	t0 := time.Now()
	cb, err := s.db.ReadChainBatch(ctx, tenantID, after, upto)
	s.read += time.Since(t0)
	s.items += len(cb.Items)
	return cb, err
}

func (s *countingStore) WriteChainEdges(ctx context.Context, tenantID, from, to, seen int64, edges []store.ChainEdge) error {
	t0 := time.Now()
	err := s.db.WriteChainEdges(ctx, tenantID, from, to, seen, edges)
	s.write += time.Since(t0)
	if err == nil {
		s.written += len(edges)
	}
	return err
}

func (s *countingStore) ChainEdges(ctx context.Context, tenantID int64) ([]store.ChainEdgeSized, error) {
	t0 := time.Now()
	es, err := s.db.ChainEdges(ctx, tenantID)
	s.read += time.Since(t0)
	s.loaded += len(es)
	return es, err
}

// heapWatch samples the Go heap (without stopping the world, unlike
// ReadMemStats) until stopped, keeping its peak.
type heapWatch struct {
	done chan struct{}
	wg   sync.WaitGroup
	peak uint64
}

func watchHeap() *heapWatch {
	h := &heapWatch{done: make(chan struct{})}
	s := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	read := func() {
		metrics.Read(s)
		if s[0].Value.Kind() == metrics.KindUint64 {
			h.peak = max(h.peak, s[0].Value.Uint64())
		}
	}
	read()
	h.wg.Go(func() {
		tk := time.NewTicker(20 * time.Millisecond)
		defer tk.Stop()
		for {
			select {
			case <-h.done:
				read()
				return
			case <-tk.C:
				read()
			}
		}
	})
	return h
}

func (h *heapWatch) stop() uint64 {
	close(h.done)
	h.wg.Wait()
	return h.peak
}

// runChain measures the writer on the tenant; nothing else may write its
// chain meanwhile (the server is stopped).
func runChain(ctx context.Context, db *store.DB, k *kit, t *Tenant, cfg Config, lg *logger) (*ChainResult, error) {
	res := &ChainResult{Loaded: t.Items}
	lg.printf("chain %s: resetting the tenant's chain graph", itemsLabel(t.Items))
	if err := resetChain(ctx, db, t.ID); err != nil {
		return nil, err
	}
	if at, err := db.ChainHead(ctx, t.ID); err != nil || at != 0 {
		return nil, fmt.Errorf("chain reset: watermark %d after the reset: %w", at, err)
	}

	lg.printf("chain %s: a fresh writer from watermark 0", itemsLabel(t.Items))
	runtime.GC()
	var m0, m1 runtime.MemStats
	runtime.ReadMemStats(&m0)
	cs := &countingStore{db: db}
	w := chain.NewWriter(cs, k.chainLex, chain.Rules{}, nil)
	hw := watchHeap()
	t0 := time.Now()
	err := w.CatchUp(ctx, t.ID)
	res.Took = time.Since(t0)
	peak := hw.stop()
	if err != nil {
		return nil, fmt.Errorf("chain from scratch: %w", err)
	}
	runtime.GC()
	runtime.ReadMemStats(&m1)
	runtime.KeepAlive(w)
	w = nil
	res.Items, res.Edges, res.Read, res.Write = cs.items, cs.written, cs.read, cs.write
	res.PerSec = float64(cs.items) / res.Took.Seconds()
	res.PeakHeap = peak - min(peak, m0.HeapAlloc)
	res.HeapPerItem = float64(int64(m1.HeapAlloc)-int64(m0.HeapAlloc)) / float64(max(1, cs.items))
	if res.Seq, err = db.ChainHead(ctx, t.ID); err != nil {
		return nil, err
	}
	lg.printf("chain %s: from scratch %d items in %s (%.0fk items/s: read %s, write %s), %d edges, peak heap +%.0f MiB",
		itemsLabel(t.Items), res.Items, res.Took.Round(time.Millisecond), res.PerSec/1000,
		res.Read.Round(time.Millisecond), res.Write.Round(time.Millisecond), res.Edges, float64(res.PeakHeap)/(1<<20))
	if err := ownerExec(ctx, db, analyzeChainSQL); err != nil {
		return nil, err
	}

	var took, read []time.Duration
	for round := range cfg.ColdRounds {
		lg.printf("chain %s: restart round %d/%d", itemsLabel(t.Items), round+1, cfg.ColdRounds)
		runtime.GC()
		cs := &countingStore{db: db}
		w := chain.NewWriter(cs, k.chainLex, chain.Rules{}, nil)
		t0 := time.Now()
		if err := w.CatchUp(ctx, t.ID); err != nil {
			return nil, fmt.Errorf("chain restart: %w", err)
		}
		took, read = append(took, time.Since(t0)), append(read, cs.read)
		res.RestartEdges, res.RestartWritten = cs.loaded, max(res.RestartWritten, cs.written)
	}
	res.Rounds = len(took)
	res.Restart, res.RestartRead = Median(took), Median(read)
	res.RestartLo, res.RestartHi = Span(took)
	res.RestartPerSec = float64(res.Items) / res.Restart.Seconds()
	lg.printf("chain %s: restart (replay only) %s (%.0fk items/s), %d edges read back; restart/from scratch %.2fx",
		itemsLabel(t.Items), res.Restart.Round(time.Millisecond), res.RestartPerSec/1000, res.RestartEdges, res.RestartRatio())
	return res, nil
}

// resetChain deletes the tenant's edges and watermark as the database
// owner, so the next writer starts from scratch.
func resetChain(ctx context.Context, db *store.DB, tenantID int64) error {
	owner, err := pgx.Connect(ctx, db.Pool.Config().ConnString())
	if err != nil {
		return fmt.Errorf("chain reset: connect: %w", err)
	}
	defer owner.Close(context.WithoutCancel(ctx))
	err = pgx.BeginFunc(ctx, owner, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, resetChainEdgesSQL, tenantID); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, resetChainHeadSQL, tenantID)
		return err
	})
	if err != nil {
		return fmt.Errorf("chain reset: %w", err)
	}
	if _, err := owner.Exec(ctx, vacuumChainSQL); err != nil {
		return fmt.Errorf("chain reset: vacuum: %w", err)
	}
	return nil
}

// ownerExec runs one statement as the database owner.
func ownerExec(ctx context.Context, db *store.DB, sql string) error {
	owner, err := pgx.Connect(ctx, db.Pool.Config().ConnString())
	if err != nil {
		return fmt.Errorf("connect as owner: %w", err)
	}
	defer owner.Close(context.WithoutCancel(ctx))
	if _, err := owner.Exec(ctx, sql); err != nil {
		return fmt.Errorf("%s: %w", sql, err)
	}
	return nil
}

// waitChain returns how long the chain writer took to reach the tenant's
// head; caught is false when it had not after bound.
func waitChain(ctx context.Context, db *store.DB, tenantID int64, bound time.Duration) (took time.Duration, caught bool, err error) {
	t0 := time.Now()
	for {
		head, err := db.ReadHead(ctx, tenantID)
		if err != nil {
			return 0, false, err
		}
		at, err := db.ChainHead(ctx, tenantID)
		if err != nil {
			return 0, false, err
		}
		if at >= head.Seq {
			return time.Since(t0), true, nil
		}
		if time.Since(t0) > bound {
			return time.Since(t0), false, nil
		}
		select {
		case <-ctx.Done():
			return 0, false, ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// backgroundWriter is a chain writer running as serve runs it: captures
// kick it and it catches up off their path. Failures are counted (the
// writer retries them).
type backgroundWriter struct {
	w      *chain.Writer
	stop   context.CancelFunc
	done   chan struct{}
	mu     sync.Mutex
	failed int
	last   error
}

func startWriter(ctx context.Context, db *store.DB, k *kit) *backgroundWriter {
	b := &backgroundWriter{done: make(chan struct{})}
	b.w = chain.NewWriter(db, k.chainLex, chain.Rules{}, func(err error) {
		b.mu.Lock()
		b.failed, b.last = b.failed+1, err
		b.mu.Unlock()
	})
	wctx, stop := context.WithCancel(context.WithoutCancel(ctx))
	b.stop = stop
	go func() {
		defer close(b.done)
		b.w.Run(wctx)
	}()
	return b
}

func (b *backgroundWriter) close() (failed int, last error) {
	b.stop()
	<-b.done
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.failed, b.last
}
