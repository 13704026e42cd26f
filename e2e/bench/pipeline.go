package bench

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"
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
	// Memory and Upstream are the proxied requests' Server-Timing: the
	// proxy's capture and frame, and the provider's answer as the proxy
	// waited for it. Handling is the rest of the proxy's work before it
	// forwarded the request (Server-Timing's forward less memory: reading
	// the request, the lookups, splicing the frame in and encoding it).
	// Outside is what the client waited beyond forward and upstream: its
	// hop, the server before the handler, and the reply's way back.
	Memory, Upstream, Handling, Outside Rounds
	// UpBytes is the median size of the request the provider got (the
	// question with its frame); Sized is the provider called directly with
	// a request that size against the plain question, in the same rounds:
	// what the frame's bytes cost the provider, whatever the proxy does.
	UpBytes int
	Sized   Paired
}

// liveRequests are the questions of a size: each asked by the owner of a
// stored item, with some of its words (the way a follow-up question reuses
// them), through that user's own key.
type liveRequests struct {
	text []string
	user []int64 // synthetic user, 1-based
}

// from is the requests from the ith on, then those before it.
func (lr liveRequests) from(i int) liveRequests {
	if len(lr.text) == 0 {
		return lr
	}
	i %= len(lr.text)
	return liveRequests{
		text: append(slices.Clip(lr.text[i:]), lr.text[:i]...),
		user: append(slices.Clip(lr.user[i:]), lr.user[:i]...),
	}
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
	return r.pipelineCallerFor(t, lr, benchModel)
}

// pipelineCallerFor is pipelineCaller asking for model on both sides.
func (r *rig) pipelineCallerFor(t *Tenant, lr liveRequests, model string) func(ctx context.Context, side, i int) (Timing, error) {
	direct := r.direct()
	px := make([]Endpoint, len(t.Keys))
	for u, key := range t.Keys {
		// One live conversation per user, so the frame's "recent stretch"
		// is a real conversation that grows as the bench asks.
		px[u] = r.proxied(key, proxy.HeaderConversation, "bench-live")
	}
	return func(ctx context.Context, side, i int) (Timing, error) {
		k := i % len(lr.text)
		body := chatBodyFor(model, lr.text[k], false)
		if side == 0 {
			return direct.Call(ctx, r.client, body, false)
		}
		tm, err := px[lr.user[k]-1].Call(ctx, r.client, body, false)
		tm.UpBytes = int(r.lastBody.Load())
		return tm, err
	}
}

// sizedCaller sends the provider the same question directly, as a request
// of size bytes (side 1) or as it is (side 0): what the provider's answer
// costs for the size of the request the frame makes.
func (r *rig) sizedCaller(lr liveRequests, model string, size int) func(ctx context.Context, side, i int) (Timing, error) {
	direct := r.direct()
	return func(ctx context.Context, side, i int) (Timing, error) {
		k := i % len(lr.text)
		if side == 0 {
			return direct.Call(ctx, r.client, chatBodyFor(model, lr.text[k], false), false)
		}
		return direct.Call(ctx, r.client, paddedChatBody(model, lr.text[k], size), false)
	}
}

// pipeSide is one tenant section 2 is measured on; settle (nil: none)
// runs after its first request, which kicked the served chain writer.
type pipeSide struct {
	t      *Tenant
	label  string // "" for the bench tenant, "v3" for its twin on dictionary v3
	settle func(context.Context) error
	// model is what both sides ask for; "" is benchModel, which the
	// provider answers at once, thinkingModel the one that takes thinkingTime.
	model string
	// ask is where the side's questions start in the size's list. A second
	// side on one tenant starts past the first's (Config.pipelineAsks):
	// a question asked again in the same conversation is a repeat (it waits
	// for the first asking's reply to be captured, proxy/answering.go) or a
	// retry (it stores nothing), not the plain turn the section measures.
	ask int
}

