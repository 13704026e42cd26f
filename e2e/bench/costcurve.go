package bench

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/perpetuity/perpetuity/memory/arena/synth"
)

// CostCurve is section 2b: what memory costs as the tenant grows. At each
// of Config.CostSizes the bench tenant (the one §2 grows) is measured by
// the memory path, the resident arena of that path's engine, and the full
// pipeline's throughput in a closed loop at each concurrency.
type CostCurve struct {
	Step        time.Duration // per concurrency per round
	Rounds      int
	Concurrency []int
	Points      []CostPoint
}

// CostPoint is the cost curve at one tenant size.
type CostPoint struct {
	Items int
	// Mem is the memory path's turn (capture + frame); FromMemPath is set
	// when it is §2's measurement of this size rather than one of its own.
	Mem         Rounds
	FromMemPath bool
	// ArenaBytes is the memory path engine's resident arena after its
	// turns, holding ArenaItems (the loaded items and what the bench
	// captured before).
	ArenaBytes int64
	ArenaItems int
	Throughput []ConcPoint // in the order of CostCurve.Concurrency
}

// BytesPerItem is the arena's size per item it holds.
func (p CostPoint) BytesPerItem() float64 {
	return float64(p.ArenaBytes) / float64(max(1, p.ArenaItems))
}

// ConcPoint is the full pipeline at one concurrency: Concurrency clients,
// each sending its next request when its last one returned.
type ConcPoint struct {
	Concurrency int
	Rate        float64 // completed requests per second, median over rounds
	RateLo      float64 // the slowest round's
	RateHi      float64 // the fastest round's
	Latency     Rounds
	Requests    int // completed, over all rounds
	Failed      int
	FirstError  string // of the failed requests
}

// sized reports whether a section measured at Config.Sizes runs, so the
// bench tenant grows through them.
func (c Config) sized() bool {
	return c.has(SecPipeline) || c.has(SecMemPath) || c.has(SecCold) || c.has(SecThroughput) || c.has(SecChain)
}

// growthPlan is the sizes the bench tenant grows through, in order: those
// of cfg.Sizes that a section measures and the cost curve's. Cost sizes
// beyond the largest of cfg.Sizes come later, after §8, which measures
// the tenant at the largest of cfg.Sizes and would otherwise measure it
// larger than the run without the cost curve did.
func growthPlan(cfg Config) (now, later []int) {
	var base []int
	if cfg.sized() {
		base = cfg.Sizes
	}
	var cost []int
	if cfg.has(SecCost) {
		cost = cfg.CostSizes
	}
	limit := int(^uint(0) >> 1)
	if cfg.has(SecChain) && len(base) > 0 {
		limit = slices.Max(base)
	}
	now = slices.Clone(base)
	for _, n := range cost {
		if n > limit {
			later = append(later, n)
		} else {
			now = append(now, n)
		}
	}
	slices.Sort(now)
	slices.Sort(later)
	return slices.Compact(now), slices.Compact(later)
}

// costQuestions are the questions of a size only the cost curve measures,
// from a generator of their own: drawing them from the corpus's would
// change the questions every later size of §2 asks.
func (r *runner) costQuestions(n int) liveRequests {
	if r.costGen == nil {
		r.costGen = synth.New(synth.Config{Seed: r.cfg.Seed, Users: 10, Vocab: SynthVocab})
	}
	return newLiveRequests(r.k.vocab, r.costGen.Queries(r.corpus[:n], r.cfg.questions(), 3, 8))
}

