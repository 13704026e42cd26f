package app

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"regexp"
	"sync/atomic"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/labstack/echo/v4/middleware"

	"github.com/perpetuity/perpetuity/memory"
	"github.com/perpetuity/perpetuity/memory/importer"
	"github.com/perpetuity/perpetuity/memory/store"
	"github.com/perpetuity/perpetuity/migrations"
	"github.com/perpetuity/perpetuity/proxy"
	"github.com/perpetuity/perpetuity/proxy/translate"
	"github.com/perpetuity/perpetuity/web"
)

func runServe(ctx context.Context, e env, args []string) error {
	fs := newFlags(e, "serve", "serve   (configured by the environment variables of `perpetuity --help`)")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() != 0 {
		return UsageError{"usage: perpetuity serve (no arguments; configuration comes from the environment)"}
	}
	cfg, err := LoadConfig(e.getenv)
	if err != nil {
		return err
	}
	if cfg.DatabaseURL == "" {
		return errors.New("DATABASE_URL: required (`make run` finds or starts a PostgreSQL for you)")
	}
	return serve(ctx, e, cfg, nil)
}

func newLogger(e env, level string) *slog.Logger {
	var l slog.Level
	_ = l.UnmarshalText([]byte(level))
	return slog.New(slog.NewJSONHandler(e.stderr, &slog.HandlerOptions{Level: l}))
}

// serve applies migrations, wires every part and serves until ctx ends.
// ready, when set, is told the bound address (tests listen on port 0).
func serve(ctx context.Context, e env, cfg Config, ready func(addr string)) error {
	log := newLogger(e, cfg.LogLevel)
	if err := migrations.Up(cfg.DatabaseURL); err != nil {
		return err
	}
	db, err := store.Open(ctx, cfg.DatabaseURL)
	if err != nil {
		return err
	}
	defer db.Close()
	warnDurability(ctx, db, log)
	eng, graph, err := newServingEngine(ctx, cfg, db, log)
	if err != nil {
		return err
	}
	// The chain writer runs until serve returns; it holds nothing a crash
	// would lose (its watermark is stored with its edges).
	gctx, stopGraph := context.WithCancel(ctx)
	defer stopGraph()
	go graph.Run(gctx)
	go sweepInspections(gctx, db, cfg.Shard, cfg.InspectRetention, log)
	px := proxy.New(proxy.Config{
		OpenAIBaseURL: cfg.OpenAIBaseURL, AnthropicBaseURL: cfg.AnthropicBaseURL,
		OpenRouterBaseURL: cfg.OpenRouterBaseURL, Upstreams: cfg.Upstreams, ToolRounds: cfg.ToolRounds,
		MaxBodyBytes: cfg.MaxBodyBytes, CaptureTimeout: cfg.CaptureTimeout, FrameCeiling: cfg.FrameCeiling,
		Limits: db, KeyRPM: cfg.KeyRPM, KeyTPM: cfg.KeyTPM, KeyUsersPerDay: cfg.KeyUsersPerDay,
		InspectRetention: cfg.InspectRetention,
	}, db, eng, log)

	met := newMetrics(eng)
	ec := NewRouter(log, met.middleware)
	ec.IPExtractor = ipExtractor(cfg.TrustedProxies)
	ec.GET("/metrics", met.handler(cfg.MetricsToken))
	px.Register(ec)
	mountImport(ec, importer.New(proxy.ImportDirectory{Store: db, PerDay: cfg.KeyUsersPerDay}, eng, importer.CaptureTimeout(cfg.CaptureTimeout)), px, cfg.MaxBodyBytes, log)
	ec.GET("/healthz", func(c echo.Context) error { return c.String(http.StatusOK, "ok\n") })
	var draining atomic.Bool // set when a stop begins: /readyz fails first
	ec.GET("/readyz", readyz(db, eng, &draining))
	go func() {
		tenants, err := db.Tenants(ctx)
		if err == nil {
			ids := make([]int64, 0, len(tenants))
			for _, t := range tenants {
				if cfg.Shard.Owns(t.ID) { // the others load on their first request here
					ids = append(ids, t.ID)
				}
			}
			if err = eng.Warm(ctx, ids); err == nil {
				log.Info("arenas warmed", "shard", cfg.Shard.String(), "owned", len(ids), "resident", eng.Resident().Tenants)
			}
		}
		if err != nil && ctx.Err() == nil {
			log.Error("arena warm-up failed", "err", err)
		}
	}()
	console, err := web.New(web.Config{
		PublicURL:        cfg.PublicURL,
		SecureCookies:    cfg.ServedOverTLS(),
		KeyChanged:       px.ForgetKey,
		InspectRetention: cfg.InspectRetention,
	}, db, web.NewEngineMemory(db, eng), log)
	if err != nil {
		return fmt.Errorf("console: %w", err)
	}
	console.SetArenas(eng) // integrity checks from the console compare this process's arenas
	console.Register(ec)

	srv := &http.Server{
		// No WriteTimeout or ReadTimeout: proxy streams run as long as the
		// provider talks. Bodies get a deadline of their own.
		Handler:           bodyDeadline{next: ec, timeout: cfg.BodyTimeout, maxBytes: cfg.MaxBodyBytes, budget: &bodyBudget{max: cfg.BodyBudget}},
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       120 * time.Second,
	}
	ln, err := net.Listen("tcp", cfg.Addr)
	if err != nil {
		return fmt.Errorf("PERPETUITY_ADDR: listen on %s: %w", cfg.Addr, err)
	}
	log.Info("perpetuity serving", "addr", ln.Addr().String(), "public_url", cfg.PublicURL)
	if ready != nil {
		ready(ln.Addr().String())
	}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		log.Error("perpetuity stopped serving", "err", err)
		return err
	case <-ctx.Done():
	}
	return drain(srv, px, eng, &draining, cfg, context.Cause(ctx), log)
}

