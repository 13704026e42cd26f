// Package proxy is the request pipeline (DESIGN §2): identify, capture the
// live message, retrieve and render the frame, forward to the provider,
// stream the reply back, capture the reply.
//
// Three inbound dialects (OpenAI chat completions, Anthropic messages,
// OpenAI Responses) meet OpenAI-compatible and Anthropic upstreams. The
// provider is detected from the credential's and the model name's shape
// (proxy/provider); one adapter per (inbound dialect, provider dialect) pair is
// chosen by the switch in route.go. Crossing adapters render the frame in
// the inbound dialect and translate the result (proxy/translate); replies
// are translated back event by event, while capture follows the provider's
// own events. The Responses API goes to OpenAI-compatible upstreams only
// (responses.go). The memory tools run inside the reply, in the provider's
// dialect, over as many provider calls as the model needs within a bound
// (proxy/toolloop); the harness sees one reply.
package proxy

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/perpetuity/perpetuity/memory"
	"github.com/perpetuity/perpetuity/memory/guard"
	"github.com/perpetuity/perpetuity/memory/store"
	"github.com/perpetuity/perpetuity/proxy/dialect"
	"github.com/perpetuity/perpetuity/proxy/limits"
	"github.com/perpetuity/perpetuity/proxy/provider"
	"github.com/perpetuity/perpetuity/proxy/translate"
)

// Upstream is an OpenAI-compatible server the operator declared.
type Upstream = provider.Upstream

// ParseUpstreams reads PERPETUITY_UPSTREAMS (provider.ParseUpstreams).
func ParseUpstreams(s string) ([]Upstream, error) { return provider.ParseUpstreams(s) }

// Memory is what the pipeline needs from the memory engine.
type Memory interface {
	Capture(ctx context.Context, m memory.Message) (store.Captured, error)
	Frame(ctx context.Context, q memory.FrameQuery) (memory.Frame, error)
	// FrameBeside builds the frame while capture stores the live question,
	// and returns once capture did; q's live items come from it (capture
	// hands the Beside's hooks to its memory.Message).
	FrameBeside(ctx context.Context, q memory.FrameQuery, capture func(b memory.Beside) (store.Captured, error)) (store.Captured, memory.Frame, error)
	// RunTool runs one memory tool call of the turn whose frame st was
	// started from; bad arguments come back as result text.
	RunTool(ctx context.Context, st *memory.ToolState, name string, args json.RawMessage) (string, error)
	// Erasures counts the tenant's purges and redactions this process has
	// applied: a cached conversation id older than a change of it is
	// looked up again (convcache.go).
	Erasures(tenantID int64) uint64
}

// Config is the proxy's share of the service configuration.
type Config struct {
	OpenAIBaseURL    string // includes /v1
	AnthropicBaseURL string // without /v1
	// OpenRouterBaseURL includes /api/v1; empty means
	// provider.DefaultOpenRouterBaseURL.
	OpenRouterBaseURL string
	// Upstreams are the operator's OpenAI-compatible servers (ParseUpstreams).
	Upstreams      []Upstream
	MaxBodyBytes   int64
	CaptureTimeout time.Duration
	FrameCeiling   int
	// ToolRounds bounds the provider calls of one request when the model
	// uses the memory tools; the last must answer. 0 means 3; 1 turns the
	// tools off.
	ToolRounds int
	// Limits reads tenants' own per-key limits (proxy/limits); nil means
	// every tenant has KeyRPM and KeyTPM. 0 is unlimited.
	Limits         limits.Source
	KeyRPM, KeyTPM int
	// KeyUsersPerDay bounds the memory users one key may create per UTC
	// day (users.go); 0 is unlimited.
	KeyUsersPerDay int
	// WriteStall is how long one write to a client may stall; 0 means a
	// minute. Streams have no deadline between writes (a provider may think
	// for minutes), only on each write, so a client that stops reading is
	// dropped, freeing its handler and the provider's generation.
	WriteStall time.Duration
	// KeepAlive is how long a stream may go without a byte to the client
	// while the proxy holds back the provider's events (keepalive.go); 0
	// means 15 seconds.
	KeepAlive time.Duration
	// InspectRetention is how long the request inspector keeps what a
	// request's provider received and answered (inspect.go); 0 keeps none.
	InspectRetention time.Duration
}

