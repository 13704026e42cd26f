package bench

import (
	"context"
	"fmt"
	"time"

	"github.com/perpetuity/perpetuity/memory/arena"
	"github.com/perpetuity/perpetuity/proxy"
)

// PipelineResult is section 2 at one tenant size: a request with capture
// and recall on against the same request sent to the provider directly.
type PipelineResult struct {
	Items int
	Paired
	// First is the first request after the tenant grew: the server's
	// arena catches up on the new items inside it.
	First time.Duration
	// FrameItems and FrameTokens are the medians the server reported.
	FrameItems, FrameTokens int
	// Failed counts dropped pairs.
	Failed int
}

// liveRequests are the questions of a size: each asked by the owner of a
// stored item, with some of its words (the way a follow-up question reuses
// them), through that user's own key.
type liveRequests struct {
	text []string
	user []int64 // synthetic user, 1-based
}

func newLiveRequests(v *Vocabulary, qs []arena.Query) liveRequests {
	var lr liveRequests
	for _, q := range qs {
		lr.text = append(lr.text, v.Question(q))
		lr.user = append(lr.user, q.Users[0])
	}
	return lr
}

// pipelineCaller sends request i to the provider directly (side 0) or
// through Perpetuity with the full pipeline (side 1).
func (r *rig) pipelineCaller(t *Tenant, lr liveRequests) func(ctx context.Context, side, i int) (Timing, error) {
	direct := r.direct()
	px := make([]Endpoint, len(t.Keys))
	for u, key := range t.Keys {
		// One live conversation per user, so the frame's "recent stretch"
		// is a real conversation that grows as the bench asks.
		px[u] = r.proxied(key, proxy.HeaderConversation, "bench-live")
	}
	return func(ctx context.Context, side, i int) (Timing, error) {
		k := i % len(lr.text)
		body := chatBody(lr.text[k], false)
		if side == 0 {
			return direct.Call(ctx, r.client, body, false)
		}
		return px[lr.user[k]-1].Call(ctx, r.client, body, false)
	}
}

// runPipeline measures section 2; settle (nil: none) runs after the first
// request, which kicked the served chain writer.
func runPipeline(ctx context.Context, r *rig, t *Tenant, lr liveRequests, cfg Config, lg *logger, settle func(context.Context) error) (*PipelineResult, error) {
	res := &PipelineResult{Items: t.Items}
	call := r.pipelineCaller(t, lr)
	t0 := time.Now()
	if _, err := call(ctx, 1, 0); err != nil {
		return nil, fmt.Errorf("pipeline first request: %w", err)
	}
	res.First = time.Since(t0)
	if settle != nil {
		if err := settle(ctx); err != nil {
			return nil, err
		}
	}
	if _, _, _, err := Interleave(ctx, 1, 20, call); err != nil {
		return nil, fmt.Errorf("pipeline warm-up: %w", err)
	}
	var rounds [][2][]time.Duration
	var items, tokens []int
	for round := range cfg.Rounds {
		lg.printf("pipeline %s: round %d/%d", itemsLabel(t.Items), round+1, cfg.Rounds)
		b, s, f, err := Interleave(ctx, 1, cfg.PipelinePairs, func(ctx context.Context, side, i int) (Timing, error) {
			return call(ctx, side, round*cfg.PipelinePairs+i+20)
		})
		if err != nil {
			return nil, fmt.Errorf("pipeline: %w", err)
		}
		res.Failed += f
		rounds = append(rounds, [2][]time.Duration{totals(b), totals(s)})
		for _, x := range s {
			items, tokens = append(items, x.FrameItems), append(tokens, x.FrameTokens)
		}
	}
	res.Paired = Pair(rounds)
	res.FrameItems, res.FrameTokens = Median(items), Median(tokens)
	return res, nil
}
