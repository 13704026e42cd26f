package app

import (
	"crypto/subtle"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/perpetuity/perpetuity/memory"
	"github.com/perpetuity/perpetuity/memory/store"
	"github.com/perpetuity/perpetuity/proxy"
)

// metrics is the service's Prometheus registry, one per process (not the
// global default registry, so tests can run several servers).
type metrics struct {
	reg       *prometheus.Registry
	requests  *prometheus.CounterVec
	latency   *prometheus.HistogramVec
	stages    *prometheus.HistogramVec
	frameToks prometheus.Histogram
	routes    routeLabels
}

func newMetrics(eng *memory.Engine) *metrics {
	m := &metrics{reg: prometheus.NewRegistry()}
	m.requests = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "perpetuity_http_requests_total", Help: "HTTP requests by route template, dialect and status.",
	}, []string{"route", "method", "dialect", "status"})
	m.latency = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name: "perpetuity_http_request_duration_seconds", Help: "Time to the end of the response, by route template and dialect.",
		Buckets: prometheus.ExponentialBuckets(0.0005, 2, 16),
	}, []string{"route", "dialect"})
	m.stages = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name: "perpetuity_memory_stage_seconds", Help: "Memory engine stages: capture, catchup, scan, render.",
		Buckets: prometheus.ExponentialBuckets(0.0001, 2, 16),
	}, []string{"stage"})
	m.frameToks = prometheus.NewHistogram(prometheus.HistogramOpts{
		Name: "perpetuity_frame_tokens", Help: "Model tokens of rendered frames.",
		Buckets: prometheus.ExponentialBuckets(64, 2, 10),
	})
	residentItems := prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "perpetuity_arena_items", Help: "Items held resident by this process.",
	}, func() float64 { return float64(eng.Resident().Items) })
	residentBytes := prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "perpetuity_arena_bytes", Help: "Bytes of the resident arenas of this process.",
	}, func() float64 { return float64(eng.Resident().Bytes) })
	m.reg.MustRegister(m.requests, m.latency, m.stages, m.frameToks, residentItems, residentBytes, m.residency(eng),
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	eng.SetObserver(m)
	return m
}

// residency is the arena budget's figures (memory/budget.go): what is
// resident against the budget, and how often tenants load and are evicted.
// Load time is also the "load" stage of perpetuity_memory_stage_seconds.
func (m *metrics) residency(eng *memory.Engine) prometheus.Collector {
	return residencyCollector{eng: eng,
		tenants:   prometheus.NewDesc("perpetuity_arena_tenants", "Tenants with an arena resident in this process.", nil, nil),
		budget:    prometheus.NewDesc("perpetuity_arena_budget_bytes", "PERPETUITY_ARENA_BUDGET (0: unlimited).", nil, nil),
		peak:      prometheus.NewDesc("perpetuity_arena_peak_bytes", "The most bytes the resident arenas held at once.", nil, nil),
		loads:     prometheus.NewDesc("perpetuity_arena_loads_total", "Arenas loaded from scratch: first requests, reloads after eviction, dictionary flips.", nil, nil),
		evictions: prometheus.NewDesc("perpetuity_arena_evictions_total", "Arenas evicted to stay within the budget.", nil, nil),
		loadTime:  prometheus.NewDesc("perpetuity_arena_load_seconds_total", "Time spent loading arenas from scratch.", nil, nil),
	}
}

type residencyCollector struct {
	eng                                               *memory.Engine
	tenants, budget, peak, loads, evictions, loadTime *prometheus.Desc
}

func (c residencyCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.tenants, c.budget, c.peak, c.loads, c.evictions, c.loadTime} {
		ch <- d
	}
}

// Collect reads one snapshot, so the figures of a scrape agree.
func (c residencyCollector) Collect(ch chan<- prometheus.Metric) {
	s := c.eng.Resident()
	ch <- prometheus.MustNewConstMetric(c.tenants, prometheus.GaugeValue, float64(s.Tenants))
	ch <- prometheus.MustNewConstMetric(c.budget, prometheus.GaugeValue, float64(s.Budget))
	ch <- prometheus.MustNewConstMetric(c.peak, prometheus.GaugeValue, float64(s.Peak))
	ch <- prometheus.MustNewConstMetric(c.loads, prometheus.CounterValue, float64(s.Loads))
	ch <- prometheus.MustNewConstMetric(c.evictions, prometheus.CounterValue, float64(s.Evictions))
	ch <- prometheus.MustNewConstMetric(c.loadTime, prometheus.CounterValue, s.LoadTime.Seconds())
}

func (m *metrics) Duration(stage string, d time.Duration) {
	m.stages.WithLabelValues(stage).Observe(d.Seconds())
}
func (m *metrics) FrameTokens(n int) { m.frameToks.Observe(float64(n)) }

