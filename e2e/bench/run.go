package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/perpetuity/perpetuity/memory/arena"
	"github.com/perpetuity/perpetuity/memory/arena/synth"
	"github.com/perpetuity/perpetuity/memory/store"
)

// Env is what the caller provides.
type Env struct {
	// DatabaseURL is a PostgreSQL the bench may use. The bench works in a
	// scratch database it creates next to it (and drops) when it may, else
	// in scratch tenants of this one.
	DatabaseURL string
	// Start runs the real server in-process.
	Start StartFunc
	// Recall runs the LoCoMo eval; nil skips section 7.
	Recall RecallFunc
	// Log receives progress lines (nil: none).
	Log io.Writer
}

type logger struct {
	w     io.Writer
	start time.Time
}

func (l *logger) printf(format string, args ...any) {
	if l.w == nil {
		return
	}
	fmt.Fprintf(l.w, "bench %6.1fs  %s\n", time.Since(l.start).Seconds(), fmt.Sprintf(format, args...))
}

// Run measures the configured sections and returns the report; on an
// error the report holds what was measured before it.
func Run(ctx context.Context, env Env, cfg Config) (*Report, error) {
	r := &runner{env: env, cfg: cfg, lg: &logger{w: env.Log, start: time.Now()}, rep: &Report{Config: cfg}}
	dbURL, drop, scratch, note, err := scratchDatabase(ctx, env.DatabaseURL)
	if err != nil {
		return nil, err
	}
	defer drop()
	r.dbURL, r.rep.Database = dbURL, note
	r.lg.printf("database: %s", note)
	if r.db, err = store.Open(ctx, dbURL); err != nil {
		return nil, err
	}
	defer r.db.Close()
	if !scratch {
		defer r.removeTenants(ctx)
	}
	r.rep.Machine = describeMachine(ctx, r.db)
	err = r.run(ctx)
	r.rep.Took = time.Since(r.lg.start)
	r.lg.printf("done")
	return r.rep, err
}

// runner is one run's state.
type runner struct {
	env     Env
	cfg     Config
	lg      *logger
	rep     *Report
	dbURL   string
	db      *store.DB
	k       *kit
	rg      *rig
	bt      *Tenant // the tenant that grows through cfg.Sizes
	tenants []*Tenant
	g       *synth.Generator
	corpus  []arena.Item
	// loader and mp grow and measure the bench tenant across the growths
	// (mp's engine catches up as a serving process's does); costGen draws
	// the questions of the sizes only the cost curve measures.
	loader  *Loader
	mp      *memPath
	costGen *synth.Generator
}

// newTenant creates a scratch tenant on v1, the lexical baseline the v3
// rows are measured beside.
func (r *runner) newTenant(ctx context.Context, name string, users int) (*Tenant, error) {
	return r.newTenantOn(ctx, name, users, 1)
}

// newTenantOn creates a scratch tenant on a dictionary version (0: the
// default new tenants start on).
func (r *runner) newTenantOn(ctx context.Context, name string, users, version int) (*Tenant, error) {
	t, err := NewTenantOn(ctx, r.db, name+" "+time.Now().UTC().Format(time.RFC3339), users, version)
	if err == nil {
		r.tenants = append(r.tenants, t)
	}
	return t, err
}

// removeTenants cleans up after a run in a database that is not the
// bench's own.
func (r *runner) removeTenants(ctx context.Context) {
	for _, t := range r.tenants {
		dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Minute)
		if err := r.db.DeleteTenant(dctx, t.ID); err != nil {
			r.lg.printf("could not remove scratch tenant %d: %v", t.ID, err)
		}
		cancel()
	}
}