// drain stops a serving replica the way a rolling restart needs: /readyz
// fails at once so the balancer takes the replica out of rotation, the
// listener stays open for cfg.DrainReadyDelay while the balancer notices,
// then closes; requests in flight get cfg.DrainTimeout to finish, and
// those still running are cut, each ending with its dialect's error event
// (proxy.Cut) rather than a dropped connection. The operator sees one
// line when the drain begins and one when it ends, with what finished and
// what was cut.
func drain(srv *http.Server, px *proxy.Proxy, eng *memory.Engine, draining *atomic.Bool, cfg Config, reason error, log *slog.Logger) error {
	draining.Store(true)
	start := time.Now()
	timeout := cfg.DrainTimeout // LoadConfig holds it to 1s..1h
	at := px.Counts()
	log.Info("perpetuity shutting down", "reason", reason.Error(), "in_flight", at.InFlight,
		"ready_delay_s", cfg.DrainReadyDelay.Seconds(), "drain_timeout_s", timeout.Seconds())
	// The drain time counts from the stop, the ready delay included: an
	// orchestrator's kill deadline does too.
	cutAt := time.AfterFunc(timeout, px.Cut)
	defer cutAt.Stop()
	if cfg.DrainReadyDelay > 0 {
		time.Sleep(min(cfg.DrainReadyDelay, timeout))
	}
	sctx, cancel := context.WithTimeout(context.Background(), timeout+cutGrace)
	defer cancel()
	ended := func(msg string, args ...any) {
		now := px.Counts()
		args = append(args, "finished", now.Finished-at.Finished, "cut", now.Cut-at.Cut, "ms", time.Since(start).Milliseconds())
		if msg == "perpetuity shut down" {
			log.Info(msg, args...)
		} else {
			log.Error(msg, args...)
		}
	}
	if err := srv.Shutdown(sctx); err != nil {
		// Cut requests end within cutGrace; one that did not (a handler
		// stuck outside the proxy) loses its connection now.
		_ = srv.Close()
		ended("perpetuity shutdown incomplete", "step", "requests", "err", err)
		return fmt.Errorf("shutdown: %w", err)
	}
	// Reply captures run after their response; a cut reply's capture
	// starts at the cut, so it gets a capture's own time.
	cctx, ccancel := context.WithTimeout(context.Background(), max(cfg.CaptureTimeout, cutGrace))
	defer ccancel()
	if err := px.Drain(cctx); err != nil {
		ended("perpetuity shutdown incomplete", "step", "reply captures", "err", err)
		return fmt.Errorf("shutdown: reply captures still running: %w", err)
	}
	eng.WaitReheats()
	ended("perpetuity shut down")
	return nil
}

// cutGrace is how long cut requests get to write their error event and end.
const cutGrace = 5 * time.Second

// NewRouter is the Echo instance serve hangs every route on: the one error
// handler, panic recovery, then mw (serve passes its metrics), the access
// log and the mapping of a body that missed its deadline to a 408 (or was
// refused for the body budget to a 503), in that order. Exported as a seam: the reliability suite drives this
// same chain with a handler that panics, which no real route does.
func NewRouter(log *slog.Logger, mw ...echo.MiddlewareFunc) *echo.Echo {
	ec := echo.New()
	ec.HideBanner, ec.HidePort = true, true
	ec.HTTPErrorHandler = errorHandler(ec, log)
	routes := &routeLabels{}
	ec.Use(middleware.RecoverWithConfig(middleware.RecoverConfig{
		// Into the service's log rather than Echo's (stdout), scrubbed: a
		// panic value may carry whatever was in scope, keys included.
		LogErrorFunc: func(c echo.Context, err error, stack []byte) error {
			log.Error("panic recovered", "request_id", c.Get("perpetuity.request_id"), "route", routes.of(c),
				"panic", redactSecrets(err.Error()), "stack", redactSecrets(string(stack)))
			return errPanicked
		},
	}))
	ec.Use(mw...)
	ec.Use(accessLog(log, routes), bodyTimeoutStatus)
	return ec
}

