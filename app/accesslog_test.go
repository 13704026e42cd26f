package app

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/perpetuity/perpetuity/migrations/dbtest"
	"github.com/perpetuity/perpetuity/proxy"
)

// TestAccessLogSaysWhyARequestFailed is issue 18, finding 3: a refused
// request is logged with the status its client gets, the kind and message
// of the refusal, the tenant once the key resolved, and the key's public
// prefix, never the key (nor a provider key sent in its place).
func TestAccessLogSaysWhyARequestFailed(t *testing.T) {
	t.Parallel()
	var buf syncBuffer
	ec := NewRouter(slog.New(slog.NewJSONHandler(&buf, nil)))
	ec.HTTPErrorHandler = func(err error, c echo.Context) { _ = c.NoContent(failureStatus(err)) }
	const key = "ppk_AbCdEfSecretPartOfTheKey0123456789abcdefgh"
	ec.POST("/k/:key/v1/chat/completions", func(c echo.Context) error {
		if c.Request().Header.Get("X-Known") != "" {
			c.Set("perpetuity.tenant_id", int64(42))
			return &proxy.APIError{Status: http.StatusNotFound, Kind: proxy.NotFound, Message: "unknown model \"nope\" (key " + key + ")"}
		}
		return &proxy.APIError{Status: http.StatusUnauthorized, Kind: proxy.Authentication, Message: "invalid or revoked Perpetuity key"}
	})
	ec.GET("/boom", func(echo.Context) error { return errors.New("db down for sk-proj-abcdefghijkl") })
	ec.GET("/gone", func(echo.Context) error { return echo.NewHTTPError(http.StatusGone, "gone away") })
	ec.GET("/fine", func(c echo.Context) error { return c.String(http.StatusOK, "ok") })

	cases := []struct {
		name, method, path string
		header             map[string]string
		status             int
		kind, reason       string
		tenant             float64
		prefix             string
	}{
		{"revoked key", http.MethodPost, "/k/" + key + "/v1/chat/completions", nil, 401, "authentication_error", "invalid or revoked Perpetuity key", 0, key[:10]},
		{"unknown model", http.MethodPost, "/k/" + key + "/v1/chat/completions", map[string]string{"X-Known": "1"}, 404, "not_found_error", `unknown model "nope" (key ppk_[redacted])`, 42, key[:10]},
		{"provider key as the key", http.MethodPost, "/k/sk-proj-abcdefghijkl/v1/chat/completions", nil, 401, "authentication_error", "invalid or revoked Perpetuity key", 0, ""},
		{"internal error", http.MethodGet, "/boom", nil, 500, "api_error", "db down for sk-[redacted]", 0, ""},
		{"http error", http.MethodGet, "/gone", nil, 410, "invalid_request_error", "gone away", 0, ""},
		{"success", http.MethodGet, "/fine", nil, 200, "", "", 0, ""},
	}
	for _, c := range cases {
		before := len(buf.String())
		req := httptest.NewRequest(c.method, c.path, strings.NewReader("{}"))
		for k, v := range c.header {
			req.Header.Set(k, v)
		}
		rec := httptest.NewRecorder()
		ec.ServeHTTP(rec, req)
		line := strings.TrimSpace(buf.String()[before:])
		var rec2 map[string]any
		if err := json.Unmarshal([]byte(line), &rec2); err != nil {
			t.Fatalf("%s: log line %q: %v", c.name, line, err)
		}
		if rec2["status"] != float64(c.status) || rec.Code != c.status {
			t.Errorf("%s: logged status %v, answered %d, want %d", c.name, rec2["status"], rec.Code, c.status)
		}
		if got, _ := rec2["error_kind"].(string); got != c.kind {
			t.Errorf("%s: error_kind %q, want %q", c.name, got, c.kind)
		}
		if got, _ := rec2["reason"].(string); got != c.reason {
			t.Errorf("%s: reason %q, want %q", c.name, got, c.reason)
		}
		if got, _ := rec2["tenant"].(float64); got != c.tenant {
			t.Errorf("%s: tenant %v, want %v", c.name, got, c.tenant)
		}
		if got, _ := rec2["key_prefix"].(string); got != c.prefix {
			t.Errorf("%s: key_prefix %q, want %q", c.name, got, c.prefix)
		}
		if failed, _ := rec2["failed"].(bool); failed != (c.kind != "") {
			t.Errorf("%s: failed %v", c.name, failed)
		}
		for _, secret := range []string{key, "SecretPart", "sk-proj-abcdefghijkl"} {
			if strings.Contains(line, secret) {
				t.Errorf("%s: the log line holds %q: %s", c.name, secret, line)
			}
		}
	}
}

// failureStatus answers as the service's error handlers do.
func failureStatus(err error) int {
	s, _, _ := failure(err)
	return s
}

// TestServeLogsShutdown: serve says when a stop begins and when it has
// finished, so an operator can tell a clean stop from a crash.
func TestServeLogsShutdown(t *testing.T) {
	t.Parallel()
	vars := map[string]string{"DATABASE_URL": dbtest.New(t), "PERPETUITY_ADDR": "127.0.0.1:0"}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var out, errs syncBuffer
	e := env{getenv: func(k string) string { return vars[k] }, stdout: &out, stderr: &errs}
	done := make(chan error, 1)
	go func() { done <- run(ctx, e, []string{"serve"}) }()
	deadline := time.Now().Add(30 * time.Second)
	for !strings.Contains(errs.String(), "perpetuity serving") {
		if time.Now().After(deadline) {
			t.Fatalf("serve did not start:\n%s", errs.String())
		}
		select {
		case err := <-done:
			t.Fatalf("serve ended: %v\n%s", err, errs.String())
		case <-time.After(20 * time.Millisecond):
		}
	}
	if strings.Contains(errs.String(), "shutting down") {
		t.Fatal("a shutdown line before any stop")
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("serve: %v", err)
	}
	var began, ended bool
	for _, line := range strings.Split(strings.TrimSpace(errs.String()), "\n") {
		var r struct {
			Msg   string   `json:"msg"`
			Level string   `json:"level"`
			MS    *float64 `json:"ms"`
		}
		if json.Unmarshal([]byte(line), &r) != nil {
			continue
		}
		switch r.Msg {
		case "perpetuity shutting down":
			began = !ended
		case "perpetuity shut down":
			ended = began && r.Level == "INFO" && r.MS != nil
		}
	}
	if !began || !ended {
		t.Fatalf("shutdown logged began=%v ended=%v:\n%s", began, ended, errs.String())
	}
}