// middleware counts every request by its route template (never the raw
// path: keys travel in proxy paths and must not become label values), and
// every label from a fixed set (see labels.go).
func (m *metrics) middleware(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		start := time.Now()
		err := next(c)
		dialect := "none"
		if d := proxy.DialectOf(c); d != 0 {
			dialect = d.String()
		}
		status := c.Response().Status
		if err != nil && !c.Response().Committed {
			if he, ok := err.(*echo.HTTPError); ok {
				status = he.Code
			} else if ae, ok := err.(*proxy.APIError); ok {
				status = ae.Status
			} else {
				status = 500
			}
		}
		route := m.routes.of(c)
		m.requests.WithLabelValues(route, methodLabel(c.Request().Method), dialect, statusLabel(status)).Inc()
		m.latency.WithLabelValues(route, dialect).Observe(time.Since(start).Seconds())
		return err
	}
}

// accessLog writes one structured line per request. It logs the route
// template and never the raw path or headers, where keys travel, and the
// method as its label, so that a line has a bounded size. A request that
// failed is logged with the status the error handler is about to write
// and why (scrubbed of anything shaped like a key); a proxy request with
// the tenant its key belongs to, once known, and the key's public prefix,
// never the key.
func accessLog(log *slog.Logger, routes *routeLabels) echo.MiddlewareFunc {
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			start := time.Now()
			err := next(c)
			status := c.Response().Status
			attrs := []any{"request_id", c.Get("perpetuity.request_id"), "method", methodLabel(c.Request().Method),
				"route", routes.of(c)}
			if err != nil {
				s, kind, why := failure(err)
				if !c.Response().Committed {
					status = s // written by the error handler after this line
				}
				attrs = append(attrs, "error_kind", kind, "reason", why)
			}
			// Set by the proxy once the key resolves (proxy/identity.go).
			if t, ok := c.Get("perpetuity.tenant_id").(int64); ok && t != 0 {
				attrs = append(attrs, "tenant", t)
			}
			if p := keyPrefix(c); p != "" {
				attrs = append(attrs, "key_prefix", p)
			}
			attrs = append(attrs, "status", status, "ms", float64(time.Since(start).Microseconds())/1000, "failed", err != nil)
			log.Info("request", attrs...)
			return err
		}
	}
}

// maxReason bounds the reason a log line gives for a failure.
const maxReason = 300

// failure is the status an error is answered with (as errorHandler and
// Echo's own handler answer it), its kind, and its message for the log.
func failure(err error) (status int, kind, reason string) {
	var ae *proxy.APIError
	var he *echo.HTTPError
	switch {
	case errors.As(err, &ae):
		status, kind, reason = ae.Status, ae.Kind.String(), ae.Message
	case errors.As(err, &he):
		status, kind, reason = he.Code, kindFor(he.Code).String(), fmt.Sprint(he.Message)
	default:
		status, kind, reason = http.StatusInternalServerError, proxy.Internal.String(), err.Error()
	}
	if reason == "" {
		reason = kind
	}
	reason = redactSecrets(reason)
	if len(reason) > maxReason {
		reason = strings.ToValidUTF8(reason[:maxReason], "") + "…"
	}
	return status, kind, reason
}

// keyPrefix is the public prefix of the Perpetuity key a request names in
// its path or header, as the console lists keys; empty when it names none,
// or something that is not a Perpetuity key (a provider key sent by
// mistake gets nothing of it logged).
func keyPrefix(c echo.Context) string {
	k := c.Param("key")
	if k == "" {
		k = strings.TrimSpace(c.Request().Header.Get(proxy.HeaderKey))
	}
	if !strings.HasPrefix(k, store.KeyPrefix) {
		return ""
	}
	p := store.ShortPrefix(k)
	for _, r := range p {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' || r == '-') {
			return ""
		}
	}
	return p
}

// handler serves the registry; with a token, only to a request bearing it
// (compared in constant time), as a scraper sends it.
func (m *metrics) handler(token string) echo.HandlerFunc {
	serve := echo.WrapHandler(promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{}))
	if token == "" {
		return serve
	}
	want := []byte("Bearer " + token)
	return func(c echo.Context) error {
		if subtle.ConstantTimeCompare([]byte(c.Request().Header.Get(echo.HeaderAuthorization)), want) != 1 {
			c.Response().Header().Set(echo.HeaderWWWAuthenticate, `Bearer realm="metrics"`)
			return c.String(http.StatusUnauthorized, "metrics need the bearer token PERPETUITY_METRICS_TOKEN sets\n")
		}
		return serve(c)
	}
}
