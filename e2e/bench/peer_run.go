package bench

import (
	"context"
	"fmt"
	"time"
)

// PeerResult is the pass-through peer (the Portkey gateway) measured in
// section 1's rounds, in Perpetuity's place in front of the same fake
// provider, each figure against the provider called directly.
type PeerResult struct {
	Name    string
	Package string
	Version string
	Node    string // node --version
	// Skipped says why the peer was not measured ("" when it was); the
	// run goes on without it.
	Skipped string
	// Installed is set when this run installed the package (else an
	// earlier run's install in the cache was reused).
	Installed bool
	// Sent requests went through the gateway before the rounds, and the
	// fake provider answered Forwarded requests meanwhile.
	Sent, Forwarded int
	C1, CMany, TTFB Paired
	Concurrency     int
	Failed          int
}

// Measured reports whether the peer has figures.
func (p *PeerResult) Measured() bool { return p != nil && p.Skipped == "" && p.C1.Rounds > 0 }

// peerRun measures the peer beside section 1: the same request, pairs per
// round, concurrency and stream count as Perpetuity's figures, in the same
// rounds. It never fails the run: a peer that cannot be installed, started
// or measured is dropped with the reason.
type peerRun struct {
	res           *PeerResult
	pk            *portkey
	plain, stream func(ctx context.Context, side, i int) (Timing, error)
	c1, cm, ttfb  [][2][]time.Duration
	lg            *logger
}

func newPeerRun(ctx context.Context, r *rig, live string, cfg Config, lg *logger) *peerRun {
	pr := &peerRun{lg: lg, res: &PeerResult{Name: "Portkey gateway", Package: PortkeyPackage, Version: PortkeyVersion,
		Concurrency: cfg.Concurrency}}
	if !cfg.Peer {
		pr.res.Skipped = fmt.Sprintf("not measured in %s mode (it needs node and npm, which the tests do without)", cfg.Mode)
		lg.printf("pass-through peer: %s", pr.res.Skipped)
		return pr
	}
	lg.printf("pass-through peer: %s@%s", PortkeyPackage, PortkeyVersion)
	script, installed, err := installPortkey(ctx)
	if err != nil {
		return pr.drop("could not be installed", err)
	}
	pr.res.Installed = installed
	pk, err := startPortkey(ctx, script)
	if err != nil {
		return pr.drop("could not be started", err)
	}
	pr.pk, pr.res.Node = pk, pk.node
	direct, via := r.direct(), pk.endpoint(r.upstream.URL)
	call := func(body []byte, stream bool) func(ctx context.Context, side, _ int) (Timing, error) {
		return func(ctx context.Context, side, _ int) (Timing, error) {
			if side == 0 {
				return direct.Call(ctx, r.client, body, stream)
			}
			return via.Call(ctx, pk.client, body, stream)
		}
	}
	pr.plain, pr.stream = call(chatBody(live, false), false), call(chatBody(live, true), true)

	// It forwarded only if the fake provider answered every request sent
	// through it (nothing else calls the fake meanwhile).
	before := r.served.Load()
	for i := range 12 {
		if _, err := pr.plain(ctx, 1, i); err != nil {
			return pr.drop("did not forward to the fake provider", err)
		}
		pr.res.Sent++
	}
	for i := range 3 {
		if _, err := pr.stream(ctx, 1, i); err != nil {
			return pr.drop("did not forward a stream to the fake provider", err)
		}
		pr.res.Sent++
	}
	pr.res.Forwarded = int(r.served.Load() - before)
	if pr.res.Forwarded < pr.res.Sent {
		return pr.drop("did not forward to the fake provider",
			fmt.Errorf("it answered %d requests, the fake provider saw %d", pr.res.Sent, pr.res.Forwarded))
	}
	// Four times Perpetuity's warm-up: Node compiles the hot paths as they
	// run, where Go arrives compiled.
	lg.printf("pass-through peer: warming up (Node %s)", pk.node)
	if _, _, _, err := Interleave(ctx, 1, 200, pr.plain); err != nil {
		return pr.drop("failed its warm-up", err)
	}
	if _, _, _, err := Interleave(ctx, cfg.Concurrency, 4*cfg.Concurrency, pr.plain); err != nil {
		return pr.drop("failed its warm-up", err)
	}
	if _, _, _, err := Interleave(ctx, cfg.StreamConcurrency, 12, pr.stream); err != nil {
		return pr.drop("failed its warm-up", err)
	}
	return pr
}

// drop gives up on the peer, keeping why.
func (pr *peerRun) drop(what string, err error) *peerRun {
	pr.res.Skipped = what + ": " + err.Error()
	if pr.pk != nil {
		pr.res.Skipped += " (its output: " + pr.pk.out.lastLines(2) + ")"
	}
	pr.lg.printf("pass-through peer: %s", pr.res.Skipped)
	pr.close()
	pr.c1, pr.cm, pr.ttfb = nil, nil, nil
	return pr
}

// round measures one round of the peer, as runPassThrough measures
// Perpetuity: c=1 pairs, then cfg.Concurrency workers, then streams.
func (pr *peerRun) round(ctx context.Context, cfg Config, round int) {
	if pr.pk == nil || ctx.Err() != nil {
		return
	}
	pr.lg.printf("pass-through peer: round %d/%d", round+1, cfg.Rounds)
	b, s, f, err := Interleave(ctx, 1, cfg.PassPairs, pr.plain)
	if err != nil {
		pr.drop(fmt.Sprintf("failed in round %d (c=1)", round+1), err)
		return
	}
	pr.res.Failed += f
	pr.c1 = append(pr.c1, [2][]time.Duration{totals(b), totals(s)})
	b, s, f, err = Interleave(ctx, cfg.Concurrency, cfg.Concurrency*cfg.PassPairsMany, pr.plain)
	if err != nil {
		pr.drop(fmt.Sprintf("failed in round %d (c=%d)", round+1, cfg.Concurrency), err)
		return
	}
	pr.res.Failed += f
	pr.cm = append(pr.cm, [2][]time.Duration{totals(b), totals(s)})
	b, s, f, err = Interleave(ctx, cfg.StreamConcurrency, cfg.StreamPairs, pr.stream)
	if err != nil {
		pr.drop(fmt.Sprintf("failed in round %d (streams)", round+1), err)
		return
	}
	pr.res.Failed += f
	pr.ttfb = append(pr.ttfb, [2][]time.Duration{ttfbs(b), ttfbs(s)})
}

// result folds the rounds and stops the gateway.
func (pr *peerRun) result() *PeerResult {
	pr.close()
	if pr.res.Skipped == "" {
		pr.res.C1, pr.res.CMany, pr.res.TTFB = Pair(pr.c1), Pair(pr.cm), Pair(pr.ttfb)
	}
	return pr.res
}

func (pr *peerRun) close() {
	if pr.pk != nil {
		pr.pk.close()
		pr.pk = nil
	}
}
