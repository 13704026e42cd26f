package bench

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/perpetuity/perpetuity/memory/store"
	"github.com/perpetuity/perpetuity/proxy"
)

// PassResult is section 1: what Perpetuity adds with recall and capture
// off, against the fake provider called directly.
type PassResult struct {
	C1, CMany   Paired // non-streaming, whole request
	Concurrency int    // of CMany
	TTFB        Paired // streaming: first SSE event
	Gap         Paired // streaming: time between consecutive events
	// TTFBTail splits the slowest proxied first events (streamtail.go).
	TTFBTail StreamTail
	// GapTail splits the slowest gaps by the provider's send times
	// (chunktail.go).
	GapTail ChunkTail
	// Hop and HopTTFB are the same comparisons for the plainest Go proxy
	// (hop.go) in place of Perpetuity: the share of the added time any
	// proxy in Go costs on this machine.
	Hop, HopTTFB, HopGap Paired
	// HopGapMeanAdded is GapMeanAdded for the plain Go proxy.
	HopGapMeanAdded time.Duration
	// Peer is the Portkey gateway in Perpetuity's place (peer_run.go), or
	// why it was not measured; nil when the run had no peer to try.
	Peer *PeerResult
	// StreamConcurrency is how many streams run at once.
	StreamConcurrency int
	// GapMeanAdded is the added stream time spread over its events:
	// ((subject total - TTFB) - (baseline total - TTFB)) / (events - 1),
	// median over rounds.
	GapMeanAdded time.Duration
	Events       int
	Chunks       int
	ChunkDelay   time.Duration
	// Breakdown is the database work a pass-through request does, each
	// measured alone in the same run.
	Breakdown []Component
	// Failed counts dropped pairs (a request that failed; at most one in a
	// hundred is tolerated).
	Failed int
	// PoolConns is the connection pool size a pool opened on the bench's
	// database URL gets (the server opens its own on the same URL).
	PoolConns int
}

// Component returns the breakdown piece with key (zero if absent).
func (p *PassResult) Component(key string) Component {
	for _, c := range p.Breakdown {
		if c.Key == key {
			return c
		}
	}
	return Component{}
}

// Component is one measured piece of work.
type Component struct {
	Key   string
	Name  string
	Where string
	Rounds
}

func totals(ts []Timing) []time.Duration {
	out := make([]time.Duration, len(ts))
	for i, t := range ts {
		out[i] = t.Total
	}
	return out
}

func ttfbs(ts []Timing) []time.Duration {
	out := make([]time.Duration, len(ts))
	for i, t := range ts {
		out[i] = t.TTFB
	}
	return out
}

func gaps(ts []Timing) []time.Duration {
	var out []time.Duration
	for _, t := range ts {
		out = append(out, t.Gaps...)
	}
	return out
}

// streamTime is the mean time from the first to the last event.
func streamTime(ts []Timing) (mean time.Duration, events int) {
	if len(ts) == 0 {
		return 0, 0
	}
	var sum time.Duration
	for _, t := range ts {
		sum += t.Total - t.TTFB
		events = max(events, t.Events)
	}
	return sum / time.Duration(len(ts)), events
}

// meanGapAdded is the subject's added stream time spread over its gaps,
// and the base streams' events; below two events there are no gaps.
func meanGapAdded(base, subject []Timing) (added time.Duration, events int) {
	bm, ev := streamTime(base)
	sm, _ := streamTime(subject)
	if ev <= 1 {
		return 0, ev
	}
	return (sm - bm) / time.Duration(ev-1), ev
}

// caller sends body to one of two endpoints by side.
func (r *rig) caller(sides [2]Endpoint, body []byte, stream bool) func(ctx context.Context, side, i int) (Timing, error) {
	return func(ctx context.Context, side, _ int) (Timing, error) {
		return sides[side].Call(ctx, r.client, body, stream)
	}
}

