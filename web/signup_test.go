package web_test

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/perpetuity/perpetuity/web/webtest"
)

func TestSignUpLandsOnConnectPageWithKeyShownOnce(t *testing.T) {
	t.Parallel()
	srv := webtest.Start(t, webtest.Options{})
	cl := srv.NewClient(t)
	p, key := cl.SignUp("Acme Agents", "Ada@Example.com", "correct horse battery")
	ctx := context.Background()

	if !strings.HasPrefix(key, "ppk_") {
		t.Fatalf("key %q lacks the ppk_ prefix", key)
	}
	id, err := srv.DB.ResolveKey(ctx, key)
	if err != nil {
		t.Fatalf("the key shown does not resolve: %v", err)
	}
	if id.UserName != "default" {
		t.Fatalf("first key bound to %q, want the default user", id.UserName)
	}
	wantOpenAI := srv.URL + "/k/" + key + "/v1"
	wantAnthropic := srv.URL + "/k/" + key
	checks := []struct{ testid, want string }{
		{"proxy-url-openai", wantOpenAI},
		{"proxy-url-anthropic", wantAnthropic},
		{"tenant-name", "Acme Agents"},
		{"account-email", "ada@example.com"},
	}
	for _, c := range checks {
		if got := strings.TrimSpace(p.TestID(c.testid).Text()); got != c.want {
			t.Errorf("%s = %q, want %q", c.testid, got, c.want)
		}
	}
	snippets := []struct{ testid, want string }{
		// The SDKs send the key in X-Perpetuity-Key, not in the URL.
		{"snippet-openai", `base_url="` + srv.URL + `/v1"`},
		{"snippet-openai", `default_headers={"X-Perpetuity-Key": "` + key + `"}`},
		{"snippet-openai-node", `baseURL: "` + srv.URL + `/v1"`},
		{"snippet-openai-node", `defaultHeaders: { "X-Perpetuity-Key": "` + key + `" }`},
		{"snippet-anthropic", `base_url="` + srv.URL + `"`},
		{"snippet-anthropic", `default_headers={"X-Perpetuity-Key": "` + key + `"}`},
		{"snippet-anthropic-node", `import Anthropic from "@anthropic-ai/sdk"`},
		{"snippet-anthropic-node", `defaultHeaders: { "X-Perpetuity-Key": "` + key + `" }`},
		{"snippet-agent", `ANTHROPIC_BASE_URL="` + srv.URL + `"`},
		{"snippet-agent", `ANTHROPIC_CUSTOM_HEADERS="X-Perpetuity-Key: ` + key + `"`},
		{"snippet-agent", `OPENAI_BASE_URL="` + wantOpenAI + `"`},
		{"proxy-base-openai", srv.URL + "/v1"},
		{"proxy-header-key", key},
	}
	for _, s := range snippets {
		if got := p.TestID(s.testid).Text(); !strings.Contains(got, s.want) {
			t.Errorf("%s lacks %q:\n%s", s.testid, s.want, got)
		}
	}
	for _, id := range []string{"snippet-openai", "snippet-openai-node", "snippet-anthropic", "snippet-anthropic-node"} {
		if got := p.TestID(id).Text(); strings.Contains(got, "/k/") {
			t.Errorf("%s puts the key in the URL though the SDK can send a header:\n%s", id, got)
		}
	}

	// Shown once: the connect page afterwards, and the keys page, never
	// carry it, and the database holds only its hash.
	for _, path := range []string{"/console/connect", "/console/keys", "/console"} {
		pg := cl.Get(path)
		if pg.Status != http.StatusOK {
			t.Fatalf("GET %s = %d", path, pg.Status)
		}
		if strings.Contains(pg.Body, key) {
			t.Fatalf("GET %s shows the key again", path)
		}
	}
	var plain int
	if err := srv.Owner.QueryRow(ctx,
		`SELECT count(*) FROM api_keys WHERE prefix = $1 OR encode(key_hash, 'escape') LIKE '%' || $1 || '%'`, key).Scan(&plain); err != nil {
		t.Fatal(err)
	}
	if plain != 0 {
		t.Fatalf("the key is stored in plain text")
	}
	if got := cl.Get("/console/keys").TestID("key-row").Length(); got != 1 {
		t.Fatalf("keys page lists %d keys, want the first one", got)
	}
	var action string
	if err := srv.Owner.QueryRow(ctx, `SELECT action FROM audit_log WHERE tenant_id = $1 ORDER BY id LIMIT 1`, id.TenantID).Scan(&action); err != nil {
		t.Fatal(err)
	}
	if action != "tenant.signup" {
		t.Fatalf("first audit entry %q, want tenant.signup", action)
	}
}

func TestSignUpRejects(t *testing.T) {
	t.Parallel()
	srv := webtest.Start(t, webtest.Options{})
	first := srv.NewClient(t)
	first.SignUp("Team One", "one@example.com", "a long enough password")
	cases := []struct {
		name, team, email, password string
		status                      int
	}{
		{"short password", "T", "x@example.com", "short", http.StatusBadRequest},
		{"no team", "", "y@example.com", "a long enough password", http.StatusBadRequest},
		{"bad email", "T", "not-an-email", "a long enough password", http.StatusBadRequest},
		{"display-name email", "T", "Bob <bob@example.com>", "a long enough password", http.StatusBadRequest},
		{"email taken (case-insensitive)", "T", "ONE@example.com", "a long enough password", http.StatusConflict},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cl := srv.NewClient(t)
			cl.Get("/signup")
			p := cl.Post("/signup", map[string][]string{"team": {c.team}, "email": {c.email}, "password": {c.password}})
			if p.Status != c.status {
				t.Fatalf("status %d, want %d", p.Status, c.status)
			}
			if p.TestID("form-error").Length() != 1 {
				t.Fatalf("no form error shown")
			}
		})
	}
	var tenants int
	if err := srv.Owner.QueryRow(context.Background(), `SELECT count(*) FROM tenants`).Scan(&tenants); err != nil {
		t.Fatal(err)
	}
	if tenants != 1 {
		t.Fatalf("%d tenants after rejected sign-ups, want 1", tenants)
	}
}