func (r *runner) run(ctx context.Context) error {
	cfg, rep := r.cfg, r.rep
	var err error
	if r.bt, err = r.newTenant(ctx, "bench", 10); err != nil {
		return err
	}
	if r.k, err = newKit(ctx, r.db, r.bt.Dict); err != nil {
		return err
	}
	if cfg.has(SecProxy) || cfg.has(SecPipeline) || cfg.has(SecThroughput) || cfg.has(SecCost) {
		if r.env.Start == nil {
			return errors.New("bench: no way to start the server (Env.Start)")
		}
		if r.rg, err = startRig(ctx, r.env.Start, r.dbURL, cfg.Chunks, cfg.ChunkDelay); err != nil {
			return err
		}
		defer r.closeRig()
	}
	if cfg.has(SecProxy) {
		if rep.Pass, err = runPassThrough(ctx, r.rg, r.db, r.bt, cfg, r.lg); err != nil {
			return err
		}
	}
	if cfg.has(SecCapture) {
		ct, err := r.newTenant(ctx, "bench capture", 1)
		if err != nil {
			return err
		}
		if rep.Capture, err = runCapture(ctx, r.db, r.dbURL, r.k, ct, cfg, r.lg); err != nil {
			return err
		}
	}
	now, later := growthPlan(cfg)
	maxSize := 0
	if all := append(slices.Clone(now), later...); len(all) > 0 {
		maxSize = slices.Max(all)
	}
	if cfg.has(SecScan) {
		maxSize = max(maxSize, slices.Max(cfg.ScanSizes))
	}
	if maxSize > 0 {
		r.lg.printf("corpus: generating %s synthetic items", itemsLabel(maxSize))
		r.g = synth.New(synth.Config{Seed: cfg.Seed, Items: maxSize, Users: 10, Vocab: SynthVocab})
		r.corpus = r.g.Corpus()
	}
	defer func() {
		if r.mp != nil {
			r.mp.close()
		}
	}()
	if len(now) > 0 {
		if err := r.grow(ctx, now); err != nil {
			return err
		}
	}
	if len(later) == 0 && r.mp != nil {
		// Its arena would otherwise share the heap with the scan and §8.
		r.mp.close()
		r.mp = nil
	}
	// The server and its resident arenas go before the in-process scan and
	// the eval, which would otherwise share the heap and the cores with them.
	r.closeRig()
	runtime.GC()
	if cfg.has(SecScan) {
		if rep.Scan, err = runScan(ctx, r.k, r.g, r.corpus, cfg.ScanSizes, cfg, r.lg); err != nil {
			return err
		}
	}
	if len(later) == 0 {
		r.corpus = nil
	}
	if cfg.has(SecChain) {
		// After the server stopped: its writer would race this one for the
		// tenant's watermark. The corpus is gone (but for the cost curve's
		// later sizes, which only smaller runs have), so the heap is the writer's.
		runtime.GC()
		if rep.Chain, err = runChain(ctx, r.db, r.k, r.bt, cfg, r.lg); err != nil {
			return err
		}
	}
	if len(later) > 0 {
		// The cost curve's sizes past §8's: a server again, on the tenant
		// as §8 left it.
		if r.rg, err = startRig(ctx, r.env.Start, r.dbURL, cfg.Chunks, cfg.ChunkDelay); err != nil {
			return err
		}
		if err := r.grow(ctx, later); err != nil {
			return err
		}
		r.closeRig()
		r.corpus = nil
	}
	if cfg.has(SecRecall) {
		switch {
		case r.env.Recall == nil:
			rep.Skipped = append(rep.Skipped, "7. recall: no eval wired in")
		case cfg.LocomoFile == "":
			rep.Skipped = append(rep.Skipped, "7. recall: no LoCoMo file given (--locomo)")
		default:
			// A database of its own: the eval's figures do not depend on
			// timing, but its captures slow down next to a million-item
			// tenant (see the notes), and it need not wait for that.
			dbURL, drop, _, _, err := scratchDatabase(ctx, r.env.DatabaseURL)
			if err != nil {
				return err
			}
			defer drop()
			if rep.Recall, err = runRecall(ctx, r.env.Recall, dbURL, cfg.LocomoFile, r.lg); err != nil {
				return err
			}
		}
	}
	return nil
}

