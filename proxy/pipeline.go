package proxy

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/perpetuity/perpetuity/memory"
	"github.com/perpetuity/perpetuity/memory/store"
	"github.com/perpetuity/perpetuity/proxy/dialect"
	"github.com/perpetuity/perpetuity/proxy/toolloop"
	"github.com/perpetuity/perpetuity/proxy/wire/jsonx"
)

// switches are the per-request X-Perpetuity-* controls.
type switches struct {
	recall, capture, tools, probe bool
	budget                        int // forced frame budget, 0 = derived; the ceiling still caps it
}

func readSwitches(h http.Header) (switches, error) {
	s := switches{recall: true, capture: true, tools: true}
	for _, f := range []struct {
		name string
		dst  *bool
	}{{HeaderRecall, &s.recall}, {HeaderCapture, &s.capture}, {HeaderTools, &s.tools}} {
		switch v := strings.ToLower(strings.TrimSpace(h.Get(f.name))); v {
		case "":
		case "off", "false", "0", "no":
			*f.dst = false
		case "on", "true", "1", "yes":
			*f.dst = true
		default:
			return s, errBadRequest("%s: %q is not on or off", f.name, v)
		}
	}
	if v := strings.TrimSpace(h.Get(HeaderFrameBudget)); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > 1_000_000 {
			return s, errBadRequest("%s: %q is not a token count", HeaderFrameBudget, v)
		}
		s.budget = n
	}
	switch v := strings.ToLower(strings.TrimSpace(h.Get(HeaderMode))); v {
	case "":
	case "probe":
		s.probe = true
	default:
		return s, errBadRequest("%s: %q is not a known mode (probe)", HeaderMode, v)
	}
	return s, nil
}

// turn carries one request through the pipeline.
type turn struct {
	in       *inbound
	who      memory.Who
	keyID    int64 // the Perpetuity key, for usage per key
	sw       switches
	up       upstream
	frame    *memory.Frame
	start    time.Time
	rid      string
	liveText string
	// seen is the earliest tenant log position the turn read or stored
	// memory at (its frame's, its question's), for the inspector's record
	// (store.RequestRecord.Seen); seenSet says one is known.
	seen    int64
	seenSet bool
	// loop runs the memory tools; nil when they are off for this turn.
	loop *toolloop.Loop
	// session is the harness's own session id, when it sent one.
	session harnessSession
	// convKey and convTitle name the conversation, when it came through
	// this process's cache (convcache.go), to look it up again if gone.
	convKey, convTitle string
	// appended: the question was placed after the conversation's newest
	// message (inbound.historyless), and its turn is noted in answering
	// until its reply is captured.
	appended bool
	// What the provider answered, for the request inspector: the last
	// round's status (0 when never reached), how long the first round took
	// to answer, and how many rounds were sent.
	upStatus  int
	upLatency time.Duration
	rounds    int
	// For Server-Timing (servertiming.go): how long captureAndFrame took,
	// if it had work, and when the first round was sent.
	memDur time.Duration
	memRan bool
	sent   time.Time
}

