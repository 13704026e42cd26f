package app

import (
	"log/slog"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/perpetuity/perpetuity/memory"
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
	m.reg.MustRegister(m.requests, m.latency, m.stages, m.frameToks, residentItems, residentBytes,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	eng.SetObserver(m)
	return m
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
// method as its label, so that a line has a bounded size.
func accessLog(log *slog.Logger, routes *routeLabels) echo.MiddlewareFunc {
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			start := time.Now()
			err := next(c)
			status := c.Response().Status
			if err != nil && !c.Response().Committed {
				status = 0 // written by the error handler after this line
			}
			log.Info("request", "request_id", c.Get("perpetuity.request_id"), "method", methodLabel(c.Request().Method),
				"route", routes.of(c), "status", status, "ms", float64(time.Since(start).Microseconds())/1000, "failed", err != nil)
			return err
		}
	}
}

func (m *metrics) handler() echo.HandlerFunc {
	return echo.WrapHandler(promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{}))
}
