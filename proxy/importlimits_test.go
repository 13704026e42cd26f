package proxy

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/labstack/echo/v4"

	"github.com/perpetuity/perpetuity/memory/store"
	"github.com/perpetuity/perpetuity/proxy/limits"
)

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
		if b == (limits.Budget{}) {
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