func (p *Proxy) chat(d dialect.Dialect) echo.HandlerFunc {
	return func(c echo.Context) (err error) {
		c.Set(dialectKey, d)
		ctx, done := p.cuttable(c)
		cut := false
		defer func() {
			// Cut before anything went out (a read of memory, or the
			// provider's answer not begun): the caller is told the server
			// is restarting, not that memory failed.
			if err != nil && !cut && wasCut(ctx) && !c.Response().Committed {
				cut, err = true, drainCutUnsent()
			}
			done(cut)
		}()
		req := c.Request()
		t := &turn{start: time.Now()}
		t.rid, _ = c.Get("perpetuity.request_id").(string)

		if t.sw, err = readSwitches(req.Header); err != nil {
			return err
		}
		c.Set(storesNothingKey, t.sw.probe || !t.sw.capture)
		// The key and its limits before the body: a caller without a key
		// (or past its rate) must not make the server hold up to
		// MaxBodyBytes for as long as the body deadline allows.
		who, key, err := p.resolveIdentity(ctx, c)
		if err != nil {
			return err
		}
		if err := p.admit(c, key); err != nil {
			return err
		}
		body, err := readBody(c, p.cfg.MaxBodyBytes)
		if err != nil {
			return err
		}
		t.keyID = key.KeyID
		if t.in, err = parseInbound(d, body); err != nil {
			return err
		}
		if err := checkStorable(t.in, req.Header, key.UserFieldIdentity); err != nil {
			return err
		}
		if t.who, err = p.chooseUser(ctx, c, who, key, t.in.userHint); err != nil {
			return err
		}
		if t.up, err = p.route(t.in, req.Header, p.tr.WithLogger(p.log.With("request_id", t.rid))); err != nil {
			return err
		}
		convKey, title, hs, err := conversationKey(c, t.who, t.in, p.chains)
		if err != nil {
			return err
		}
		t.session = hs
		// With neither capture nor recall the request has no use for its
		// conversation: the pass-through path stays off the database.
		if t.sw.capture || t.sw.recall {
			if err := p.conversation(ctx, c, t, convKey, title); err != nil {
				return err
			}
		}
		if t.in.live >= 0 {
			t.liveText = t.in.question
		}

		var q memory.FrameQuery
		recall := t.sw.recall && t.in.live >= 0 && !t.in.stateful
		if recall {
			q = memory.FrameQuery{
				Who: t.who, Live: t.liveText,
				Ceiling: p.cfg.FrameCeiling, Budget: t.sw.budget, Probe: t.sw.probe || !t.sw.capture,
				// A user not created (a probe naming a new name) has no memory to search.
				Tools: p.toolsFor(t) && t.who.UserID != 0, Now: time.Now(),
				Explain: p.inspects(t),
			}
		}
		if err := p.captureAndFrame(ctx, c, t, &q, recall); err != nil {
			return err
		}
		if f := t.frame; f != nil {
			h := c.Response().Header()
			h.Set(HeaderFrameItems, strconv.Itoa(f.Items))
			h.Set(HeaderFrameTokens, strconv.Itoa(f.Tokens))
			h.Set(HeaderFrameTrimmed, strconv.FormatBool(f.Trimmed))
		}
		out, err := t.up.requestBody(t.in, t.frame)
		if err != nil {
			return err
		}
		if q.Tools && t.frame != nil {
			if t.loop, out, err = p.offer(t, q, out); err != nil {
				return err
			}
		}
		// Counted before the reply goes out: a client may have all of it
		// (a whole reply is flushed under its write deadline, a stream's
		// end too) before this handler goes on, and Drain must not find
		// nothing left to wait for while the reply's capture and record
		// are still to come.
		p.after.Add(1)
		asked := turnInFlight{ended: func() {}, done: func() {}}
		if t.appended {
			asked = p.answering.begin(convTurn{tenant: t.who.TenantID, conv: t.who.ConversationID}, t.liveText)
		}
		handedOff := false
		defer func() {
			if !handedOff { // forward panicked
				asked.done()
				p.after.Done()
			}
		}()
		reply, err := p.forward(c, t, out)
		asked.ended()
		if reply.interrupted && wasCut(ctx) {
			// Not a client that left: the drain deadline ended the reply,
			// and the client is told so in its dialect.
			cut, err = true, drainCut()
		}
		p.limits.Charge(key.KeyID, spent(reply, len(out)))
		status := responseStatus(c, err)
		p.linkResponse(t, reply)
		// The reply is out; storing it must not hold the response open.
		// The record keeps when it ended, not when its capture did: a
		// slow capture would otherwise order it after a later request.
		ended := time.Now()
		handedOff = true
		go func() {
			defer p.after.Done()
			p.guarded("reply capture", func() { p.captureReply(t, reply, ended) }, "request_id", t.rid)
			asked.done()
			p.guarded("request record", func() { p.record(t, reply, status, ended) }, "request_id", t.rid)
		}()
		return err
	}
}