func runPassThrough(ctx context.Context, r *rig, db *store.DB, t *Tenant, cfg Config, lg *logger) (*PassResult, error) {
	sides := [2]Endpoint{r.direct(), r.proxied(t.Key, proxy.HeaderRecall, "off", proxy.HeaderCapture, "off")}
	live := "What did we decide about the Thursday meeting with the design team?"
	plain := r.caller(sides, chatBody(live, false), false)
	stream := r.sentTimes(r.caller(sides, chatBody(live, true), true))
	// Concurrent requests are concurrent conversations: requests of one
	// conversation follow each other (each needs the previous reply).
	convs := make([]Endpoint, cfg.Concurrency)
	for k := range convs {
		convs[k] = r.proxied(t.Key, proxy.HeaderRecall, "off", proxy.HeaderCapture, "off", proxy.HeaderConversation, fmt.Sprintf("bench-pass-%d", k))
	}
	plainBody := chatBody(live, false)
	many := func(ctx context.Context, side, i int) (Timing, error) {
		if side == 0 {
			return sides[0].Call(ctx, r.client, plainBody, false)
		}
		return convs[i%len(convs)].Call(ctx, r.client, plainBody, false)
	}
	res := &PassResult{Concurrency: cfg.Concurrency, Chunks: cfg.Chunks, ChunkDelay: cfg.ChunkDelay, StreamConcurrency: cfg.StreamConcurrency}
	hopSides := [2]Endpoint{r.direct(), r.viaHop()}
	hopPlain := r.caller(hopSides, chatBody(live, false), false)
	hopStream := r.sentTimes(r.caller(hopSides, chatBody(live, true), true))

	peer := newPeerRun(ctx, r, live, cfg, lg)
	defer peer.close()
	lg.printf("pass-through: warming up")
	if _, _, _, err := Interleave(ctx, 1, 50, plain); err != nil {
		return nil, fmt.Errorf("pass-through warm-up: %w", err)
	}
	if _, _, _, err := Interleave(ctx, cfg.Concurrency, cfg.Concurrency, many); err != nil {
		return nil, fmt.Errorf("pass-through warm-up (c=%d): %w", cfg.Concurrency, err)
	}
	if _, _, _, err := Interleave(ctx, 1, 3, stream); err != nil {
		return nil, fmt.Errorf("pass-through warm-up (stream): %w", err)
	}
	bd, err := newBreakdown(ctx, db, t)
	if err != nil {
		return nil, err
	}
	var c1, cm, ttfb, gap, hop, hopTTFB [][2][]time.Duration
	var hopGap [][2][]time.Duration
	var meanAdded, hopMeanAdded []time.Duration
	var streams [][]streamPair
	var chunks [][2][]streamTrace
	var hopChunks [][]streamTrace
	for round := range cfg.Rounds {
		lg.printf("pass-through: round %d/%d", round+1, cfg.Rounds)
		b, s, f, err := Interleave(ctx, 1, cfg.PassPairs, plain)
		if err != nil {
			return nil, fmt.Errorf("pass-through c=1: %w", err)
		}
		res.Failed += f
		c1 = append(c1, [2][]time.Duration{totals(b), totals(s)})
		if err := bd.round(cfg.BreakdownN); err != nil {
			return nil, err
		}
		b, s, f, err = Interleave(ctx, cfg.Concurrency, cfg.Concurrency*cfg.PassPairsMany, many)
		if err != nil {
			return nil, fmt.Errorf("pass-through c=%d: %w", cfg.Concurrency, err)
		}
		res.Failed += f
		cm = append(cm, [2][]time.Duration{totals(b), totals(s)})
		b, s, f, err = Interleave(ctx, cfg.StreamConcurrency, cfg.StreamPairs, stream)
		if err != nil {
			return nil, fmt.Errorf("pass-through stream: %w", err)
		}
		res.Failed += f
		ttfb = append(ttfb, [2][]time.Duration{ttfbs(b), ttfbs(s)})
		streams = append(streams, pairStreams(b, s))
		chunks = append(chunks, [2][]streamTrace{chunkTraces(b), chunkTraces(s)})
		gap = append(gap, [2][]time.Duration{gaps(b), gaps(s)})
		if a, ev := meanGapAdded(b, s); ev > 1 {
			meanAdded, res.Events = append(meanAdded, a), ev
		}
		b, s, f, err = Interleave(ctx, 1, cfg.PassPairs, hopPlain)
		if err != nil {
			return nil, fmt.Errorf("plain hop: %w", err)
		}
		res.Failed += f
		hop = append(hop, [2][]time.Duration{totals(b), totals(s)})
		b, s, f, err = Interleave(ctx, cfg.StreamConcurrency, cfg.StreamPairs/2, hopStream)
		if err != nil {
			return nil, fmt.Errorf("plain hop stream: %w", err)
		}
		res.Failed += f
		hopTTFB = append(hopTTFB, [2][]time.Duration{ttfbs(b), ttfbs(s)})
		hopGap = append(hopGap, [2][]time.Duration{gaps(b), gaps(s)})
		hopChunks = append(hopChunks, chunkTraces(s))
		if a, ev := meanGapAdded(b, s); ev > 1 {
			hopMeanAdded = append(hopMeanAdded, a)
		}
		peer.round(ctx, cfg, round)
	}
	res.Peer = peer.result()
	res.C1, res.CMany, res.TTFB, res.Gap = Pair(c1), Pair(cm), Pair(ttfb), Pair(gap)
	res.Hop, res.HopTTFB, res.HopGap = Pair(hop), Pair(hopTTFB), Pair(hopGap)
	res.HopGapMeanAdded = Median(hopMeanAdded)
	res.TTFBTail = streamTailOf(streams)
	res.GapTail = chunkTailOf(chunks, hopChunks)
	res.GapMeanAdded = Median(meanAdded)

	res.Breakdown = bd.result()
	res.PoolConns = int(db.Pool.Config().MaxConns)
	return res, nil
}