// grow loads the bench tenant through sizes (in order, past its current
// size) and measures sections 2, 5 and 6 at those of cfg.Sizes and the
// cost curve at those of cfg.CostSizes; at cfg.DenseSizes a second tenant
// with the same items on dictionary v3 is grown and measured beside it,
// and after the first growth the pooled tenant's memory path.
func (r *runner) grow(ctx context.Context, sizes []int) error {
	cfg, rep, bt := r.cfg, r.rep, r.bt
	if r.loader == nil {
		r.loader = NewLoader(r.db, r.k.vocab, r.k.counter.Count)
		r.loader.Dictionary(r.k.dense)
	}
	loader := r.loader
	var err error
	if r.mp == nil {
		if r.mp, err = newMemPath(ctx, r.k, r.dbURL); err != nil {
			return err
		}
	}
	mp := r.mp
	var t3 *Tenant // the same items on v3, created at the first dense size
	var mp3 *memPath
	defer func() {
		if mp3 != nil {
			mp3.close()
		}
	}()
	for _, n := range sizes {
		r.lg.printf("load: growing the tenant to %s items", itemsLabel(n))
		t0, before := time.Now(), bt.Items
		if err := loader.Load(ctx, bt, r.corpus[bt.Items:n]); err != nil {
			return err
		}
		rep.Loads = append(rep.Loads, LoadFigure{Items: n, Added: n - before, Took: time.Since(t0)})
		atSize := cfg.sized() && slices.Contains(cfg.Sizes, n)
		if !atSize {
			if err := r.costAt(ctx, n, r.costQuestions(n)); err != nil {
				return err
			}
			continue
		}
		dense := slices.Contains(cfg.DenseSizes, n) && (cfg.has(SecMemPath) || cfg.has(SecCold) || cfg.has(SecPipeline))
		if dense {
			if t3 == nil {
				if t3, err = r.newTenantOn(ctx, "bench v3", len(bt.Users), r.k.dense.D.Version); err != nil {
					return err
				}
				if mp3, err = newMemPath(ctx, r.k, r.dbURL); err != nil {
					return err
				}
			}
			r.lg.printf("load: growing the v3 tenant to %s items", itemsLabel(n))
			t0, before := time.Now(), t3.Items
			if err := loader.Load(ctx, t3, r.corpus[t3.Items:n]); err != nil {
				return err
			}
			rep.Loads = append(rep.Loads, LoadFigure{Tenant: "v3 tenant", Items: n, Added: n - before, Took: time.Since(t0)})
		}
		lr := newLiveRequests(r.k.vocab, r.g.Queries(r.corpus[:n], cfg.questions(), 3, 8))
		if cfg.has(SecCold) {
			c, err := runColdStart(ctx, r.db, r.k, bt, lr.text[0], cfg, r.lg)
			if err != nil {
				return err
			}
			rep.Cold = append(rep.Cold, *c)
			if dense {
				c, err := runColdStart(ctx, r.db, r.k, t3, lr.text[0], cfg, r.lg)
				if err != nil {
					return err
				}
				rep.ColdV3 = append(rep.ColdV3, *c)
			}
		}
		if cfg.has(SecPipeline) {
			sides := []pipeSide{{t: bt, settle: func(ctx context.Context) error { return r.settleChain(ctx, bt, "", n) }}}
			if dense {
				sides = append(sides, pipeSide{t: t3, label: "v3", settle: func(ctx context.Context) error { return r.settleChain(ctx, t3, "v3 tenant", n) }},
					pipeSide{t: t3, label: "v3, provider 20 ms", model: thinkingModel, ask: len(lr.text) / 2})
			}
			ps, err := runPipelines(ctx, r.rg, sides, lr, cfg, r.lg)
			if err != nil {
				return err
			}
			rep.Pipeline = append(rep.Pipeline, ps[0])
			if dense {
				rep.PipelineV3 = append(rep.PipelineV3, ps[1])
				rep.PipelineV3Thinking = append(rep.PipelineV3Thinking, ps[2])
			}
		}
		if cfg.has(SecMemPath) {
			sides := []memSide{{mp, bt}}
			if dense {
				sides = append(sides, memSide{mp3, t3})
			}
			ps, err := runMemPaths(ctx, sides, r.k, lr, r.bodies(n), cfg, r.lg)
			if err != nil {
				return err
			}
			rep.MemPath = append(rep.MemPath, ps[0])
			if dense {
				rep.MemPathV3 = append(rep.MemPathV3, ps[1])
			}
		}
		if cfg.has(SecThroughput) && n == cfg.ThroughputSize {
			if !cfg.has(SecPipeline) {
				// Nothing kicked the served writer since the growth: one request does.
				if _, err := r.rg.pipelineCaller(bt, lr)(ctx, 1, 0); err != nil {
					return fmt.Errorf("throughput: first request: %w", err)
				}
				if err := r.settleChain(ctx, bt, "", n); err != nil {
					return err
				}
			}
			if rep.Throughput, err = runThroughput(ctx, r.rg, bt, lr, cfg, r.lg); err != nil {
				return err
			}
		}
		if err := r.costAt(ctx, n, lr); err != nil {
			return err
		}
	}
	// After the first growth (the one through cfg.Sizes), with its engines
	// still open.
	if cfg.has(SecMemPath) && cfg.PoolUsers > 0 && rep.Pooled == nil {
		if rep.Pooled, err = r.pooled(ctx, loader); err != nil {
			return err
		}
	}
	return nil
}

