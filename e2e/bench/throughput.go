package bench

import (
	"context"
	"fmt"
	"math"
	"time"

	"github.com/perpetuity/perpetuity/proxy"
)

// RatePoint is one offered rate held for a step.
type RatePoint struct {
	Rate   float64 // offered requests per second
	Sent   int
	Failed int
	Dist
}

// ThroughputResult is section 6: the highest offered rate the server
// sustains with p99 under Bound, with recall (and capture) on, beside the
// same search for the pass-through path.
type ThroughputResult struct {
	Items  int
	Bound  time.Duration
	Step   time.Duration
	Recall RatePoint
	Base   RatePoint // recall and capture off
	Tried  []RatePoint
}

// maxRate searches the offered rate: doubling from start until a step
// fails (p99 over bound, or a failed request), then bisecting
// geometrically; halving instead when even start fails. It returns the best
// passing step (zero when none passed).
func maxRate(ctx context.Context, start, limit float64, bound, step time.Duration, bisect int, call func(ctx context.Context, i int) error) (best RatePoint, tried []RatePoint, err error) {
	try := func(rate float64) (RatePoint, bool) {
		// At least minSamples requests, or a p99 is one request's luck.
		d := max(step, min(maxStep, time.Duration(float64(minSamples)/rate*float64(time.Second))))
		lat, failed := OpenLoop(ctx, rate, d, 512, call)
		p := RatePoint{Rate: rate, Sent: len(lat) + failed, Failed: failed, Dist: DistOf(lat)}
		tried = append(tried, p)
		time.Sleep(step / 4) // let replies' captures and records drain
		return p, failed == 0 && p.N > 0 && p.P99 < bound
	}
	good, bad := 0.0, 0.0
	for rate := start; rate <= limit; rate *= 2 {
		if ctx.Err() != nil {
			return best, tried, ctx.Err()
		}
		p, ok := try(rate)
		if !ok {
			bad = rate
			break
		}
		good, best = rate, p
	}
	for good == 0 && bad > minRate {
		bad = max(minRate, bad/2)
		if p, ok := try(bad); ok {
			good, best = bad, p
			bad *= 2
		}
	}
	for i := 0; i < bisect && good > 0 && bad > 0; i++ {
		mid := math.Round(math.Sqrt(good * bad))
		if mid <= good || mid >= bad {
			break
		}
		if p, ok := try(mid); ok {
			good, best = mid, p
		} else {
			bad = mid
		}
	}
	// good == 0: not even minRate kept p99 under bound; best is the zero
	// point and tried says what the lowest rate got.
	return best, tried, ctx.Err()
}

// The search's limits: a step lasts long enough for minSamples requests
// (up to maxStep), and gives up below minRate.
const (
	minSamples = 20
	maxStep    = 10 * time.Second
	minRate    = 1.0
)

func runThroughput(ctx context.Context, r *rig, t *Tenant, lr liveRequests, cfg Config, lg *logger) (*ThroughputResult, error) {
	res := &ThroughputResult{Items: t.Items, Bound: cfg.Bound, Step: cfg.RateStep}
	full := r.pipelineCaller(t, lr)
	lg.printf("throughput %s: recall on", itemsLabel(t.Items))
	best, tried, err := maxRate(ctx, cfg.RateStart, cfg.RateLimit, cfg.Bound, cfg.RateStep, cfg.Bisect, func(ctx context.Context, i int) error {
		_, err := full(ctx, 1, 100_000+i)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("throughput with recall: %w", err)
	}
	res.Recall, res.Tried = best, tried

	lg.printf("throughput: pass-through")
	pass := r.proxied(t.Key, proxy.HeaderRecall, "off", proxy.HeaderCapture, "off")
	body := chatBody("What did we decide about the Thursday meeting with the design team?", false)
	best, _, err = maxRate(ctx, cfg.RateStart, cfg.RateLimit, cfg.Bound, cfg.RateStep, cfg.Bisect, func(ctx context.Context, _ int) error {
		_, err := pass.Call(ctx, r.client, body, false)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("throughput pass-through: %w", err)
	}
	res.Base = best
	return res, nil
}
