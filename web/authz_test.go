package web

import (
	"net/http"
	"strings"
	"testing"

	"github.com/labstack/echo/v4"

	"github.com/perpetuity/perpetuity/memory/store"
	"github.com/perpetuity/perpetuity/policies"
	"github.com/perpetuity/perpetuity/policies/policytest"
	"github.com/perpetuity/perpetuity/templates"
)

// access is who may use a route, or the role a principal holds
// (policies/policytest; policytest.Allows decides).
type access = policytest.Level

const (
	public   = policytest.Public
	member   = policytest.Member
	reader   = policytest.Reader
	admin    = policytest.Admin
	platform = policytest.Platform
)

// expectedAccess is the authorization matrix written out by hand in
// policies/policytest/console_access.txt. A route registered without an
// entry fails the test, and so does an entry without a route: adding a
// route means deciding who may use it.
func expectedAccess(t testing.TB) map[string]access {
	t.Helper()
	m, err := policytest.ConsoleAccess()
	if err != nil {
		t.Fatal(err)
	}
	return m
}

type principal struct {
	name  string
	level access
	sub   string
	b     binding
	dom   string
}

// principals are every kind of caller, each in the domain its session acts
// in; the tenant ones also try a domain that is not theirs.
func principals() []principal {
	return []principal{
		{"anonymous", public, subjectAnonymous, binding{}, domainNone},
		{"member", member, subjectOf(2), binding{templates.RoleTenantMember, tenantDomain(7)}, tenantDomain(7)},
		{"reader", reader, subjectOf(5), binding{templates.RoleTenantReader, tenantDomain(7)}, tenantDomain(7)},
		{"admin", admin, subjectOf(3), binding{templates.RoleTenantAdmin, tenantDomain(7)}, tenantDomain(7)},
		{"platform admin, no tenant", platform, subjectOf(1), binding{templates.RolePlatformAdmin, domainAny}, domainPlatform},
		{"platform admin, in a tenant", platform, subjectOf(1), binding{templates.RolePlatformAdmin, domainAny}, tenantDomain(9)},
		// A tenant account whose request claims another tenant's domain
		// gets nothing beyond the public routes.
		{"member, foreign domain", public, subjectOf(2), binding{templates.RoleTenantMember, tenantDomain(7)}, tenantDomain(8)},
		{"reader, foreign domain", public, subjectOf(5), binding{templates.RoleTenantReader, tenantDomain(7)}, tenantDomain(8)},
		{"admin, foreign domain", public, subjectOf(3), binding{templates.RoleTenantAdmin, tenantDomain(7)}, tenantDomain(8)},
		{"admin, platform domain", public, subjectOf(3), binding{templates.RoleTenantAdmin, tenantDomain(7)}, domainPlatform},
		{"account without role", public, subjectOf(4), binding{}, tenantDomain(7)},
	}
}

