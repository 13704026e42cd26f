package app

import (
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/perpetuity/perpetuity/migrations/dbtest"
)

// TestMetricsToken: with PERPETUITY_METRICS_TOKEN set, /metrics answers
// only a request bearing it; without it, anyone.
func TestMetricsToken(t *testing.T) {
	t.Parallel()
	const token = "scrape-7f3a9c1e5b2d4680"
	url := dbtest.New(t)
	guarded := startServe(t, map[string]string{"DATABASE_URL": url, "PERPETUITY_ADDR": "127.0.0.1:0", "PERPETUITY_METRICS_TOKEN": token})
	open := startServe(t, map[string]string{"DATABASE_URL": url, "PERPETUITY_ADDR": "127.0.0.1:0"})
	for _, tc := range []struct {
		name, base, auth string
		want             int
	}{
		{"guarded, no header", guarded, "", http.StatusUnauthorized},
		{"guarded, wrong token", guarded, "Bearer scrape-7f3a9c1e5b2d4681", http.StatusUnauthorized},
		{"guarded, token without Bearer", guarded, token, http.StatusUnauthorized},
		{"guarded, token as Basic", guarded, "Basic " + token, http.StatusUnauthorized},
		{"guarded, the token", guarded, "Bearer " + token, http.StatusOK},
		{"open, no header", open, "", http.StatusOK},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req, err := http.NewRequest(http.MethodGet, tc.base+"/metrics", nil)
			if err != nil {
				t.Fatal(err)
			}
			if tc.auth != "" {
				req.Header.Set("Authorization", tc.auth)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			b, _ := io.ReadAll(resp.Body)
			if resp.StatusCode != tc.want {
				t.Fatalf("status %d, want %d: %s", resp.StatusCode, tc.want, b)
			}
			if metrics := strings.Contains(string(b), "perpetuity_arena_tenants"); metrics != (tc.want == http.StatusOK) {
				t.Fatalf("status %d with metrics %v: %s", resp.StatusCode, metrics, b)
			}
			if strings.Contains(string(b), token) || strings.Contains(resp.Header.Get("WWW-Authenticate"), token) {
				t.Fatal("the answer quotes the token")
			}
		})
	}
}

// TestMetricsTokenTooShort: a short token is refused at start, and the
// error does not quote it.
func TestMetricsTokenTooShort(t *testing.T) {
	t.Parallel()
	_, err := LoadConfig(func(k string) string {
		return map[string]string{"PERPETUITY_METRICS_TOKEN": "hunter2"}[k]
	})
	if err == nil || !strings.Contains(err.Error(), "PERPETUITY_METRICS_TOKEN") || strings.Contains(err.Error(), "hunter2") {
		t.Fatalf("err = %v", err)
	}
}
