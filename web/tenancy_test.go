package web_test

import (
	"context"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"

	"github.com/perpetuity/perpetuity/policies/policytest"
	"github.com/perpetuity/perpetuity/web"
	"github.com/perpetuity/perpetuity/web/webtest"
)

func TestMemberIsReadOnly(t *testing.T) {
	t.Parallel()
	srv := webtest.Start(t, webtest.Options{})
	tm := signUpTeam(t, srv, "Readers")
	mem, _, _ := addMember(t, srv, tm, "tenant_reader")
	var keyID int64
	if err := srv.Owner.QueryRow(context.Background(), `SELECT id FROM api_keys WHERE tenant_id = $1`, tm.tenantID).Scan(&keyID); err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{"/console", "/console/connect", "/console/keys", "/console/users", "/console/memory"} {
		p := mem.Get(path)
		if p.Status != http.StatusOK {
			t.Errorf("member GET %s = %d", path, p.Status)
		}
		if p.TestID("nav-accounts").Length() != 0 || p.TestID("nav-audit").Length() != 0 {
			t.Errorf("member GET %s shows admin navigation", path)
		}
	}
	if p := mem.Get("/console/keys"); p.TestID("key-create-form").Length() != 0 || p.TestID("key-revoke").Length() != 0 {
		t.Error("member sees key controls")
	}
	for _, path := range []string{"/console/accounts", "/console/audit", "/platform/tenants"} {
		if p := mem.Get(path); p.Status != http.StatusForbidden {
			t.Errorf("member GET %s = %d, want 403", path, p.Status)
		}
	}
	posts := []struct {
		path string
		form url.Values
	}{
		{"/console/keys", url.Values{"user_id": {strconv.FormatInt(tm.userID, 10)}}},
		{"/console/keys/" + strconv.FormatInt(keyID, 10) + "/revoke", nil},
		{"/console/accounts/invite", url.Values{"email": {"x@example.com"}, "role": {"tenant_admin"}}},
		{"/platform/tenants/" + strconv.FormatInt(tm.tenantID, 10) + "/enter", nil},
	}
	for _, p := range posts {
		if got := mem.Post(p.path, p.form); got.Status != http.StatusForbidden {
			t.Errorf("member POST %s = %d, want 403", p.path, got.Status)
		}
	}
	if _, err := srv.DB.ResolveKey(context.Background(), tm.key); err != nil {
		t.Fatalf("member revoked a key: %v", err)
	}
}

// TestTenantAdminCannotReachAnotherTenant: every id of tenant B, used by
// tenant A's admin, is not found, and B is unchanged afterwards.
func TestTenantAdminCannotReachAnotherTenant(t *testing.T) {
	t.Parallel()
	srv := webtest.Start(t, webtest.Options{})
	a := signUpTeam(t, srv, "Alpha")
	b := signUpTeam(t, srv, "Bravo")
	const canaryB = "bravo-canary-7f3a"
	itemA, _ := storeTurn(t, srv, webtest.Turn{TenantID: a.tenantID, UserID: a.userID, Conversation: "a1", Role: "user", Text: "alpha talks about the canary plan", Peak: 1})
	_, convB := storeTurn(t, srv, webtest.Turn{TenantID: b.tenantID, UserID: b.userID, Conversation: "b1", Role: "user", Text: "secret " + canaryB + " canary plan", Peak: 1})
	_, memberB, memberBID := addMember(t, srv, b, "tenant_reader")
	var keyB int64
	if err := srv.Owner.QueryRow(context.Background(), `SELECT id FROM api_keys WHERE tenant_id = $1`, b.tenantID).Scan(&keyB); err != nil {
		t.Fatal(err)
	}
	id := func(n int64) string { return strconv.FormatInt(n, 10) }

	gets := []string{
		"/console/users/" + id(b.userID),
		"/console/conversations/" + id(convB),
		"/console/memory?user=" + id(b.userID),
		"/console/memory?user=" + id(b.userID) + "&q=canary",
	}
	for _, path := range gets {
		p := a.admin.Get(path)
		if p.Status != http.StatusNotFound {
			t.Errorf("A GET %s = %d, want 404", path, p.Status)
		}
		if strings.Contains(p.Body, canaryB) || strings.Contains(p.Body, "Bravo") {
			t.Errorf("A GET %s shows tenant B's data", path)
		}
	}
	a.admin.Get("/console/keys")
	posts := []struct {
		path string
		form url.Values
	}{
		{"/console/keys/" + id(keyB) + "/revoke", nil},
		{"/console/keys", url.Values{"user_id": {id(b.userID)}, "name": {"stolen"}}},
		{"/console/accounts/" + id(memberBID) + "/disable", nil},
		{"/console/accounts/" + id(memberBID) + "/role", url.Values{"role": {"tenant_admin"}}},
		{"/console/accounts/" + id(memberBID) + "/enable", nil},
	}
	for _, p := range posts {
		if got := a.admin.Post(p.path, p.form); got.Status != http.StatusNotFound {
			t.Errorf("A POST %s = %d, want 404", p.path, got.Status)
		}
	}
	// B is untouched.
	if _, err := srv.DB.ResolveKey(context.Background(), b.key); err != nil {
		t.Fatalf("B's key revoked by A: %v", err)
	}
	var role string
	var disabled bool
	if err := srv.Owner.QueryRow(context.Background(), `SELECT role, disabled_at IS NOT NULL FROM console_accounts WHERE id = $1`, memberBID).Scan(&role, &disabled); err != nil {
		t.Fatal(err)
	}
	if role != "tenant_reader" || disabled {
		t.Fatalf("B's member changed by A: role %s disabled %v", role, disabled)
	}
	var keysB int
	if err := srv.Owner.QueryRow(context.Background(), `SELECT count(*) FROM api_keys WHERE tenant_id = $1`, b.tenantID).Scan(&keysB); err != nil {
		t.Fatal(err)
	}
	if keysB != 1 {
		t.Fatalf("B has %d keys after A's attempts, want 1", keysB)
	}
	// A's own pages list only A's things.
	for _, path := range []string{"/console", "/console/keys", "/console/users", "/console/memory?q=canary", "/console/accounts", "/console/audit"} {
		p := a.admin.Get(path)
		if p.Status != http.StatusOK {
			t.Fatalf("A GET %s = %d", path, p.Status)
		}
		for _, foreign := range []string{canaryB, memberB, b.email, "Bravo"} {
			if strings.Contains(p.Body, foreign) {
				t.Errorf("A GET %s contains tenant B's %q", path, foreign)
			}
		}
	}
	if p := a.admin.Get("/console/memory?q=canary"); p.TestID("item").Length() != 1 || p.TestID("item").AttrOr("data-item-id", "") != id(itemA) {
		t.Errorf("A's search finds %d items, want only A's own", p.TestID("item").Length())
	}
}

