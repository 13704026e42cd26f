package proxy

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/labstack/echo/v4"

	"github.com/perpetuity/perpetuity/memory/store"
)

// TestImportBudget drives an import's token budget through a script of
// lines and clock steps: a line starts while the bucket is not empty and
// the day not used up, what it stored is charged after it (one line may
// overshoot into debt), and the next line waits for refill.
func TestImportBudget(t *testing.T) {
	t.Parallel()
	k := store.KeyIdentity{TenantID: 1, KeyID: 7}
	type step struct {
		wait    time.Duration
		charge  int // the line's stored tokens, when it is allowed
		refused bool
		what    string
		retry   int64
	}
	tests := []struct {
		name   string
		limits store.Limits
		steps  []step
	}{
		{"tokens per minute", store.Limits{TokensPerMinute: 1000}, []step{
			{charge: 400}, {charge: 400}, {charge: 400}, // 200 left, then 200 in debt
			{refused: true, what: "tokens per minute (TPM)", retry: 13}, // (200+1)/1000 of a minute
			{wait: 12 * time.Second, refused: true, what: "tokens per minute (TPM)", retry: 1},
			{wait: time.Second, charge: 400},
		}},
		{"tokens per day", store.Limits{TokensPerDay: 1000}, []step{
			{charge: 600}, {charge: 600},
			{refused: true, what: "tokens per day (TPD)", retry: 12 * 3600},
			{wait: 12 * time.Hour, charge: 600},
		}},
		{"requests alone do not limit tokens", store.Limits{RequestsPerMinute: 1}, []step{
			{charge: 1 << 30}, {charge: 1 << 30},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			lm, c := newTestLimiter(&fakeLimits{l: map[int64]store.Limits{1: tt.limits}}, store.Limits{})
			b := ImportBudget{lm: lm, key: k}
			for i, s := range tt.steps {
				c.advance(s.wait)
				wait, err := b.Allow(context.Background())
				if (err != nil) != s.refused {
					t.Fatalf("step %d: %v, want refused=%v", i, err, s.refused)
				}
				if s.refused {
					if !strings.Contains(err.Error(), s.what) || retryAfter(wait) != s.retry {
						t.Fatalf("step %d: %v after %ds, want %s after %ds", i, err, retryAfter(wait), s.what, s.retry)
					}
					continue
				}
				b.Charge(s.charge)
			}
		})
	}
	// The zero budget (an unlimited caller) refuses nothing.
	b := ImportBudget{}
	b.Charge(1 << 30)
	if _, err := b.Allow(context.Background()); err != nil {
		t.Fatal(err)
	}
}

// TestIdentifyImport: an import is admitted against the key's requests per
// minute before the memory user it names is made; a refusal is a 429 with
// Retry-After and stores nothing.
func TestIdentifyImport(t *testing.T) {
	t.Parallel()
	lp := newLimitedProxy(t)
	// A tenant-wide key, so that the refused import's X-Perpetuity-User
	// would create its user if the limit were checked after it.
	nt := lp.scopedTenant("importer", store.LimitsUpdate{RequestsPerMinute: limitPtr(1)}, store.ScopeTenant)
	e := echo.New()
	e.POST("/k/:key/perpetuity/import", func(c echo.Context) error {
		who, b, err := lp.px.IdentifyImport(c)
		if err != nil {
			return err
		}
		if b.lm == nil {
			t.Error("an admitted import got no budget")
		}
		return c.String(http.StatusOK, who.UserName)
	})
	s := httptest.NewServer(e)
	t.Cleanup(s.Close)
	post := func(key, user string) (int, http.Header, string) {
		req, err := http.NewRequest(http.MethodPost, s.URL+"/k/"+key+"/perpetuity/import", strings.NewReader("{}"))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set(HeaderUser, user)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		if err != nil {
			t.Fatal(err)
		}
		return resp.StatusCode, resp.Header, string(b)
	}
	if status, _, body := post(nt.Key, "first"); status != http.StatusOK || body != "first" {
		t.Fatalf("first import: %d %s", status, body)
	}
	status, h, body := post(nt.Key, "refused-user")
	if status != http.StatusTooManyRequests || h.Get("Retry-After") != "60" || !strings.Contains(body, "requests per minute (RPM)") ||
		h.Get("x-ratelimit-limit-requests") != "1" {
		t.Fatalf("second import at 1 rpm: %d Retry-After %q %s", status, h.Get("Retry-After"), body)
	}
	var users int
	err := lp.db.InTenant(context.Background(), nt.TenantID, func(tx pgx.Tx) error {
		return tx.QueryRow(context.Background(), `SELECT count(*) FROM memory_users WHERE tenant_id = $1 AND name = 'refused-user'`, nt.TenantID).Scan(&users)
	})
	if err != nil || users != 0 {
		t.Fatalf("the refused import's user: %d rows, %v", users, err)
	}
	if status, _, _ := post("ppk_not_a_key", ""); status != http.StatusUnauthorized {
		t.Fatalf("bad key: %d", status)
	}
}