func registeredRoutes(t *testing.T) []*echo.Route {
	t.Helper()
	c, err := New(Config{PublicURL: "http://localhost:8080"}, &store.DB{}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	e := echo.New()
	c.Register(e)
	return e.Routes()
}

func TestAuthorizationMatrix(t *testing.T) {
	t.Parallel()
	az, err := newAuthorizer(policies.Model(), policies.Policy())
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	expected := expectedAccess(t)
	for _, r := range registeredRoutes(t) {
		key := r.Method + " " + r.Path
		seen[key] = true
		need, ok := expected[key]
		if !ok {
			t.Errorf("route %s has no entry in the authorization matrix (and needs a rule in policies/policy.csv)", key)
			continue
		}
		for _, p := range principals() {
			want := policytest.Allows(need, p.level)
			got, err := az.allow(p.sub, p.b, p.dom, r.Path, r.Method)
			if err != nil {
				t.Fatalf("%s %s: %v", p.name, key, err)
			}
			if got != want {
				t.Errorf("%s on %s: allowed=%v, want %v", p.name, key, got, want)
			}
		}
	}
	for key := range expected {
		if !seen[key] {
			t.Errorf("matrix entry %s is not a registered route", key)
		}
	}
}

// TestEveryPolicyRuleNamesARoute keeps the policy free of stale rules that
// would silently allow a route added later under the same template.
func TestEveryPolicyRuleNamesARoute(t *testing.T) {
	t.Parallel()
	az, err := newAuthorizer(policies.Model(), policies.Policy())
	if err != nil {
		t.Fatal(err)
	}
	rules, err := az.e.GetPolicy()
	if err != nil {
		t.Fatal(err)
	}
	expected := expectedAccess(t)
	for _, r := range rules {
		if _, ok := expected[r[3]+" "+r[2]]; !ok {
			t.Errorf("policy rule %v names no console route", r)
		}
	}
}

func TestAuthorizerChecksTheTemplateNotThePath(t *testing.T) {
	t.Parallel()
	az, err := newAuthorizer(policies.Model(), policies.Policy())
	if err != nil {
		t.Fatal(err)
	}
	b := binding{templates.RoleTenantAdmin, tenantDomain(7)}
	if ok, _ := az.allow(subjectOf(3), b, tenantDomain(7), "/console/keys/:id/revoke", http.MethodPost); !ok {
		t.Fatal("admin denied the revoke template")
	}
	for _, raw := range []string{"/console/keys/5/revoke", "/console/keys/*", "/console/../console/keys/:id/revoke"} {
		if ok, _ := az.allow(subjectOf(3), b, tenantDomain(7), raw, http.MethodPost); ok {
			t.Errorf("raw path %q allowed; only route templates may match", raw)
		}
	}
}

func TestBrokenOrEmptyPolicyDeniesEverything(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name, model, policy string
	}{
		{"empty policy", policies.Model(), ""},
		{"comments only", policies.Model(), "# nothing\n\n# at all\n"},
		{"only groupings", policies.Model(), "g, tenant_admin, tenant_member, *\n"},
		{"short rule", policies.Model(), "p, anonymous, *, /signin\n"},
		{"unknown kind", policies.Model(), "x, anonymous, *, /signin, GET\n"},
		{"unterminated quote", policies.Model(), "p, \"anonymous, *, /signin, GET\n"},
		{"broken model", "[request_definition]\nr = sub\n", policies.Policy()},
		{"empty model", "", policies.Policy()},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			az, err := newAuthorizer(c.model, c.policy)
			if err == nil {
				t.Fatalf("policy accepted")
			}
			if az != nil {
				t.Fatalf("an authorizer came back with the error")
			}
			// What a console would hold if it ignored the error: a nil
			// authorizer, which must deny even public routes.
			if ok, err := az.allow(subjectAnonymous, binding{}, domainNone, "/signin", http.MethodGet); ok || err != nil {
				t.Fatalf("nil authorizer allowed=%v err=%v", ok, err)
			}
		})
	}
}

func TestNewRefusesRouteWithoutRule(t *testing.T) {
	t.Parallel()
	// A policy missing one route's rule must stop the console from starting.
	trimmed := strings.Replace(policies.Policy(), "p, tenant_admin, *, /console/audit, GET\n", "", 1)
	if trimmed == policies.Policy() {
		t.Fatal("test needs the audit rule in the policy")
	}
	az, err := newAuthorizer(policies.Model(), trimmed)
	if err != nil {
		t.Fatal(err)
	}
	c := &Console{authz: az}
	missing := ""
	for _, r := range c.routes() {
		if !az.hasRule(r.path, r.method) {
			missing = r.method + " " + r.path
		}
	}
	if missing != "GET /console/audit" {
		t.Fatalf("route without rule found: %q, want GET /console/audit", missing)
	}
}

// TestBindingFollowsTheAccountRow: the role used is the one read with this
// request, so a demotion holds on the very next request.
func TestBindingFollowsTheAccountRow(t *testing.T) {
	t.Parallel()
	az, err := newAuthorizer(policies.Model(), policies.Policy())
	if err != nil {
		t.Fatal(err)
	}
	sub, dom := subjectOf(5), tenantDomain(7)
	if ok, _ := az.allow(sub, binding{templates.RoleTenantAdmin, dom}, dom, "/console/audit", http.MethodGet); !ok {
		t.Fatal("admin denied")
	}
	if ok, _ := az.allow(sub, binding{templates.RoleTenantMember, dom}, dom, "/console/audit", http.MethodGet); ok {
		t.Fatal("demoted account still allowed an admin page")
	}
	if ok, _ := az.allow(sub, binding{}, dom, "/console", http.MethodGet); ok {
		t.Fatal("account without role allowed")
	}
}

// BenchmarkAuthorize is the per-request cost of the Casbin check, binding
// mirror included; it runs on every console request.
func BenchmarkAuthorize(b *testing.B) {
	az, err := newAuthorizer(policies.Model(), policies.Policy())
	if err != nil {
		b.Fatal(err)
	}
	bind := binding{templates.RoleTenantAdmin, tenantDomain(7)}
	for b.Loop() {
		if ok, err := az.allow(subjectOf(3), bind, tenantDomain(7), "/console/keys/:id/revoke", http.MethodPost); !ok || err != nil {
			b.Fatal(ok, err)
		}
	}
}