// TestRouteMatrixOverHTTP walks every registered route as each kind of
// caller, with real sessions, and checks the answer is a denial exactly
// where the matrix says so. Targets are throwaway objects of the caller's
// own tenant, so allowed requests reach their handlers.
func TestRouteMatrixOverHTTP(t *testing.T) {
	t.Parallel()
	srv := webtest.Start(t, webtest.Options{})
	ctx := context.Background()
	tm := signUpTeam(t, srv, "Matrix")
	itemID, convID := storeTurn(t, srv, webtest.Turn{TenantID: tm.tenantID, UserID: tm.userID, Conversation: "m", Role: "user", Text: "matrix turn", Peak: 1})
	_, _, victimID := addMember(t, srv, tm, "tenant_reader")
	mem, _, _ := addMember(t, srv, tm, "tenant_member")
	rdr, _, _ := addMember(t, srv, tm, "tenant_reader")
	if err := web.CreatePlatformAdmin(ctx, srv.DB, "root@example.com", password); err != nil {
		t.Fatal(err)
	}
	plat := srv.NewClient(t)
	plat.MustSignIn("root@example.com", password)

	newKey := func() string {
		_, _, err := srv.DB.CreateKey(ctx, tm.tenantID, tm.userID, "victim")
		if err != nil {
			t.Fatal(err)
		}
		var id int64
		if err := srv.Owner.QueryRow(ctx, `SELECT max(id) FROM api_keys WHERE tenant_id = $1`, tm.tenantID).Scan(&id); err != nil {
			t.Fatal(err)
		}
		return strconv.FormatInt(id, 10)
	}
	// concrete turns a route template into a path for this caller.
	concrete := func(method, path string) (string, url.Values) {
		r := strings.NewReplacer(
			"/console/keys/:id", "/console/keys/"+newKey(),
			"/console/users/:id", "/console/users/"+strconv.FormatInt(tm.userID, 10),
			"/console/conversations/:id", "/console/conversations/"+strconv.FormatInt(convID, 10),
			"/console/items/:id", "/console/items/"+strconv.FormatInt(itemID, 10),
			"/console/accounts/:id", "/console/accounts/"+strconv.FormatInt(victimID, 10),
			"/platform/tenants/:id", "/platform/tenants/"+strconv.FormatInt(tm.tenantID, 10),
			"/invite/:token", "/invite/not-a-token",
			"/static/*", "/static/console.css",
		)
		form := url.Values{"role": {"tenant_reader"}, "user_id": {strconv.FormatInt(tm.userID, 10)}}
		return r.Replace(path), form
	}
	callers := []struct {
		name  string
		level policytest.Level
		cl    func() *webtest.Client
	}{
		{"anonymous", policytest.Public, func() *webtest.Client { c := srv.NewClient(t); c.Get("/signin"); return c }},
		{"member", policytest.Member, func() *webtest.Client { return mem }},
		{"reader", policytest.Reader, func() *webtest.Client { return rdr }},
		{"admin", policytest.Admin, func() *webtest.Client { return tm.admin }},
		{"platform admin", policytest.Platform, func() *webtest.Client { return plat }},
	}
	need, err := policytest.ConsoleAccess()
	if err != nil {
		t.Fatal(err)
	}
	for _, who := range callers {
		for _, r := range srv.Echo.Routes() {
			if r.Path == "/signout" {
				continue // checked in the session tests; it would end the caller's session
			}
			cl := who.cl()
			path, form := concrete(r.Method, r.Path)
			var p *webtest.Page
			if r.Method == http.MethodGet {
				p = cl.Get(path)
			} else {
				cl.Get("/console")
				p = cl.Post(path, form)
			}
			// A denial is the error page with 401/403, or (signed out) the
			// redirect to sign in; a rejected password is not a denial.
			denied := ((p.Status == http.StatusForbidden || p.Status == http.StatusUnauthorized) && p.TestID("error").Length() == 1) ||
				(p.Status == http.StatusSeeOther && p.Location() == "/signin" && r.Path != "/")
			want := !policytest.Allows(need[r.Method+" "+r.Path], who.level)
			if denied != want {
				t.Errorf("%s %s %s: status %d (to %q), denied=%v, want denied=%v", who.name, r.Method, path, p.Status, p.Location(), denied, want)
			}
		}
	}
}
