package fakeprovider

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"
)

// Dialects a recorded request is classified into, by route.
const (
	DialectOpenAIChat      = "openai-chat"      // POST /v1/chat/completions
	DialectAnthropic       = "anthropic"        // POST /v1/messages, /v1/messages/count_tokens
	DialectOpenAIResponses = "openai-responses" // POST /v1/responses
	DialectOther           = "other"            // models, embeddings, unknown paths
)

// DefaultCreated is the fixed Unix time put in `created`/`created_at` unless
// WithCreated says otherwise, so output is reproducible.
const DefaultCreated = 1750000000

// maxBody bounds a request body; real APIs refuse far less.
const maxBody = 64 << 20

// systemFingerprint is fixed: tests compare bytes.
const systemFingerprint = "fp_5a1e3f2c9b"

// Recorded is one request as the fake received it.
type Recorded struct {
	Method, Path, RawQuery string
	Header                 http.Header
	Body                   []byte
	Dialect                string
	// Model and Stream are read from the body when it is a JSON object.
	Model  string
	Stream bool
	// Received is when the handler started; Finished when it returned (zero
	// while it runs).
	Received, Finished time.Time
	// Canceled is set when the client went away (its request context was
	// cancelled) before the handler finished; CanceledAt is when the server
	// noticed.
	Canceled   bool
	CanceledAt time.Time
	// ReplyID is the id a streamed reply carries in its events (chat
	// completion, message or response id), and Sent when the provider
	// began to write each of its events: what the provider did, to set
	// beside what a client read (the bench's per-chunk trace).
	ReplyID string
	Sent    []time.Time
}

// Option configures a Provider.
type Option func(*Provider)

// WithSeed changes the id sequence (default 1).
func WithSeed(seed uint64) Option { return func(p *Provider) { p.seed = seed } }

// WithCreated sets the timestamp reported as `created`/`created_at`.
func WithCreated(t time.Time) Option { return func(p *Provider) { p.created = t.Unix() } }

// Provider is the fake. It implements http.Handler and is safe for
// concurrent use.
type Provider struct {
	seed    uint64
	created int64

	mu       sync.Mutex
	gen      idGen
	records  []*Recorded
	script   []Reply
	def      func(Recorded) Reply
	canceled int
	changed  chan struct{} // closed and replaced on every record or cancel
	// byReply finds a streamed reply's record by its ReplyID.
	byReply map[string]*Recorded
}

// New returns a Provider that answers every request with the default reply.
func New(opts ...Option) *Provider {
	p := &Provider{seed: 1, created: DefaultCreated, changed: make(chan struct{}), byReply: map[string]*Recorded{}}
	for _, o := range opts {
		o(p)
	}
	p.gen = idGen{state: p.seed}
	return p
}

// Requests returns a copy of every request received, in arrival order.
func (p *Provider) Requests() []Recorded {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := make([]Recorded, len(p.records))
	for i, r := range p.records {
		out[i] = *r
		out[i].Header = r.Header.Clone()
		out[i].Sent = slices.Clone(r.Sent)
	}
	return out
}

// SentTimes is when the provider began to write each event of the
// streamed reply with id replyID, in order; nil for an id it did not
// stream since it was made or last Reset.
func (p *Provider) SentTimes(replyID string) []time.Time {
	p.mu.Lock()
	defer p.mu.Unlock()
	if r, ok := p.byReply[replyID]; ok {
		return slices.Clone(r.Sent)
	}
	return nil
}

// Reset forgets recorded requests, cancellations and scripted replies, and
// rewinds the id sequence. The SetDefault function is kept.
func (p *Provider) Reset() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.records = nil
	p.byReply = map[string]*Recorded{}
	p.script = nil
	p.canceled = 0
	p.gen = idGen{state: p.seed}
	p.notifyLocked()
}

// Script queues replies: each generation request (chat completions,
// messages, responses) takes the next one; when the queue is empty the
// default applies. Requests rejected for auth or a bad body take none.
func (p *Provider) Script(replies ...Reply) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.script = append(p.script, replies...)
}

// SetDefault sets the reply used when the script is empty; nil restores
// the built-in default (Reply{}).
func (p *Provider) SetDefault(fn func(r Recorded) Reply) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.def = fn
}

// Canceled counts requests whose client went away before the reply was
// finished.
func (p *Provider) Canceled() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.canceled
}

// WaitClosed blocks until at least n requests have been canceled by their
// client, or ctx ends.
func (p *Provider) WaitClosed(ctx context.Context, n int) error {
	return p.wait(ctx, func() bool { return p.canceled >= n })
}