// costAt measures the cost curve at size n when it is one of its sizes.
func (r *runner) costAt(ctx context.Context, n int, lr liveRequests) error {
	if !r.cfg.has(SecCost) || !slices.Contains(r.cfg.CostSizes, n) {
		return nil
	}
	if r.rep.Cost == nil {
		r.rep.Cost = &CostCurve{Step: r.cfg.CostStep, Rounds: r.cfg.Rounds, Concurrency: r.cfg.CostConcurrency}
	}
	p, err := r.costPoint(ctx, n, lr)
	if err != nil {
		return err
	}
	r.rep.Cost.Points = append(r.rep.Cost.Points, p)
	return nil
}

// pooled measures the memory path of one tenant where cfg.PoolUsers users
// hold cfg.PoolItems items, on v1 and (a second tenant, same items) on v3.
func (r *runner) pooled(ctx context.Context, loader *Loader) (*PooledResult, error) {
	cfg := r.cfg
	r.lg.printf("pooled: generating %s items of %d users", itemsLabel(cfg.PoolItems), cfg.PoolUsers)
	g := synth.New(synth.Config{Seed: cfg.Seed + 1, Items: cfg.PoolItems, Users: cfg.PoolUsers, Vocab: SynthVocab})
	corpus := g.Corpus()
	var sides []memSide
	defer func() {
		for _, s := range sides {
			s.mp.close()
		}
	}()
	for _, v := range []int{r.k.dict.Version, r.k.dense.D.Version} {
		r.lg.printf("pooled: loading the v%d tenant", v)
		t, err := r.newTenantOn(ctx, fmt.Sprintf("bench pooled v%d", v), cfg.PoolUsers, v)
		if err != nil {
			return nil, err
		}
		t0 := time.Now()
		if err := loader.Load(ctx, t, corpus); err != nil {
			return nil, err
		}
		r.rep.Loads = append(r.rep.Loads, LoadFigure{Tenant: fmt.Sprintf("pooled tenant v%d (%d users)", v, cfg.PoolUsers),
			Items: len(corpus), Added: len(corpus), Took: time.Since(t0)})
		mp, err := newMemPath(ctx, r.k, r.dbURL)
		if err != nil {
			return nil, err
		}
		sides = append(sides, memSide{mp, t})
	}
	qs := g.Queries(corpus, cfg.questions(), 3, 8)
	owned := map[int64]int{}
	for i := range corpus {
		owned[corpus[i].User]++
	}
	visible := 0
	for _, q := range qs {
		visible += owned[q.Users[0]]
	}
	ps, err := runMemPaths(ctx, sides, r.k, newLiveRequests(r.k.vocab, qs), bodiesOf(r.k.vocab, corpus), cfg, r.lg)
	if err != nil {
		return nil, err
	}
	return &PooledResult{Users: cfg.PoolUsers, Items: len(corpus), Visible: float64(visible) / float64(max(1, len(qs))),
		V1: ps[0], V3: ps[1]}, nil
}

