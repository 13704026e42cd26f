package web_test

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/PuerkitoBio/goquery"

	"github.com/perpetuity/perpetuity/memory/store"
	"github.com/perpetuity/perpetuity/web/webtest"
)

// TestKeysPageScopes: the sign-up key and a key made without choosing are
// pinned, the admin may choose tenant-wide instead, every key's scope is on
// the keys page and the user's page, the new key's box says which it is, a
// scope outside the two is a form error that creates nothing, and a member
// may not create keys of either scope.
func TestKeysPageScopes(t *testing.T) {
	t.Parallel()
	srv := webtest.Start(t, webtest.Options{})
	tm := signUpTeam(t, srv, "Scopes")
	ctx := context.Background()
	if k, err := srv.DB.ResolveKey(ctx, tm.key); err != nil || k.Scope != store.ScopeUser {
		t.Fatalf("the sign-up key's scope %q (%v), want user (pinned)", k.Scope, err)
	}
	page := tm.admin.Get("/console/keys")
	if got := page.TestID("key-scope-select").Find("option[selected]").AttrOr("value", ""); got != "user" {
		t.Errorf("the scope preselected for a new key is %q, want user", got)
	}

	create := func(form url.Values) (*webtest.Page, store.KeyIdentity) {
		t.Helper()
		p, key := tm.admin.CreateKey(form)
		if key == "" {
			t.Fatalf("create %v: %d %s", form, p.Status, p.TestID("form-error").Text())
		}
		k, err := srv.DB.ResolveKey(ctx, key)
		if err != nil {
			t.Fatal(err)
		}
		return p, k
	}
	p, k := create(url.Values{"name": {"laptop agent"}, "user_id": {"new"}, "new_user": {"alice"}})
	if k.Scope != store.ScopeUser || p.TestID("connect-scope").AttrOr("data-scope", "") != "pinned" {
		t.Errorf("a key made without choosing: scope %q, shown as %q", k.Scope, p.TestID("connect-scope").AttrOr("data-scope", ""))
	}
	p, k = create(url.Values{"name": {"team harness"}, "user_id": {itoa(tm.userID)}, "scope": {"tenant"}})
	if k.Scope != store.ScopeTenant || p.TestID("connect-scope").AttrOr("data-scope", "") != "tenant-wide" {
		t.Errorf("a key made tenant-wide: scope %q, shown as %q", k.Scope, p.TestID("connect-scope").AttrOr("data-scope", ""))
	}
	_, k = create(url.Values{"name": {"explicit pin"}, "user_id": {itoa(tm.userID)}, "scope": {"user"}})
	if k.Scope != store.ScopeUser {
		t.Errorf("a key made pinned on purpose: scope %q", k.Scope)
	}

	scopes := func(p *webtest.Page) map[string]string {
		out := map[string]string{}
		p.TestID("key-row").Each(func(_ int, row *goquery.Selection) {
			out[row.Find(`[data-testid="key-name"]`).Text()] = strings.TrimSpace(row.Find(`[data-testid="key-scope"]`).Text())
		})
		return out
	}
	want := map[string]string{"first key": "pinned", "laptop agent": "pinned", "team harness": "tenant-wide", "explicit pin": "pinned"}
	got := scopes(tm.admin.Get("/console/keys"))
	for name, s := range want {
		if got[name] != s {
			t.Errorf("keys page shows %q as %q, want %q (all: %v)", name, got[name], s, got)
		}
	}
	if u := scopes(tm.admin.Get("/console/users/" + itoa(tm.userID))); u["team harness"] != "tenant-wide" || u["first key"] != "pinned" {
		t.Errorf("the user's page shows scopes %v", u)
	}

	before := tm.admin.Get("/console/keys").TestID("key-row").Length()
	bad := tm.admin.Post("/console/keys", url.Values{"name": {"x"}, "user_id": {"new"}, "new_user": {"eve"}, "scope": {"everyone"}})
	if bad.Status != http.StatusBadRequest || bad.TestID("form-error").Length() != 1 {
		t.Errorf("scope everyone: %d", bad.Status)
	}
	var eve int
	if err := srv.Owner.QueryRow(ctx, `SELECT count(*) FROM memory_users WHERE tenant_id = $1 AND name = 'eve'`, tm.tenantID).Scan(&eve); err != nil || eve != 0 {
		t.Errorf("a refused form created memory user eve (%d, %v)", eve, err)
	}

	member, _, _ := addMember(t, srv, tm, "tenant_member")
	member.Get("/console/keys")
	if p := member.Post("/console/keys", url.Values{"name": {"mine"}, "user_id": {itoa(tm.userID)}, "scope": {"tenant"}}); p.Status != http.StatusForbidden {
		t.Errorf("a member creating a tenant-wide key: %d, want 403", p.Status)
	}
	var harness int64
	if err := srv.Owner.QueryRow(ctx, `SELECT id FROM api_keys WHERE tenant_id = $1 AND name = 'team harness'`, tm.tenantID).Scan(&harness); err != nil {
		t.Fatal(err)
	}
	member.Get("/console/keys/" + itoa(harness) + "/rotate")
	if p := member.Post("/console/keys/"+itoa(harness)+"/rotate", url.Values{"grace": {"1h"}, "confirm": {"yes"}}); p.Status != http.StatusForbidden {
		t.Errorf("a member rotating a tenant-wide key: %d, want 403", p.Status)
	}
	page = member.Get("/console/keys")
	if p := member.Post("/console/keys/"+itoa(harness)+"/revoke", nil); p.Status != http.StatusForbidden {
		t.Errorf("a member revoking a tenant-wide key: %d, want 403", p.Status)
	}
	var live bool
	if err := srv.Owner.QueryRow(ctx, `SELECT revoked_at IS NULL FROM api_keys WHERE id = $1`, harness).Scan(&live); err != nil || !live {
		t.Errorf("the tenant-wide key after a member's refused revoke: live %v (%v)", live, err)
	}
	row := page.Doc.Find("#key-" + itoa(harness))
	if row.Length() != 1 || row.Find(`[data-testid="key-revoke"], [data-testid="key-rotate"]`).Length() != 0 {
		t.Errorf("a member's keys page offers to revoke or rotate the tenant-wide key (row found %d)", row.Length())
	}
	if pinned := page.Doc.Find(`[data-testid="key-row"]`).FilterFunction(func(_ int, r *goquery.Selection) bool {
		return strings.TrimSpace(r.Find(`[data-testid="key-scope"]`).Text()) == "pinned"
	}); pinned.Length() == 0 || pinned.Find(`[data-testid="key-revoke"]`).Length() != pinned.Length() {
		t.Errorf("a member's keys page: %d pinned rows, %d with a revoke button", pinned.Length(), pinned.Find(`[data-testid="key-revoke"]`).Length())
	}
	if after := tm.admin.Get("/console/keys").TestID("key-row").Length(); after != before {
		t.Errorf("refused creations changed the key count from %d to %d", before, after)
	}
	var detail string
	if err := srv.Owner.QueryRow(ctx, `SELECT detail->>'scope' FROM audit_log WHERE tenant_id = $1 AND action = 'key.create' AND target = 'team harness'`, tm.tenantID).Scan(&detail); err != nil || detail != "tenant" {
		t.Errorf("the audit entry of the tenant-wide key records scope %q (%v)", detail, err)
	}
}
