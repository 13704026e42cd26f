package proxy

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/labstack/echo/v4"

	"github.com/perpetuity/perpetuity/e2e/fakeprovider"
	"github.com/perpetuity/perpetuity/memory"
	"github.com/perpetuity/perpetuity/memory/dict"
	"github.com/perpetuity/perpetuity/memory/store"
	"github.com/perpetuity/perpetuity/memory/text"
	"github.com/perpetuity/perpetuity/migrations/dbtest"
)

// limitedProxy is the proxy over a real database and memory engine, with
// limits read from the database, and one fake provider.
type limitedProxy struct {
	t        *testing.T
	db       *store.DB
	base     string // server URL
	px       *Proxy
	provider upstreamServer
}

func newLimitedProxy(t *testing.T, opts ...func(*Config)) *limitedProxy {
	t.Helper()
	ctx := context.Background()
	db, err := store.Open(ctx, dbtest.New(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(db.Close)
	counter, err := text.NewCounter()
	if err != nil {
		t.Fatal(err)
	}
	d, err := dict.Builtin(1)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.EnsureDictionary(ctx, d.Version, d.Name, d.Entries()); err != nil {
		t.Fatal(err)
	}
	eng := memory.New(db, memory.TextAnalyzer{C: counter}, memory.DictTerms{D: d}, memory.Options{Ceiling: 4000})
	lp := &limitedProxy{t: t, db: db, provider: newUpstream(t)}
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	cfg := Config{
		OpenAIBaseURL: lp.provider.URL + "/v1", AnthropicBaseURL: lp.provider.URL,
		MaxBodyBytes: 1 << 20, CaptureTimeout: 5 * time.Second, FrameCeiling: 4000, Limits: db,
	}
	for _, o := range opts {
		o(&cfg)
	}
	lp.px = New(cfg, db, eng, log)
	e := echo.New()
	e.HTTPErrorHandler = func(err error, c echo.Context) {
		if DialectOf(c) != 0 {
			WriteError(c, err)
			return
		}
		e.DefaultHTTPErrorHandler(err, c)
	}
	lp.px.Register(e)
	s := httptest.NewServer(e)
	t.Cleanup(s.Close)
	lp.base = s.URL
	return lp
}

// tenant makes a tenant with these limits and returns it.
func (lp *limitedProxy) tenant(name string, u store.LimitsUpdate) store.NewTenant {
	lp.t.Helper()
	return lp.scopedTenant(name, u, store.ScopeUser)
}

// scopedTenant is tenant with a first key of the given scope.
func (lp *limitedProxy) scopedTenant(name string, u store.LimitsUpdate, scope store.KeyScope) store.NewTenant {
	lp.t.Helper()
	ctx := context.Background()
	nt, err := lp.db.CreateTenantWith(ctx, name, "ada", store.TenantOptions{Scope: scope, Dict: 1})
	if err != nil {
		lp.t.Fatal(err)
	}
	if _, err := lp.db.SetTenantLimits(ctx, nt.TenantID, u, store.Limits{}); err != nil {
		lp.t.Fatal(err)
	}
	return nt
}

// counts is what the tenant has stored: messages, conversations, request records.
func (lp *limitedProxy) counts(tenantID int64) [3]int64 {
	lp.t.Helper()
	var n [3]int64
	err := lp.db.InTenant(context.Background(), tenantID, func(tx pgx.Tx) error {
		return tx.QueryRow(context.Background(), `SELECT
			(SELECT count(*) FROM messages WHERE tenant_id = $1),
			(SELECT count(*) FROM conversations WHERE tenant_id = $1),
			(SELECT count(*) FROM requests WHERE tenant_id = $1)`, tenantID).Scan(&n[0], &n[1], &n[2])
	})
	if err != nil {
		lp.t.Fatal(err)
	}
	return n
}

// settled waits until the tenant has n request records: each is written
// after its reply's capture and token charge, so the key's counts are then
// complete.
func (lp *limitedProxy) settled(tenantID int64, n int64) {
	lp.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for lp.counts(tenantID)[2] < n {
		if time.Now().After(deadline) {
			lp.t.Fatalf("tenant %d: fewer than %d requests recorded", tenantID, n)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

type limitCall struct {
	method, path, body string
	header             map[string]string
}

func (lp *limitedProxy) do(key string, c limitCall) (int, http.Header, []byte) {
	lp.t.Helper()
	req, err := http.NewRequest(c.method, lp.base+"/k/"+key+c.path, strings.NewReader(c.body))
	if err != nil {
		lp.t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	for k, v := range c.header {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		lp.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		lp.t.Fatal(err)
	}
	return resp.StatusCode, resp.Header, b
}

var (
	openAIHeader    = map[string]string{"Authorization": "Bearer sk-proj-test"}
	anthropicHeader = map[string]string{"x-api-key": "sk-ant-test", "anthropic-version": "2023-06-01"}
)

// limitDialects are the three inbound dialects, each with a request that
// goes through and the error shape a refusal must have.
var limitDialects = []struct {
	name      string
	call      func(i int, stream bool) limitCall
	anthropic bool // Anthropic error JSON and headers
}{
	{"openai-chat", func(i int, stream bool) limitCall {
		return limitCall{http.MethodPost, "/v1/chat/completions",
			`{"model":"gpt-4o-mini","stream":` + strconv.FormatBool(stream) + `,"messages":[{"role":"user","content":"question ` + strconv.Itoa(i) + `"}]}`,
			openAIHeader}
	}, false},
	{"anthropic-messages", func(i int, stream bool) limitCall {
		return limitCall{http.MethodPost, "/v1/messages",
			`{"model":"claude-sonnet-4-5","max_tokens":64,"stream":` + strconv.FormatBool(stream) + `,"messages":[{"role":"user","content":"question ` + strconv.Itoa(i) + `"}]}`,
			anthropicHeader}
	}, true},
	{"openai-responses", func(i int, stream bool) limitCall {
		return limitCall{http.MethodPost, "/v1/responses",
			`{"model":"gpt-4o-mini","stream":` + strconv.FormatBool(stream) + `,"input":"question ` + strconv.Itoa(i) + `"}`,
			openAIHeader}
	}, false},
}

// checkRefusal asserts a 429 in the dialect's shape, naming the limit kind
// (OpenAI's error type), with Retry-After in [minRetry, maxRetry].
func checkRefusal(t *testing.T, anthropic bool, status int, h http.Header, body []byte, kind string, minRetry, maxRetry int) {
	t.Helper()
	if status != http.StatusTooManyRequests {
		t.Fatalf("status %d, want 429; body %s", status, body)
	}
	ra, err := strconv.Atoi(h.Get("Retry-After"))
	if err != nil || ra < minRetry || ra > maxRetry {
		t.Fatalf("Retry-After %q, want whole seconds in [%d, %d]", h.Get("Retry-After"), minRetry, maxRetry)
	}
	if !strings.HasPrefix(h.Get("Content-Type"), "application/json") {
		t.Fatalf("Content-Type %q", h.Get("Content-Type"))
	}
	if anthropic {
		var e struct {
			Type  string `json:"type"`
			Error struct {
				Type, Message string
			} `json:"error"`
		}
		if json.Unmarshal(body, &e) != nil || e.Type != "error" || e.Error.Type != "rate_limit_error" || !strings.Contains(e.Error.Message, "Rate limit") {
			t.Fatalf("not an Anthropic rate-limit error: %s", body)
		}
		return
	}
	var e struct {
		Error struct {
			Message, Type string
			Code          *string
		} `json:"error"`
	}
	if json.Unmarshal(body, &e) != nil || e.Error.Type != kind || e.Error.Code == nil || *e.Error.Code != "rate_limit_exceeded" || !strings.Contains(e.Error.Message, "Rate limit") {
		t.Fatalf("not an OpenAI %s rate-limit error: %s", kind, body)
	}
}

// TestRateLimitRefusesInDialect: with 2 requests a minute per key, the
// third within the minute is a 429 in the caller's dialect with
// Retry-After, stores nothing and never reaches the provider; other keys
// and tenants are unaffected.
func TestRateLimitRefusesInDialect(t *testing.T) {
	t.Parallel()
	lp := newLimitedProxy(t)
	for _, d := range limitDialects {
		t.Run(d.name, func(t *testing.T) {
			nt := lp.tenant("rpm-"+d.name, store.LimitsUpdate{RequestsPerMinute: limitPtr(2)})
			sent := len(lp.provider.Requests())
			for i := 0; i < 2; i++ {
				if status, _, body := lp.do(nt.Key, d.call(i, i == 1)); status != http.StatusOK {
					t.Fatalf("request %d within the limit: %d %s", i, status, body)
				}
			}
			lp.settled(nt.TenantID, 2)
			before := lp.counts(nt.TenantID)
			if before[0] == 0 {
				t.Fatal("the admitted requests stored nothing: the check below would prove nothing")
			}
			got := len(lp.provider.Requests())
			if got != sent+2 {
				t.Fatalf("provider got %d requests, want 2", got-sent)
			}
			for _, stream := range []bool{false, true} {
				status, h, body := lp.do(nt.Key, d.call(9, stream))
				checkRefusal(t, d.anthropic, status, h, body, "requests", 25, 30)
				limit, remaining := "x-ratelimit-limit-requests", "x-ratelimit-remaining-requests"
				if d.anthropic {
					limit, remaining = "anthropic-ratelimit-requests-limit", "anthropic-ratelimit-requests-remaining"
				}
				if h.Get(limit) != "2" || h.Get(remaining) != "0" {
					t.Fatalf("%s=%q %s=%q, want 2 and 0", limit, h.Get(limit), remaining, h.Get(remaining))
				}
			}
			// Pass-through routes count too.
			status, h, body := lp.do(nt.Key, limitCall{http.MethodGet, "/v1/models", "", openAIHeader})
			checkRefusal(t, false, status, h, body, "requests", 25, 30)
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			if err := lp.px.Drain(ctx); err != nil {
				t.Fatal(err)
			}
			if after := lp.counts(nt.TenantID); after != before {
				t.Fatalf("refused requests stored something: messages, conversations, records %v -> %v", before, after)
			}
			if n := len(lp.provider.Requests()); n != got {
				t.Fatalf("refused requests reached the provider: %d more calls", n-got)
			}
			// Another key's tenant without limits goes through.
			other := lp.tenant("free-"+d.name, store.LimitsUpdate{})
			if status, _, body := lp.do(other.Key, d.call(0, false)); status != http.StatusOK {
				t.Fatalf("an unlimited tenant was refused: %d %s", status, body)
			}
			lp.settled(other.TenantID, 1)
		})
	}
}

// TestTokenLimitRefuses: a reply that spends more than the key's tokens
// per minute puts it in debt; the next request is a 429 naming tokens,
// until the limit is lifted, which takes effect within the cache TTL.
func TestTokenLimitRefuses(t *testing.T) {
	t.Parallel()
	lp := newLimitedProxy(t)
	const ttl = 200 * time.Millisecond
	lp.px.limits.SetCacheTTL(ttl) // the lift below need not wait the full TTL
	for _, d := range limitDialects {
		t.Run(d.name, func(t *testing.T) {
			nt := lp.tenant("tpm-"+d.name, store.LimitsUpdate{TokensPerMinute: limitPtr(600)})
			// Scripts are global to the one provider: subtests run one by one.
			lp.provider.Script(fakeprovider.Reply{Text: "a long answer", Usage: &fakeprovider.Usage{InputTokens: 700, OutputTokens: 200}})
			if status, _, body := lp.do(nt.Key, d.call(0, false)); status != http.StatusOK {
				t.Fatalf("first request: %d %s", status, body)
			}
			lp.settled(nt.TenantID, 1)
			sent := len(lp.provider.Requests())
			// 900 spent of 600: 300 in debt, (300+1)/600 of a minute to wait.
			status, h, body := lp.do(nt.Key, d.call(1, true))
			checkRefusal(t, d.anthropic, status, h, body, "tokens", 29, 31)
			if n := len(lp.provider.Requests()); n != sent {
				t.Fatal("a request refused on tokens reached the provider")
			}
			if _, err := lp.db.SetTenantLimits(context.Background(), nt.TenantID, store.LimitsUpdate{TokensPerMinute: limitPtr(0)}, store.Limits{}); err != nil {
				t.Fatal(err)
			}
			deadline := time.Now().Add(ttl + 3*time.Second)
			for {
				status, _, body := lp.do(nt.Key, d.call(2, false))
				if status == http.StatusOK {
					break
				}
				if status != http.StatusTooManyRequests || time.Now().After(deadline) {
					t.Fatalf("the lifted token limit still refuses: %d %s", status, body)
				}
				time.Sleep(100 * time.Millisecond)
			}
			lp.settled(nt.TenantID, 2)
		})
	}
}

func limitPtr[T any](v T) *T { return &v }