// settleChain waits for the served chain writer, kicked by a request since
// the tenant grew, to derive the growth's edges: in serving a capture's
// edges follow it within moments, as if the loaded items had been
// captured, and a catch-up of a million items would otherwise run beside
// the measurement.
func (r *runner) settleChain(ctx context.Context, t *Tenant, tenant string, n int) error {
	r.lg.printf("chain: waiting for the served writer to catch up on %s items", strings.TrimSpace(itemsLabel(n)+" "+tenant))
	took, caught, err := waitChain(ctx, r.db, t.ID, chainSettleBound)
	if err != nil {
		return fmt.Errorf("chain settle: %w", err)
	}
	if !caught {
		r.lg.printf("chain: the served writer is still behind after %s; measuring beside it", took.Round(time.Second))
	}
	cs := ChainSettle{Tenant: tenant, Items: n, Took: took, Caught: caught}
	cs.Checkpoint, err = checkpointGrowth(ctx, r.dbURL)
	if err != nil {
		cs.CheckpointErr = err.Error()
		r.lg.printf("checkpoint: %v; measuring without one", err)
	}
	r.rep.ChainSettles = append(r.rep.ChainSettles, cs)
	return nil
}

// checkpointGrowth has PostgreSQL write out what a growth dirtied before
// §2 measures. A growth writes hundreds of MB of WAL in seconds (the COPY,
// then the chain's edges), which a tenant's captures never do, and that
// WAL's checkpoint started mid-load and ran through the measured rounds
// (log_checkpoints, quick mode at 250k: a 29 s checkpoint over the whole
// of §2): its writes and the full-page images every first change of a
// page after it carries are the growth's cost, not a turn's. Checkpoints
// on their own schedule still come during the run, as in serving.
// It connects as the URL's own role: the store's connections take the
// serving role, which may not.
func checkpointGrowth(ctx context.Context, dbURL string) (time.Duration, error) {
	conn, err := pgx.Connect(ctx, dbURL)
	if err != nil {
		return 0, fmt.Errorf("connect: %w", err)
	}
	defer conn.Close(context.WithoutCancel(ctx))
	t0 := time.Now()
	if _, err := conn.Exec(ctx, `CHECKPOINT`); err != nil {
		return 0, fmt.Errorf("CHECKPOINT (it needs a superuser or pg_checkpoint): %w", err)
	}
	return time.Since(t0), nil
}

func (r *runner) closeRig() {
	if r.rg != nil {
		r.rg.close()
		r.rg = nil
	}
}

// bodies are up to FrameCandidates stored bodies spread over the first n
// items.
func (r *runner) bodies(n int) []string { return bodiesOf(r.k.vocab, r.corpus[:n]) }

func bodiesOf(v *Vocabulary, items []arena.Item) []string {
	n := len(items)
	out := make([]string, 0, FrameCandidates)
	for i := 0; i < n && len(out) < FrameCandidates; i += max(1, n/FrameCandidates) {
		out = append(out, Text(v.Tokens(&items[i])))
	}
	return out
}