// captureAndFrame stores the live question and builds the turn's frame
// (when recall is on, into t.frame), the frame beside the capture: its
// reads travel while the capture commits (memory.Engine.FrameBeside), and
// nothing is forwarded before the question is stored. q gets the stored
// items. Its time is the turn's Server-Timing memory.
func (p *Proxy) captureAndFrame(ctx context.Context, c echo.Context, t *turn, q *memory.FrameQuery, recall bool) error {
	if !recall && !p.storesLive(t) {
		return nil
	}
	start := time.Now()
	defer func() { t.memDur, t.memRan = time.Since(start), true }()
	if p.storesLive(t) && t.in.historyless() && t.in.live == len(t.in.messages)-1 {
		// The same question asked by a turn still in flight: a retry if
		// that turn's reply does not come back whole, a turn of its own if
		// it does, which its reply's capture tells (answering.go). Waited
		// for before the frame reads memory, which then holds that reply.
		wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), p.cfg.CaptureTimeout)
		p.answering.wait(wctx, convTurn{tenant: t.who.TenantID, conv: t.who.ConversationID}, t.liveText)
		cancel()
	}
	if !p.storesLive(t) {
		f, err := p.mem.Frame(ctx, *q)
		if err != nil {
			return p.memoryUnavailable(c, "frame", err)
		}
		t.frame = &f
		t.readAt(f.Seq)
		return nil
	}
	if !recall {
		_, err := p.captureLive(ctx, c, t, memory.Beside{})
		return err
	}
	k, keeps := p.loopKey(t, q)
	if keeps {
		if kept, ok := p.frames.get(k, p.mem.Erasures(t.who.TenantID), time.Now()); ok {
			return p.loopRound(ctx, c, t, q, k, kept)
		}
	}
	conv := t.who.ConversationID
	var capErr error
	live, f, err := p.mem.FrameBeside(ctx, *q, func(b memory.Beside) (store.Captured, error) {
		// t is this goroutine's until it returns: the frame works on its
		// copy of q, and FrameBeside returns after this does.
		live, err := p.captureLive(ctx, c, t, b)
		if err != nil {
			capErr = err
			return store.Captured{}, err
		}
		return *live, nil
	})
	if capErr != nil {
		return capErr
	}
	q.Who, q.LiveStored, q.LiveItems, q.SentAfter = t.who, true, live.ItemIDs, live.SentAfter
	if err == nil && t.who.ConversationID != conv {
		// The capture made the conversation again (purged meanwhile,
		// captureLive): the frame read the old one, so it is built again.
		f, err = p.mem.Frame(ctx, *q)
	}
	if err != nil {
		return p.memoryUnavailable(c, "frame", err)
	}
	if keeps {
		p.keepLoopFrame(t, k, live, f)
	}
	t.frame = &f
	t.readAt(f.Seq)
	return nil
}

// loopKey is the key of the turn's frame among the kept ones
// (loopframes.go); false when the turn's frame is not one to keep or take:
// only a request offering the harness's own tools starts a loop.
func (p *Proxy) loopKey(t *turn, q *memory.FrameQuery) (loopKey, bool) {
	if raw, ok := t.in.fields["tools"]; !ok || jsonx.IsNull(raw) || string(raw) == "[]" ||
		t.who.UserID == 0 || t.who.ConversationID == 0 || q.Probe {
		return loopKey{}, false
	}
	return loopKey{tenant: t.who.TenantID, user: t.who.UserID, conv: t.who.ConversationID,
		live: string(memory.Fingerprint("user", t.in.live, t.liveText)), budget: q.Budget, tools: q.Tools, explain: q.Explain}, true
}

// keepLoopFrame keeps the frame of a question just stored, for its loop's
// next rounds. Erasures are counted as the frame's own catch-up left them:
// one applied after its read moves the count past what is kept.
func (p *Proxy) keepLoopFrame(t *turn, k loopKey, live store.Captured, f memory.Frame) {
	if !live.Duplicate {
		k.conv = t.who.ConversationID // the capture may have made it again
		p.frames.put(k, f, live.ItemIDs, p.mem.Erasures(t.who.TenantID), time.Now())
	}
}

// loopRound is a turn whose question has a kept frame: the next round of
// a tool loop, or a retry. The capture comes first, alone; the kept frame
// is taken when it found the question stored as the frame saw it and no
// erasure logged since the frame read memory. Otherwise the frame is
// built after the capture.
func (p *Proxy) loopRound(ctx context.Context, c echo.Context, t *turn, q *memory.FrameQuery, k loopKey, kept loopFrame) error {
	live, err := p.captureLive(ctx, c, t, memory.Beside{})
	if err != nil {
		return err
	}
	q.Who, q.LiveStored, q.LiveItems, q.SentAfter = t.who, true, live.ItemIDs, live.SentAfter
	if live.Duplicate && slices.Equal(live.ItemIDs, kept.live) && live.Erased <= kept.frame.Seq {
		f := kept.frame
		t.frame = &f
		t.readAt(f.Seq)
		return nil
	}
	f, err := p.mem.Frame(ctx, *q)
	if err != nil {
		return p.memoryUnavailable(c, "frame", err)
	}
	p.keepLoopFrame(t, k, *live, f) // stored afresh: a purge took the question
	t.frame = &f
	t.readAt(f.Seq)
	return nil
}

