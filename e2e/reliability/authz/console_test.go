package authz

import (
	"bytes"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/labstack/echo/v4"

	"github.com/perpetuity/perpetuity/e2e/reliability/figure"
	"github.com/perpetuity/perpetuity/memory/store"
	"github.com/perpetuity/perpetuity/policies/policytest"
	"github.com/perpetuity/perpetuity/web"
)

// level is who may use a route, or the role a principal holds
// (policies/policytest; policytest.Allows decides).
type level = policytest.Level

const (
	public   = policytest.Public
	member   = policytest.Member
	reader   = policytest.Reader
	admin    = policytest.Admin
	platform = policytest.Platform
)

// consoleAccess is the authorization matrix written out by hand in
// policies/policytest/console_access.txt. A route registered without an
// entry fails the test, and so does an entry without a route: adding a
// route means deciding who may use it.
func consoleAccess(t testing.TB) map[string]level {
	t.Helper()
	m, err := policytest.ConsoleAccess()
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// consoleRoutes are the routes the console registers, read from the
// console itself so that a new route cannot be missed.
func consoleRoutes(t *testing.T) []*echo.Route {
	c, err := web.New(web.Config{PublicURL: "http://localhost:8080"}, &store.DB{}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	e := echo.New()
	c.Register(e)
	return e.Routes()
}

// concrete fills a route template with values naming nothing that exists,
// so an allowed request changes nothing.
func concrete(path string) string {
	r := strings.NewReplacer(":id", "999999999", ":token", "no-such-invite", ":version", "999999", "*", "console.css")
	return r.Replace(path)
}

// principal is one signed-in (or anonymous) browser.
type principal struct {
	name  string
	level level
	b     *console
}

var inviteURL = regexp.MustCompile(`/invite/[A-Za-z0-9_-]+`)

// refused tells an authorization refusal from every other answer: signed
// out, a GET is sent to /signin and anything else is a 401 "Sign in
// first."; signed in, it is a 403 "Your role does not allow this.".
func refused(a answer, method string, signedIn bool) bool {
	switch {
	case !signedIn && method == http.MethodGet:
		return a.status == http.StatusSeeOther && a.header.Get("Location") == "/signin"
	case !signedIn:
		return a.status == http.StatusUnauthorized && bytes.Contains(a.body, []byte("Sign in first."))
	}
	return a.status == http.StatusForbidden && bytes.Contains(a.body, []byte("Your role does not allow this."))
}

func TestConsoleRouteRoleMatrix(t *testing.T) {
	t.Parallel()
	w := startWorld(t)
	const pw = "a long enough password"

	adminB := newConsole(t, w.proc.URL)
	adminB.get("/signup")
	if a := adminB.post("/signup", url.Values{"team": {"Authz team"}, "email": {"admin@authz.test"}, "password": {pw}}); a.status != http.StatusSeeOther {
		t.Fatalf("sign-up: %d %.300s", a.status, a.body)
	}
	adminB.get("/console/accounts")
	join := func(email, role string) *console {
		t.Helper()
		adminB.get("/console/accounts")
		inv := adminB.postFollow("/console/accounts/invite", url.Values{"email": {email}, "role": {role}})
		token := inviteURL.FindString(string(inv.body))
		if inv.status != http.StatusOK || token == "" {
			t.Fatalf("invite %s: %d, no invite URL: %.300s", role, inv.status, inv.body)
		}
		b := newConsole(t, w.proc.URL)
		b.get(token)
		if a := b.post(token, url.Values{"password": {pw}}); a.status != http.StatusSeeOther {
			t.Fatalf("accept invite: %d %.300s", a.status, a.body)
		}
		return b
	}
	memberB := join("member@authz.test", "tenant_member")
	readerB := join("reader@authz.test", "tenant_reader")
	createPlatformAdmin(t, w.env, "root@authz.test", pw)
	rootB := newConsole(t, w.proc.URL)
	rootB.signIn("root@authz.test", pw)
	enteredB := newConsole(t, w.proc.URL)
	enteredB.signIn("root@authz.test", pw)
	enteredB.get("/platform/tenants")
	tenantID, err := tenantIDByName(w, "Authz team")
	if err != nil {
		t.Fatal(err)
	}
	if a := enteredB.post("/platform/tenants/"+strconv.FormatInt(tenantID, 10)+"/enter", nil); a.status != http.StatusSeeOther {
		t.Fatalf("enter tenant: %d", a.status)
	}
	anonB := newConsole(t, w.proc.URL)
	principals := []principal{
		{"anonymous", public, anonB},
		{"tenant member", member, memberB},
		{"tenant reader", reader, readerB},
		{"tenant admin", admin, adminB},
		{"platform admin, no tenant entered", platform, rootB},
		{"platform admin, in a tenant", platform, enteredB},
	}

	expected := consoleAccess(t)
	rs := consoleRoutes(t)
	// Signing out ends the session: it goes last.
	sort.SliceStable(rs, func(i, j int) bool { return rs[j].Path == "/signout" && rs[i].Path != "/signout" })
	seen := map[string]bool{}
	decisions, mismatches := 0, 0
	type tally struct{ allowed, refused, wrong int }
	perPrincipal := map[string]*tally{}
	for _, p := range principals {
		perPrincipal[p.name] = &tally{}
	}
	for _, r := range rs {
		key := r.Method + " " + r.Path
		seen[key] = true
		need, ok := expected[key]
		if !ok {
			mismatches++
			t.Errorf("console route %s has no entry in the expected matrix", key)
			continue
		}
		for _, p := range principals {
			// A fresh CSRF token for the principal (the anonymous one from
			// its cookie), so a refusal is authorization's, never CSRF's.
			if p.level == public {
				p.b.get("/signin")
			} else if p.level == platform && p.name == "platform admin, no tenant entered" {
				p.b.get("/platform/tenants")
			} else {
				p.b.get("/console")
			}
			var a answer
			if r.Method == http.MethodGet {
				a = p.b.get(concrete(r.Path))
			} else {
				a = p.b.post(concrete(r.Path), nil)
			}
			want := policytest.Allows(need, p.level)
			got := !refused(a, r.Method, p.level != public)
			if r.Path == "/" && p.level == public {
				// Signed out, / sends to /signin just as a refusal would.
				got = a.status == http.StatusSeeOther
			}
			decisions++
			tl := perPrincipal[p.name]
			if got {
				tl.allowed++
			} else {
				tl.refused++
			}
			if got != want {
				mismatches++
				tl.wrong++
				t.Errorf("%s on %s: allowed=%v, want %v (status %d, %.120s)", p.name, key, got, want, a.status, a.body)
			}
		}
	}
	for key := range expected {
		if !seen[key] {
			mismatches++
			t.Errorf("expected-matrix entry %s is not a registered console route", key)
		}
	}

	var d strings.Builder
	fmt.Fprintf(&d, "Every route the console registers (%d, read from web.Console.Register) × %d principals, over HTTP against the real binary "+
		"(the Casbin policy as served, behind session and CSRF; ids that name nothing, so allowed requests change nothing). "+
		"A refusal is authorization's own answer (signed out: GET → /signin, else 401 \"Sign in first.\"; signed in: 403 \"Your role does not allow this.\").\n\n"+
		"| principal | allowed | refused | mismatches |\n|---|--:|--:|--:|\n", len(rs), len(principals))
	for _, p := range principals {
		tl := perPrincipal[p.name]
		fmt.Fprintf(&d, "| %s | %d | %d | %d |\n", p.name, tl.allowed, tl.refused, tl.wrong)
	}
	figure.Record(t, figure.Figure{
		Item:    7,
		Name:    "Console route x role matrix",
		Figure:  fmt.Sprintf("%d mismatches in %d console decisions", mismatches, decisions),
		Target:  "0 mismatches",
		Pass:    mismatches == 0,
		Details: d.String(),
	})
}

func tenantIDByName(w *world, name string) (int64, error) {
	return scalar(w, `SELECT id FROM tenants WHERE name = $1`, name)
}
