package proxy

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/labstack/echo/v4"

	"github.com/perpetuity/perpetuity/memory/store"
)

// memoryUsers counts the tenant's memory users with this name.
func (lp *limitedProxy) memoryUsers(tenantID int64, name string) int {
	lp.t.Helper()
	var n int
	err := lp.db.InTenant(context.Background(), tenantID, func(tx pgx.Tx) error {
		return tx.QueryRow(context.Background(), `SELECT count(*) FROM memory_users WHERE tenant_id = $1 AND name = $2`, tenantID, name).Scan(&n)
	})
	if err != nil {
		lp.t.Fatal(err)
	}
	return n
}

// checkPermission asserts a 403 permission error in the dialect's shape.
func checkPermission(t *testing.T, anthropic bool, status int, body []byte) {
	t.Helper()
	if status != http.StatusForbidden {
		t.Fatalf("status %d, want 403; body %s", status, body)
	}
	if anthropic {
		var e struct {
			Type  string `json:"type"`
			Error struct{ Type, Message string }
		}
		if json.Unmarshal(body, &e) != nil || e.Type != "error" || e.Error.Type != "permission_error" || e.Error.Message == "" {
			t.Fatalf("not an Anthropic permission error: %s", body)
		}
		return
	}
	var e struct {
		Error struct {
			Message, Type string
			Code          *string
		} `json:"error"`
	}
	if json.Unmarshal(body, &e) != nil || e.Error.Type != "invalid_request_error" || e.Error.Code == nil || *e.Error.Code != "permission_denied" || e.Error.Message == "" {
		t.Fatalf("not an OpenAI permission error: %s", body)
	}
}

// TestPinnedKeyNamesOnlyItsUser: a key pinned to alice that names bob in
// X-Perpetuity-User is refused with a 403 in the caller's dialect, before
// anything is stored, forwarded or created; repeating alice goes through.
func TestPinnedKeyNamesOnlyItsUser(t *testing.T) {
	t.Parallel()
	lp := newLimitedProxy(t)
	ctx := context.Background()
	nt, err := lp.db.CreateTenantWith(ctx, "pinned", "alice", store.TenantOptions{Dict: 1})
	if err != nil {
		t.Fatal(err)
	}
	for i, d := range limitDialects {
		for _, stream := range []bool{false, true} {
			c := d.call(i, stream)
			c.header = map[string]string{HeaderUser: "bob"}
			for k, v := range d.call(i, stream).header {
				c.header[k] = v
			}
			before := len(lp.provider.Requests())
			status, _, body := lp.do(nt.Key, c)
			checkPermission(t, d.anthropic, status, body)
			if got := len(lp.provider.Requests()); got != before {
				t.Errorf("%s: a refused request reached the provider", d.name)
			}
			c.header[HeaderUser] = " alice "
			if status, _, body := lp.do(nt.Key, c); status != http.StatusOK {
				t.Errorf("%s stream=%v: repeating the key's own user: %d %s", d.name, stream, status, body)
			}
		}
	}
	if n := lp.memoryUsers(nt.TenantID, "bob"); n != 0 {
		t.Errorf("refused requests created memory user bob (%d rows)", n)
	}
}

// TestKeyScopeChoosesUser walks the rule for each scope over the header
// and the API user field (user-field identity on): a pinned key ignores the
// field and may only repeat its user in the header; a tenant-wide key may
// name anyone either way.
func TestKeyScopeChoosesUser(t *testing.T) {
	t.Parallel()
	lp := newLimitedProxy(t)
	ctx := context.Background()
	nt, err := lp.db.CreateTenantWith(ctx, "scopes", "alice", store.TenantOptions{Dict: 1})
	if err != nil {
		t.Fatal(err)
	}
	setUserFieldIdentity(t, lp, nt.TenantID)
	_, wide, err := lp.db.CreateKeyScoped(ctx, nt.TenantID, nt.UserID, "wide", store.ScopeTenant)
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name         string
		key          string
		header, hint string
		status       int
		user         string // whose conversation the request landed in
	}{
		{"pinned, no header", nt.Key, "", "", 200, "alice"},
		{"pinned, own user", nt.Key, "alice", "", 200, "alice"},
		{"pinned, other user", nt.Key, "bob", "", 403, ""},
		{"pinned, other user in another case", nt.Key, "Alice", "", 403, ""},
		{"pinned, user field ignored", nt.Key, "", "carol", 200, "alice"},
		{"pinned, own header and another user field", nt.Key, "alice", "carol", 200, "alice"},
		{"tenant-wide, other user", wide, "bob", "", 200, "bob"},
		{"tenant-wide, user field", wide, "", "dave", 200, "dave"},
		{"tenant-wide, no header", wide, "", "", 200, "alice"},
	}
	for i, tc := range cases {
		body := `{"model":"gpt-4o-mini","messages":[{"role":"user","content":"case ` + strconv.Itoa(i) + `"}]`
		if tc.hint != "" {
			body += `,"user":"` + tc.hint + `"`
		}
		c := limitCall{http.MethodPost, "/v1/chat/completions", body + "}", map[string]string{"Authorization": "Bearer sk-proj-test"}}
		if tc.header != "" {
			c.header[HeaderUser] = tc.header
		}
		status, h, resp := lp.do(tc.key, c)
		if status != tc.status {
			t.Errorf("%s: status %d, want %d: %s", tc.name, status, tc.status, resp)
			continue
		}
		if status == http.StatusForbidden {
			checkPermission(t, false, status, resp)
			continue
		}
		if got := conversationOwner(t, lp, nt.TenantID, h.Get(HeaderConvID)); got != tc.user {
			t.Errorf("%s: the request ran as %q, want %q", tc.name, got, tc.user)
		}
	}
	for _, u := range []string{"carol", "Alice"} {
		if n := lp.memoryUsers(nt.TenantID, u); n != 0 {
			t.Errorf("memory user %q was created through the pinned key", u)
		}
	}
}