// Proxy serves the provider-shaped routes.
type Proxy struct {
	cfg       Config
	providers provider.Set
	tr        *translate.Translator
	dir       Directory
	mem       Memory
	log       *slog.Logger
	client    *http.Client
	// after tracks reply captures still running once their response ended,
	// and the key and limit caches' background reads.
	after sync.WaitGroup

	keys   *keyCache
	convs  *convCache
	chains *responseChains
	// answering holds the questions whose reply is still to be captured,
	// for a client repeating one (answering.go).
	answering *answering
	frames    *loopFrames // a tool loop's frame, for its next rounds (loopframes.go)
	limits    *limits.Limiter
	records   *recordBatcher
	touched   *every // by key id: its "last used" write
	pruned    *every // by tenant id: the inspector's prune of expired records

	// cutCtx ends when the server cuts the requests in flight (drain.go).
	cutCtx                   context.Context
	cutNow                   context.CancelFunc
	inFlight, finished, cuts atomic.Int64
}

// ForgetKey drops this process's cached copy of a key, so that a change
// made to it here (the console's revoke, rotation or limits) holds on the
// next request rather than within the cache's TTL.
func (p *Proxy) ForgetKey(keyID int64) { p.keys.forget(keyID) }

// Drain waits for reply captures still in flight and writes the request
// records waiting for their batch, for a clean shutdown.
func (p *Proxy) Drain(ctx context.Context) error {
	// The batch holds a count on p.after until written, so the wait below
	// bounds this write by ctx too.
	go p.records.flushNow()
	done := make(chan struct{})
	go func() { p.after.Wait(); close(done) }()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// New builds the proxy.
func New(cfg Config, dir Directory, mem Memory, log *slog.Logger) *Proxy {
	tr := &http.Transport{
		Proxy:                 nil, // upstreams come from configuration only
		DialContext:           (&net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		MaxIdleConns:          1024,
		MaxIdleConnsPerHost:   256,
		IdleConnTimeout:       90 * time.Second,
		TLSHandshakeTimeout:   10 * time.Second,
		ExpectContinueTimeout: time.Second,
		ForceAttemptHTTP2:     true,
	}
	cutCtx, cutNow := context.WithCancel(context.Background())
	p := &Proxy{cutCtx: cutCtx, cutNow: cutNow, cfg: cfg, providers: provider.NewSet(provider.Config{OpenAIBaseURL: cfg.OpenAIBaseURL, AnthropicBaseURL: cfg.AnthropicBaseURL,
		OpenRouterBaseURL: cfg.OpenRouterBaseURL, Upstreams: cfg.Upstreams}), tr: translate.New(log, nil), dir: dir, mem: mem, log: log,
		client: &http.Client{Transport: tr, CheckRedirect: noRedirects}, touched: newEvery(touchInterval), pruned: newEvery(pruneInterval), convs: newConvCache(), chains: newResponseChains(), frames: newLoopFrames(), answering: newAnswering()}
	p.records = newRecordBatcher(dir.RecordRequests, &p.after, cfg.CaptureTimeout, log)
	// Background refreshes of the key and limit caches are tracked with the
	// reply captures, so Drain waits for them too.
	p.keys = newKeyCache(keyCacheTTL, p.background)
	p.limits = limits.New(cfg.Limits, store.Limits{RequestsPerMinute: cfg.KeyRPM, TokensPerMinute: cfg.KeyTPM}, time.Now, log, p.background)
	return p
}

// background runs f off the request path, tracked by after; a panic in
// it is logged, not the process's end (memory/guard).
func (p *Proxy) background(f func()) {
	p.after.Add(1)
	go func() {
		defer p.after.Done()
		p.guarded("background work", f)
	}()
}

// guarded runs f, logging a panic in it as what failed: work off the
// request's goroutine, which Echo's recovery does not cover.
func (p *Proxy) guarded(what string, f func(), attrs ...any) {
	if err := guard.Run(func() error { f(); return nil }); err != nil {
		p.log.Error(what+" panicked", append(attrs, "err", err)...)
	}
}

// noRedirects keeps the client from following a provider's redirect: the
// target could be any address, an internal one included, and would get the
// caller's credential and, on a 307 or 308, the whole request, frame and
// all. The 3xx itself comes back, and the routes turn it into a 502
// (redirected).
func noRedirects(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }

// Register mounts the proxy routes. The key travels in the path (so that
// changing a harness's base URL is enough) or in X-Perpetuity-Key.
func (p *Proxy) Register(e *echo.Echo) {
	for _, prefix := range []string{"/k/:key/v1", "/v1"} {
		g := e.Group(prefix, p.tagDialect)
		g.POST("/chat/completions", p.chat(dialect.OpenAIChat))
		g.POST("/messages", p.chat(dialect.AnthropicMessages))
		g.POST("/responses", p.chat(dialect.OpenAIResponses))
		g.Any("/*", p.passthrough)
	}
}

// dialectKey is where the error handler finds the dialect to answer in.
const dialectKey = "perpetuity.dialect"

// DialectOf reports the dialect a proxy route answers in (0 outside the proxy).
func DialectOf(c echo.Context) dialect.Dialect {
	d, _ := c.Get(dialectKey).(dialect.Dialect)
	return d
}

func (p *Proxy) tagDialect(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		c.Set(dialectKey, guessDialect(c.Request()))
		rid := newRequestID()
		c.Set("perpetuity.request_id", rid)
		h := c.Response().Header()
		h.Set(HeaderRequestID, rid)
		setSecurityHeaders(h)
		return next(c)
	}
}

// guessDialect picks the error dialect for a route before the body is read:
// the messages route and Anthropic-style credentials speak Anthropic.
func guessDialect(r *http.Request) dialect.Dialect {
	path := r.URL.Path
	if strings.HasSuffix(path, "/messages") {
		return dialect.AnthropicMessages
	}
	if strings.HasSuffix(path, "/responses") {
		return dialect.OpenAIResponses
	}
	if r.Header.Get("x-api-key") != "" || r.Header.Get("anthropic-version") != "" {
		return dialect.AnthropicMessages
	}
	return dialect.OpenAIChat
}

func newRequestID() string {
	b := make([]byte, 12)
	_, _ = rand.Read(b)
	return "req_" + hex.EncodeToString(b)
}

// WriteError is the proxy half of the service's one error handler: before
// the response started, the dialect's error JSON with its status; after a
// stream started, the dialect's in-band SSE error event.
func WriteError(c echo.Context, err error) {
	d := DialectOf(c)
	res := c.Response()
	if res.Committed {
		if isEventStream(res.Header().Get(echo.HeaderContentType)) {
			_, _ = res.Write(StreamErrorEvent(d, err))
			_ = http.NewResponseController(res).Flush()
		}
		return
	}
	status, body := ErrorBody(d, err)
	if ae, ok := err.(*APIError); ok && ae.RetryAfter != "" {
		res.Header().Set("Retry-After", ae.RetryAfter)
	}
	res.Header().Set(echo.HeaderContentType, echo.MIMEApplicationJSON)
	res.WriteHeader(status)
	_, _ = res.Write(body)
}

func isEventStream(ct string) bool {
	return len(ct) >= len("text/event-stream") && ct[:len("text/event-stream")] == "text/event-stream"
}