// WaitRequests blocks until at least n requests have arrived, or ctx ends.
func (p *Provider) WaitRequests(ctx context.Context, n int) error {
	return p.wait(ctx, func() bool { return len(p.records) >= n })
}

func (p *Provider) wait(ctx context.Context, done func() bool) error {
	for {
		p.mu.Lock()
		ok, ch := done(), p.changed
		p.mu.Unlock()
		if ok {
			return nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

func (p *Provider) notifyLocked() {
	close(p.changed)
	p.changed = make(chan struct{})
}

// begin records the request and hands out the request's own id generator,
// so each reply's ids depend only on its position in the request order.
func (p *Provider) begin(r *http.Request, body []byte, dialect string) (*Recorded, *idGen) {
	rec := &Recorded{
		Method: r.Method, Path: r.URL.Path, RawQuery: r.URL.RawQuery,
		Header: r.Header.Clone(), Body: body, Dialect: dialect, Received: time.Now(),
	}
	var head struct {
		Model  string `json:"model"`
		Stream bool   `json:"stream"`
	}
	if json.Unmarshal(body, &head) == nil {
		rec.Model, rec.Stream = head.Model, head.Stream
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.records = append(p.records, rec)
	p.notifyLocked()
	return rec, &idGen{state: p.gen.u64()}
}

// streaming notes that rec is answered with a stream carrying replyID.
func (p *Provider) streaming(rec *Recorded, replyID string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	rec.ReplyID = replyID
	p.byReply[replyID] = rec
}

// sending notes that one of rec's streamed events is about to be written:
// before the write, so that a client never reads an event whose time is
// not noted yet.
func (p *Provider) sending(rec *Recorded, at time.Time) {
	p.mu.Lock()
	defer p.mu.Unlock()
	rec.Sent = append(rec.Sent, at)
}

func (p *Provider) markCanceled(rec *Recorded) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if rec.Canceled || !rec.Finished.IsZero() {
		return
	}
	rec.Canceled, rec.CanceledAt = true, time.Now()
	p.canceled++
	p.notifyLocked()
}

func (p *Provider) finish(rec *Recorded) {
	p.mu.Lock()
	defer p.mu.Unlock()
	rec.Finished = time.Now()
	p.notifyLocked()
}

// next pops the scripted reply or computes the default.
func (p *Provider) next(rec *Recorded) Reply {
	p.mu.Lock()
	if len(p.script) > 0 {
		r := p.script[0]
		p.script = p.script[1:]
		p.mu.Unlock()
		return r
	}
	def := p.def
	snapshot := *rec
	snapshot.Header = rec.Header.Clone()
	p.mu.Unlock()
	if def == nil {
		return Reply{}
	}
	return def(snapshot)
}

func dialectOf(path string) string {
	switch path {
	case "/v1/chat/completions":
		return DialectOpenAIChat
	case "/v1/messages", "/v1/messages/count_tokens":
		return DialectAnthropic
	case "/v1/responses":
		return DialectOpenAIResponses
	default:
		return DialectOther
	}
}

// ServeHTTP routes like the real APIs.
func (p *Provider) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(io.LimitReader(r.Body, maxBody))
	if err != nil {
		// The client is gone or sent a broken body; nothing to answer.
		return
	}
	path := strings.TrimSuffix(r.URL.Path, "/")
	rec, gen := p.begin(r, body, dialectOf(path))
	stop := context.AfterFunc(r.Context(), func() { p.markCanceled(rec) })
	defer func() {
		stop()
		// The handler may notice the cancellation (and return) before the
		// AfterFunc goroutine runs; mark it here so it is never lost.
		if r.Context().Err() != nil {
			p.markCanceled(rec)
		}
		p.finish(rec)
	}()

	x := &exchange{p: p, w: w, r: r, rec: rec, gen: gen, body: body}
	switch {
	case r.Method == http.MethodPost && path == "/v1/chat/completions":
		x.generate(DialectOpenAIChat)
	case r.Method == http.MethodPost && path == "/v1/messages":
		x.generate(DialectAnthropic)
	case r.Method == http.MethodPost && path == "/v1/responses":
		x.generate(DialectOpenAIResponses)
	case r.Method == http.MethodPost && path == "/v1/messages/count_tokens":
		x.countTokens()
	case r.Method == http.MethodGet && path == "/v1/models":
		x.models("")
	case r.Method == http.MethodGet && strings.HasPrefix(path, "/v1/models/"):
		x.models(strings.TrimPrefix(path, "/v1/models/"))
	case r.Method == http.MethodPost && path == "/v1/embeddings":
		x.embeddings()
	default:
		x.notFound()
	}
}

// exchange is one request being answered.
type exchange struct {
	p    *Provider
	w    http.ResponseWriter
	r    *http.Request
	rec  *Recorded
	gen  *idGen
	body []byte
}

// isAnthropicCaller tells the two dialects apart on shared paths.
func (x *exchange) isAnthropicCaller() bool {
	return x.r.Header.Get("x-api-key") != "" || x.r.Header.Get("anthropic-version") != ""
}

func bearer(r *http.Request) string {
	h := r.Header.Get("Authorization")
	if len(h) > 7 && strings.EqualFold(h[:7], "bearer ") {
		return strings.TrimSpace(h[7:])
	}
	return ""
}

func (x *exchange) authorize(dialect string) *apiError {
	if dialect != DialectAnthropic {
		if bearer(x.r) == "" {
			return openaiMissingKey()
		}
		return nil
	}
	if x.r.Header.Get("x-api-key") == "" && bearer(x.r) == "" {
		return &apiError{status: 401, message: "x-api-key header is required"}
	}
	if x.r.Header.Get("anthropic-version") == "" {
		return &apiError{status: 400, message: "anthropic-version: header is required"}
	}
	return nil
}

func (x *exchange) requestID(dialect string) string {
	if dialect == DialectAnthropic {
		return x.gen.anthropicReq()
	}
	return x.gen.openaiReq()
}

func (x *exchange) fail(dialect string, e *apiError) {
	writeError(x.w, dialect, e, x.requestID(dialect))
}

func (x *exchange) notFound() {
	if x.isAnthropicCaller() {
		x.fail(DialectAnthropic, &apiError{status: 404, message: "Not Found"})
		return
	}
	x.fail(DialectOpenAIChat, &apiError{status: 404, message: "Invalid URL (" + x.r.Method + " " + x.r.URL.Path + ")"})
}

// sleep waits d unless ctx ends first; it reports whether to go on.
func sleep(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return ctx.Err() == nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

func (x *exchange) generate(dialect string) {
	if e := x.authorize(dialect); e != nil {
		x.fail(dialect, e)
		return
	}
	var req *request
	var e *apiError
	switch dialect {
	case DialectOpenAIChat:
		req, e = parseOpenAIChat(x.body)
	case DialectAnthropic:
		req, e = parseAnthropic(x.body, false)
	default:
		req, e = parseOpenAIResponses(x.body)
	}
	if e != nil {
		x.fail(dialect, e)
		return
	}
	reply := x.p.next(x.rec)
	if !sleep(x.r.Context(), reply.FirstByteDelay) {
		return
	}
	if reply.Status != 0 && (reply.Status < 200 || reply.Status > 299) {
		if dialect == DialectAnthropic {
			x.fail(dialect, &apiError{status: reply.Status, message: reply.ErrorMessage})
		} else {
			x.fail(dialect, openaiStatusError(reply.Status, req.model, reply.ErrorMessage))
		}
		return
	}
	for _, tc := range reply.ToolCalls {
		if !validArgs(tc) {
			x.fail(dialect, &apiError{status: 500, message: "fakeprovider: ToolCall " + tc.Name + " has Arguments that are not a JSON object"})
			return
		}
	}
	pl := x.plan(reply, req)
	switch {
	case dialect == DialectOpenAIChat && req.stream:
		x.chatStream(pl, req)
	case dialect == DialectOpenAIChat:
		x.chatJSON(pl, req)
	case dialect == DialectAnthropic && req.stream:
		x.anthropicStream(pl)
	case dialect == DialectAnthropic:
		x.anthropicJSON(pl)
	case req.stream:
		x.responsesStream(pl, req)
	default:
		x.responsesJSON(pl, req)
	}
}

func (x *exchange) plan(reply Reply, req *request) *plan {
	if reply.Text == "" && len(reply.ToolCalls) == 0 {
		reply.Text = defaultText(req.lastUserText)
	}
	pl := &plan{Reply: reply, model: req.model, gen: x.gen, created: x.p.created}
	pl.chunks = splitText(reply.Text, reply.Chunks)
	out := len(reply.Text)
	pl.ToolCalls = make([]ToolCall, len(reply.ToolCalls))
	for i, tc := range reply.ToolCalls {
		if tc.Arguments == "" {
			tc.Arguments = "{}"
		}
		pl.ToolCalls[i] = tc
		pl.argParts = append(pl.argParts, splitArgs(tc.Arguments))
		out += len(tc.Name) + len(tc.Arguments)
	}
	if reply.Usage != nil {
		pl.usage = *reply.Usage
	} else {
		pl.usage = Usage{InputTokens: estimateTokens(len(x.body)), OutputTokens: estimateTokens(out)}
	}
	return pl
}