// TestIdentifyKeepsTheScope: the import route's identity follows the same
// rule, and a pinned key's Who says so, for the import lines that name users.
func TestIdentifyKeepsTheScope(t *testing.T) {
	t.Parallel()
	lp := newLimitedProxy(t)
	ctx := context.Background()
	nt, err := lp.db.CreateTenantWith(ctx, "identify", "alice", store.TenantOptions{Dict: 1})
	if err != nil {
		t.Fatal(err)
	}
	_, wide, err := lp.db.CreateKeyScoped(ctx, nt.TenantID, nt.UserID, "wide", store.ScopeTenant)
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name, key, header string
		status            int // 0: identified
		user              string
		pinned            bool
	}{
		{"pinned", nt.Key, "", 0, "alice", true},
		{"pinned, own user", nt.Key, "alice", 0, "alice", true},
		{"pinned, other user", nt.Key, "bob", http.StatusForbidden, "", false},
		{"tenant-wide, other user", wide, "bob", 0, "bob", false},
	}
	e := echo.New()
	for _, tc := range cases {
		req := httptest.NewRequest(http.MethodPost, "/k/"+tc.key+"/perpetuity/import", nil)
		if tc.header != "" {
			req.Header.Set(HeaderUser, tc.header)
		}
		c := e.NewContext(req, httptest.NewRecorder())
		c.SetParamNames("key")
		c.SetParamValues(tc.key)
		who, _, err := lp.px.IdentifyImport(c)
		var he *echo.HTTPError
		switch {
		case tc.status != 0:
			if !errors.As(err, &he) || he.Code != tc.status {
				t.Errorf("%s: %v, want HTTP %d", tc.name, err, tc.status)
			}
		case err != nil:
			t.Errorf("%s: %v", tc.name, err)
		case who.UserName != tc.user || who.Pinned != tc.pinned || who.TenantID != nt.TenantID:
			t.Errorf("%s: identified %+v, want user %q pinned %v", tc.name, who, tc.user, tc.pinned)
		}
	}
	if n := lp.memoryUsers(nt.TenantID, "bob"); n != 1 {
		t.Errorf("%d memory users bob, want the one the tenant-wide key made", n)
	}
}

func setUserFieldIdentity(t *testing.T, lp *limitedProxy, tenantID int64) {
	t.Helper()
	err := lp.db.InTenant(context.Background(), tenantID, func(tx pgx.Tx) error {
		_, err := tx.Exec(context.Background(), `UPDATE tenants SET user_field_identity = true WHERE id = $1`, tenantID)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
}

// conversationOwner names the memory user a conversation belongs to.
func conversationOwner(t *testing.T, lp *limitedProxy, tenantID int64, convID string) string {
	t.Helper()
	var name string
	err := lp.db.InTenant(context.Background(), tenantID, func(tx pgx.Tx) error {
		return tx.QueryRow(context.Background(), `SELECT u.name FROM conversations c JOIN memory_users u ON u.tenant_id = c.tenant_id AND u.id = c.user_id
			WHERE c.tenant_id = $1 AND c.id = $2::bigint`, tenantID, convID).Scan(&name)
	})
	if err != nil {
		t.Fatalf("conversation %q: %v", convID, err)
	}
	return name
}

// FuzzScopeAllows: whatever the header and the user field hold, a pinned
// key either stays its own user (the header empty or repeating it, the
// hint dropped) or is refused with a 403; a tenant-wide key is never
// refused here and keeps its hint.
func FuzzScopeAllows(f *testing.F) {
	for _, s := range [][2]string{{"", ""}, {"alice", ""}, {" alice\t", "bob"}, {"bob", ""}, {"", "bob"}, {"ALICE", "alice"}, {"alice\x00", ""}, {"\u00a0alice", ""}} {
		f.Add(s[0], s[1])
	}
	f.Fuzz(func(t *testing.T, header, hint string) {
		pinned := store.KeyIdentity{UserName: "alice", Scope: store.ScopeUser}
		h, err := scopeAllows(pinned, header, hint)
		own := strings.TrimSpace(header)
		switch {
		case own == "" || own == "alice":
			if err != nil || h != "" {
				t.Fatalf("pinned, header %q: hint %q, %v; want no hint and no error", header, h, err)
			}
		default:
			var ae *APIError
			// The message is the same whatever was asked: the caller's
			// input is never echoed back.
			if !errors.As(err, &ae) || ae.Status != http.StatusForbidden || ae.Kind != Permission || ae.Message != errPinned(pinned).Message || h != "" {
				t.Fatalf("pinned, header %q: %v; want the 403 permission error", header, err)
			}
		}
		wide := store.KeyIdentity{UserName: "alice", Scope: store.ScopeTenant}
		if h, err := scopeAllows(wide, header, hint); err != nil || h != hint {
			t.Fatalf("tenant-wide, header %q hint %q: %q, %v", header, hint, h, err)
		}
	})
}