// readAt notes a tenant log position the turn read or stored memory at;
// the earliest is kept.
func (t *turn) readAt(seq int64) {
	if !t.seenSet || seq < t.seen {
		t.seen, t.seenSet = seq, true
	}
}

// storesLive says the turn's live question is to be captured.
func (p *Proxy) storesLive(t *turn) bool {
	return t.sw.capture && !t.sw.probe && strings.TrimSpace(t.liveText) != ""
}

// captureLive stores the live question before anything is forwarded, on a
// context detached from the client: a hang-up must not lose the turn.
func (p *Proxy) captureLive(ctx context.Context, ec echo.Context, t *turn, b memory.Beside) (*store.Captured, error) {
	if !p.storesLive(t) {
		return nil, nil
	}
	m := memory.Message{Who: t.who, Role: "user", Text: t.liveText, Position: t.in.posBase + t.in.live, Hints: t.hints(), Stored: b.Stored, Sending: b.Sending,
		Appended: t.in.historyless(), CommitApart: true}
	if t.in.live < len(t.in.messages)-1 {
		m.SentAfter = t.in.posBase + len(t.in.messages) // a tool exchange in flight follows
	}
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), p.cfg.CaptureTimeout)
	defer cancel()
	m.At = time.Now()
	c, err := p.mem.Capture(cctx, m)
	if store.ConversationGone(err) && t.convKey != "" {
		// The cached conversation was purged by a process whose log event
		// this one has not applied yet; the capture stored nothing. The
		// conversation is made again, as after any purge.
		p.convs.forget(convKey{tenant: t.who.TenantID, user: t.who.UserID, ext: t.convKey})
		if err = p.conversation(cctx, ec, t, t.convKey, t.convTitle); err != nil {
			return nil, err
		}
		m.Who = t.who
		c, err = p.mem.Capture(cctx, m)
	}
	if err != nil {
		p.log.Error("capture live message failed", "request_id", t.rid, "tenant", t.who.TenantID, "err", err)
		return nil, &APIError{Status: http.StatusServiceUnavailable, Kind: Overloaded,
			Message: "memory is unavailable; the request was not forwarded"}
	}
	t.readAt(c.Seq) // 0 for a retry that stored nothing: the earliest there is
	if m.Appended {
		// The reply, and a Responses reply's continuation, follow the
		// question where the store placed it.
		t.in.posBase, t.appended = c.Position-t.in.live, true
	}
	return &c, nil
}

// memoryUnavailable answers a request whose memory step failed before
// anything was forwarded (the database is down or restarting): a 503 in
// the caller's dialect, as when capture fails, instead of a bare 500. The
// cause goes to the log only.
func (p *Proxy) memoryUnavailable(c echo.Context, step string, err error) error {
	if errors.Is(err, memory.ErrBusy) {
		// The tenant's scans are queued past their bound (memory/gate.go):
		// a load the caller can wait out, not a fault.
		p.log.Warn(step+" refused: memory busy", "request_id", c.Get("perpetuity.request_id"), "err", err)
		return &APIError{Status: http.StatusServiceUnavailable, Kind: Overloaded, RetryAfter: "1",
			Message: "memory is busy with this team's other requests; the request was not forwarded, please retry shortly"}
	}
	p.log.Error(step+" failed", "request_id", c.Get("perpetuity.request_id"), "err", err)
	return &APIError{Status: http.StatusServiceUnavailable, Kind: Overloaded,
		Message: "memory is unavailable; the request was not forwarded"}
}

// reply is what came back from the provider, for capture.
type reply struct {
	text        string
	interrupted bool
	usage       usage
	// response is the provider's id of a Responses reply, which a later
	// request may continue (chains.go).
	response string
}