// breakdown times, one at a time and interleaved, the statements a
// pass-through request runs: what the proxy's added latency is made of.
// Its rounds run inside the pass-through rounds, so both see the same
// moment of a noisy machine.
type breakdown struct {
	parts []part
	// samples[k] are part k's rounds.
	samples [][][]time.Duration
}

type part struct {
	key, name, where string
	run              func() error
}

func newBreakdown(ctx context.Context, db *store.DB, t *Tenant) (*breakdown, error) {
	if _, err := db.EnsureConversation(ctx, t.ID, t.Users[0], "h:bench-breakdown", "breakdown"); err != nil {
		return nil, err
	}
	parts := []part{
		{"trip", "round trip (SELECT 1)", "the floor of any statement on this machine", func() error {
			_, err := db.Pool.Exec(ctx, "SELECT 1")
			return err
		}},
		{"floor", "commit floor", "the cheapest durable commit: one row rewritten unchanged, then COMMIT (waits for the WAL flush)", func() error {
			return commitFloor(ctx, db, t)
		}},
		{"key", "key lookup", "store.ResolveKey, on a key's first request and in the background once its cached copy is 1 s old (proxy/identity.go resolveIdentity)", func() error {
			_, err := db.ResolveKey(ctx, t.Keys[0])
			return err
		}},
		{"conv", "conversation upsert", "store.EnsureConversation of a conversation that exists, one read; a request with memory asks it when its conversation is not in the process's cache (proxy/users.go)", func() error {
			_, err := db.EnsureConversation(ctx, t.ID, t.Users[0], "h:bench-breakdown", "breakdown")
			return err
		}},
		{"record", "request record", "store.RecordRequest, one record of figures alone; the proxy writes such records after the reply in batches, every 250 ms or 256 records (proxy/records.go)", func() error {
			return db.RecordRequest(ctx, store.RequestRecord{TenantID: t.ID, RequestID: "req_bench", UserID: t.Users[0],
				Dialect: "openai-chat", Provider: "openai", Model: "gpt-4o-mini", Status: 200})
		}},
	}
	return &breakdown{parts: parts, samples: make([][][]time.Duration, len(parts))}, nil
}

// round takes n samples of every part, rotating through them.
func (b *breakdown) round(n int) error {
	round := make([][]time.Duration, len(b.parts))
	for range n {
		for k, p := range b.parts {
			t0 := time.Now()
			if err := p.run(); err != nil {
				return fmt.Errorf("breakdown %s: %w", p.name, err)
			}
			round[k] = append(round[k], time.Since(t0))
		}
	}
	for k := range b.parts {
		b.samples[k] = append(b.samples[k], round[k])
	}
	return nil
}

func (b *breakdown) result() []Component {
	out := make([]Component, len(b.parts))
	for k, p := range b.parts {
		out[k] = Component{Key: p.key, Name: p.name, Where: p.where, Rounds: Fold(b.samples[k])}
	}
	return out
}

// commitFloor is the cheapest transaction that must reach the disk: one
// row rewritten unchanged (a bench user's own), so the commit has WAL to
// flush. (A transaction that only takes an id writes its commit record
// without waiting for the flush, which would make the floor too low.)
func commitFloor(ctx context.Context, db *store.DB, t *Tenant) error {
	// In the tenant, as every write is: outside one, row-level security
	// leaves the update no row to rewrite and nothing to flush.
	return db.InTenant(ctx, t.ID, func(tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, commitFloorSQL, t.ID, t.Users[0])
		if err == nil && tag.RowsAffected() != 1 {
			err = fmt.Errorf("commit floor rewrote %d rows, want 1", tag.RowsAffected())
		}
		return err
	})
}

const commitFloorSQL = `UPDATE memory_users SET display_name = display_name WHERE tenant_id = $1 AND id = $2`