// costPoint measures the cost curve at the bench tenant's current size n,
// after every other section of that size.
func (r *runner) costPoint(ctx context.Context, n int, lr liveRequests) (CostPoint, error) {
	cfg, rep := r.cfg, r.rep
	p := CostPoint{Items: n}
	if k := len(rep.MemPath) - 1; k >= 0 && rep.MemPath[k].Items == n {
		p.Mem, p.FromMemPath = rep.MemPath[k].Total, true
	} else {
		ps, err := runMemPaths(ctx, []memSide{{r.mp, r.bt}}, r.k, lr, r.bodies(n), cfg, r.lg)
		if err != nil {
			return p, fmt.Errorf("cost curve: %w", err)
		}
		p.Mem = ps[0].Total
	}
	rs := r.mp.eng.Resident()
	p.ArenaBytes, p.ArenaItems = rs.Bytes, rs.Items
	if !r.settledAt(n) {
		// Nothing kicked the served chain writer since the growth: one
		// request does, and the catch-up finishes before the measurement.
		if _, err := r.rg.pipelineCaller(r.bt, lr)(ctx, 1, 0); err != nil {
			return p, fmt.Errorf("cost curve: first request: %w", err)
		}
		if err := r.settleChain(ctx, r.bt, "", n); err != nil {
			return p, err
		}
	}
	var err error
	p.Throughput, err = runCostThroughput(ctx, r.rg, r.bt, lr, cfg, r.lg)
	return p, err
}

func (r *runner) settledAt(n int) bool {
	return slices.ContainsFunc(r.rep.ChainSettles, func(s ChainSettle) bool { return s.Tenant == "" && s.Items == n })
}

// runCostThroughput runs the full pipeline in a closed loop at each of
// cfg.CostConcurrency for cfg.CostStep, in cfg.Rounds rounds, the
// concurrencies in turn within each round.
func runCostThroughput(ctx context.Context, r *rig, t *Tenant, lr liveRequests, cfg Config, lg *logger) ([]ConcPoint, error) {
	call := r.pipelineCaller(t, lr)
	var next atomic.Int64
	next.Store(300_000) // past the questions the other sections asked
	one := func(ctx context.Context) error {
		_, err := call(ctx, 1, int(next.Add(1)))
		return err
	}
	top := slices.Max(cfg.CostConcurrency)
	closedLoop(ctx, top, cfg.CostStep/2, one) // warm-up
	out := make([]ConcPoint, len(cfg.CostConcurrency))
	rates := make([][]float64, len(out))
	lats := make([][][]time.Duration, len(out))
	for round := range cfg.Rounds {
		lg.printf("cost curve %s: throughput round %d/%d", itemsLabel(t.Items), round+1, cfg.Rounds)
		for j, c := range cfg.CostConcurrency {
			cl := closedLoop(ctx, c, cfg.CostStep, one)
			if err := ctx.Err(); err != nil {
				return nil, err
			}
			out[j].Concurrency = c
			out[j].Requests += len(cl.lat)
			out[j].Failed += cl.failed
			if out[j].FirstError == "" && cl.err != nil {
				out[j].FirstError = cl.err.Error()
			}
			rates[j] = append(rates[j], float64(len(cl.lat))/cl.took.Seconds())
			lats[j] = append(lats[j], cl.lat)
			time.Sleep(cfg.CostStep / 4) // let replies' captures and records drain
		}
	}
	for j := range out {
		out[j].Rate = Median(rates[j])
		out[j].RateLo, out[j].RateHi = Span(rates[j])
		out[j].Latency = Fold(lats[j])
	}
	return out, nil
}

// closedLoopResult is one closed-loop step.
type closedLoopResult struct {
	lat    []time.Duration // of the completed requests
	failed int
	err    error // the first failure
	took   time.Duration
}

// closedLoop runs c clients for d, each sending its next request as soon
// as its last one returned; the step ends when the last request sent
// before d is over.
func closedLoop(ctx context.Context, c int, d time.Duration, call func(ctx context.Context) error) closedLoopResult {
	var res closedLoopResult
	var mu sync.Mutex
	var wg sync.WaitGroup
	start := time.Now()
	for range c {
		wg.Go(func() {
			for time.Since(start) < d && ctx.Err() == nil {
				t0 := time.Now()
				err := call(ctx)
				took := time.Since(t0)
				mu.Lock()
				if err != nil {
					res.failed++
					if res.err == nil {
						res.err = err
					}
				} else {
					res.lat = append(res.lat, took)
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	res.took = time.Since(start)
	return res
}