// linkResponse remembers where a Responses reply's turn was stored, before
// the client can send the request that continues it (chains.go).
func (p *Proxy) linkResponse(t *turn, r reply) {
	if r.response == "" || t.convKey == "" || t.in.dialect != dialect.OpenAIResponses {
		return
	}
	p.chains.put(chainKey{tenant: t.who.TenantID, user: t.who.UserID, response: r.response},
		chainLink{conv: t.convKey, next: t.in.posBase + len(t.in.messages) + 1})
}

// captureReply stores the reply as said when it ended: its capture runs
// after the response, often after the harness's next question was
// stored, and frames order a conversation's turns by that time
// (memory/render.go turnOrder).
func (p *Proxy) captureReply(t *turn, r reply, ended time.Time) {
	if !t.sw.capture || t.sw.probe || strings.TrimSpace(r.text) == "" {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), p.cfg.CaptureTimeout)
	defer cancel()
	_, err := p.mem.Capture(ctx, memory.Message{
		Who: t.who, Role: "assistant", Text: storableReply(r.text), Position: t.in.posBase + len(t.in.messages),
		Interrupted: r.interrupted, At: ended, Sources: t.shown(),
		// A request with no question at all (a Responses request on a
		// stored conversation sending only a tool's output) has no place
		// of its own: its reply goes after the conversation's newest
		// message, as an appended question does.
		Appended: t.in.live < 0 && t.in.posBase == 0,
	})
	if err != nil {
		p.log.Error("capture reply failed", "request_id", t.rid, "tenant", t.who.TenantID, "err", err)
	}
}

// shown is what this turn showed the model from memory: the frame, and
// what its memory tools returned. The chain graph links the reply to the
// items among them it drew on.
func (t *turn) shown() []int64 {
	if t.loop != nil {
		return t.loop.Shown()
	}
	var out []int64
	if t.frame != nil {
		out = append(out, t.frame.Shown...)
	}
	return out
}

func readBody(c echo.Context, limit int64) ([]byte, error) {
	if c.Request().ContentLength > limit {
		return nil, bodyTooLarge(limit) // said so up front: nothing of it is read
	}
	r := http.MaxBytesReader(c.Response(), c.Request().Body, limit)
	b, err := io.ReadAll(r)
	var mbe *http.MaxBytesError
	if errors.As(err, &mbe) {
		return nil, bodyTooLarge(limit)
	}
	if err != nil {
		return nil, errBadRequest("could not read request body")
	}
	return b, nil
}

func bodyTooLarge(limit int64) error {
	return &APIError{Status: http.StatusRequestEntityTooLarge, Kind: RequestTooLarge,
		Message: fmt.Sprintf("request body exceeds %d bytes", limit)}
}

func responseStatus(c echo.Context, err error) int {
	var ae *APIError
	if err != nil && !c.Response().Committed && errors.As(err, &ae) {
		return ae.Status
	}
	if err != nil && !c.Response().Committed {
		return http.StatusInternalServerError
	}
	return c.Response().Status
}

// pruneInterval is how often a tenant's expired inspector records are
// pruned: with a record write of the tenant, at most once a minute per
// process, so concurrent requests do not all delete the same rows.
const pruneInterval = time.Minute

// record keeps the request's figures for the console, in the next batch
// of records (records.go): it runs after the reply went out.
func (p *Proxy) record(t *turn, r reply, status int, ended time.Time) {
	rec := store.RequestRecord{
		TenantID: t.who.TenantID, RequestID: t.rid, UserID: t.who.UserID, KeyID: t.keyID, Dialect: t.in.dialect.String(),
		Provider: t.up.provider, Model: t.in.model, Status: status, Streamed: t.in.stream,
		TokensIn: r.usage.in, TokensOut: r.usage.out, DurationMS: float64(ended.Sub(t.start).Microseconds()) / 1000,
		At: ended,
	}
	if t.frame != nil {
		rec.FrameItems, rec.FrameTokens = t.frame.Items, t.frame.Tokens
	}
	rec.PruneInspections, rec.InspectRetention = p.pruned.due(t.who.TenantID, time.Now()), p.cfg.InspectRetention
	if p.inspects(t) {
		rec.Inspection, rec.Seen = t.inspection(r), t.seen
	}
	p.records.add(rec)
}