// errPanicked is what a recovered panic becomes: the panic value is logged
// (scrubbed) once, never carried on into error handling or a response.
var errPanicked = errors.New("panic recovered")

// secretShape is what a Perpetuity or provider key looks like. Error text
// bound for the log is scrubbed of them.
var secretShape = regexp.MustCompile(`\b(ppk_|sk-)[A-Za-z0-9_-]{6,}`)

func redactSecrets(s string) string { return secretShape.ReplaceAllString(s, "${1}[redacted]") }

// errorHandler is the service's one place that maps errors to HTTP: proxy
// routes answer in their caller's dialect (as an SSE error event once a
// stream has started), everything else through Echo's default.
func errorHandler(ec *echo.Echo, log *slog.Logger) echo.HTTPErrorHandler {
	return func(err error, c echo.Context) {
		if proxy.DialectOf(c) != 0 {
			var ae *proxy.APIError
			if !errors.As(err, &ae) {
				var he *echo.HTTPError
				if errors.As(err, &he) {
					err = &proxy.APIError{Status: he.Code, Kind: kindFor(he.Code), Message: fmt.Sprint(he.Message)}
				} else {
					log.Error("proxy request failed", "request_id", c.Get("perpetuity.request_id"), "err", redactSecrets(err.Error()))
				}
			}
			proxy.WriteError(c, err)
			return
		}
		ec.DefaultHTTPErrorHandler(err, c)
	}
}

// kindFor is the kind of an HTTP error by translate's status table: the
// kind whose error type the table names; a type with no kind of its own
// (billing, timeout) is a server error at 5xx and the client's below.
func kindFor(status int) proxy.ErrorKind {
	typ := translate.StatusErrorType(status)
	for _, k := range []proxy.ErrorKind{proxy.Authentication, proxy.Permission, proxy.NotFound,
		proxy.RequestTooLarge, proxy.RateLimited, proxy.Overloaded} {
		if k.String() == typ {
			return k
		}
	}
	if status >= 500 {
		return proxy.Internal
	}
	return proxy.InvalidRequest
}

// readyz answers 200 once the database answers, the schema is at the
// binary's latest migration and the resident arenas are loaded, and 503
// from the moment the replica begins to stop.
func readyz(db *store.DB, eng *memory.Engine, draining *atomic.Bool) echo.HandlerFunc {
	return func(c echo.Context) error {
		if draining.Load() {
			// A replica told to stop leaves the rotation before anything
			// else: the checks below would still pass.
			return c.JSON(http.StatusServiceUnavailable, map[string]string{"draining": "stopping"})
		}
		ctx, cancel := context.WithTimeout(c.Request().Context(), 2*time.Second)
		defer cancel()
		checks := map[string]string{"database": "ok", "migrations": "ok", "arenas": "ok"}
		ok := true
		if err := db.Pool.Ping(ctx); err != nil {
			checks["database"], ok = "unreachable", false
		}
		var v int64
		latest, _ := migrations.Latest()
		if err := db.Pool.QueryRow(ctx, "SELECT version FROM schema_migrations WHERE NOT dirty").Scan(&v); err != nil || uint(v) != latest {
			checks["migrations"], ok = fmt.Sprintf("at %d, want %d", v, latest), false
		}
		if !eng.Ready() {
			checks["arenas"], ok = "loading", false
		}
		status := http.StatusOK
		if !ok {
			status = http.StatusServiceUnavailable
		}
		return c.JSON(status, checks)
	}
}

// warnDurability says loudly when the database may lose acknowledged
// commits: memory acknowledged to a client must survive a crash.
func warnDurability(ctx context.Context, db *store.DB, log *slog.Logger) {
	for _, setting := range []string{"fsync", "synchronous_commit"} {
		var v string
		if err := db.Pool.QueryRow(ctx, "SELECT current_setting($1)", setting).Scan(&v); err != nil {
			log.Warn("could not read a durability setting", "setting", setting, "err", err)
			continue
		}
		if v == "off" {
			log.Error("DURABILITY WARNING: PostgreSQL runs with "+setting+"=off; captured turns acknowledged to clients can be lost in a crash",
				"setting", setting, "value", v)
		}
	}
}