// runPipelines measures section 2 on each side: the bench tenant and, at
// the dense sizes, the same items on dictionary v3 (the default, which the
// target holds for). Their rounds alternate, so both see the same machine.
func runPipelines(ctx context.Context, r *rig, sides []pipeSide, lr liveRequests, cfg Config, lg *logger) ([]PipelineResult, error) {
	res := make([]PipelineResult, len(sides))
	calls := make([]func(context.Context, int, int) (Timing, error), len(sides))
	for i, s := range sides {
		res[i].Items = s.t.Items
		call := r.pipelineCallerFor(s.t, lr.from(s.ask), cmp.Or(s.model, benchModel))
		calls[i] = call
		t0 := time.Now()
		if _, err := call(ctx, 1, 0); err != nil {
			return nil, fmt.Errorf("pipeline first request: %w", err)
		}
		res[i].First = time.Since(t0)
		if s.settle != nil {
			if err := s.settle(ctx); err != nil {
				return nil, err
			}
		}
		if _, _, _, err := Interleave(ctx, 1, pipelineWarmUp, call); err != nil {
			return nil, fmt.Errorf("pipeline warm-up: %w", err)
		}
	}
	rounds := make([][][2][]time.Duration, len(sides))
	items, tokens := make([][]int, len(sides)), make([][]int, len(sides))
	sized, upBytes := make([][][2][]time.Duration, len(sides)), make([][]int, len(sides))
	mems, ups, hands, outs := make([][][]time.Duration, len(sides)), make([][][]time.Duration, len(sides)), make([][][]time.Duration, len(sides)), make([][][]time.Duration, len(sides))
	for round := range cfg.Rounds {
		for i, s := range sides {
			lg.printf("pipeline %s: round %d/%d", strings.TrimSpace(itemsLabel(s.t.Items)+" "+s.label), round+1, cfg.Rounds)
			b, sb, f, err := Interleave(ctx, 1, cfg.PipelinePairs, func(ctx context.Context, side, j int) (Timing, error) {
				return calls[i](ctx, side, pipelineWarmUp+round*cfg.PipelinePairs+j)
			})
			if err != nil {
				return nil, fmt.Errorf("pipeline: %w", err)
			}
			res[i].Failed += f
			rounds[i] = append(rounds[i], [2][]time.Duration{totals(b), totals(sb)})
			var m, u, h, o []time.Duration
			var n []int
			for _, x := range sb {
				items[i], tokens[i] = append(items[i], x.FrameItems), append(tokens[i], x.FrameTokens)
				m, u, h = append(m, x.Memory), append(u, x.Upstream), append(h, x.Forward-x.Memory)
				o, n = append(o, x.Total-x.Forward-x.Upstream), append(n, x.UpBytes)
			}
			mems[i], ups[i], hands[i], outs[i] = append(mems[i], m), append(ups[i], u), append(hands[i], h), append(outs[i], o)
			upBytes[i] = append(upBytes[i], n...)
			b, sb, f, err = Interleave(ctx, 1, max(5, cfg.PipelinePairs/2), r.sizedCaller(lr, cmp.Or(s.model, benchModel), Median(n)))
			if err != nil {
				return nil, fmt.Errorf("pipeline, a request the frame's size: %w", err)
			}
			res[i].Failed += f
			sized[i] = append(sized[i], [2][]time.Duration{totals(b), totals(sb)})
		}
	}
	for i := range sides {
		res[i].Paired = Pair(rounds[i])
		res[i].FrameItems, res[i].FrameTokens = Median(items[i]), Median(tokens[i])
		res[i].Memory, res[i].Upstream, res[i].Handling, res[i].Outside = Fold(mems[i]), Fold(ups[i]), Fold(hands[i]), Fold(outs[i])
		res[i].Sized, res[i].UpBytes = Pair(sized[i]), Median(upBytes[i])
	}
	return res, nil
}
