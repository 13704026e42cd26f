package web_test

import (
	"net/http"
	"net/url"
	"strconv"
	"testing"

	"github.com/perpetuity/perpetuity/web"
	"github.com/perpetuity/perpetuity/web/webtest"
)

const sessionCookie = "pp_session"

func TestSessionRotatesOnSignInAndDiesOnSignOut(t *testing.T) {
	t.Parallel()
	srv := webtest.Start(t, webtest.Options{})
	tm := signUpTeam(t, srv, "Rotation")
	first := tm.admin.Cookie(sessionCookie)
	if first == "" {
		t.Fatal("no session after sign-up")
	}

	// Fixation: a token planted before sign-in is not the one after it,
	// and signing in again replaces the session rather than reusing it.
	planted := "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"
	cl := srv.NewClient(t)
	cl.SetCookie(sessionCookie, planted)
	cl.MustSignIn(tm.email, password)
	second := cl.Cookie(sessionCookie)
	if second == "" || second == planted || second == first {
		t.Fatalf("session after sign-in %q (planted %q, earlier %q)", second, planted, first)
	}
	cl.MustSignIn(tm.email, password)
	third := cl.Cookie(sessionCookie)
	if third == second {
		t.Fatal("signing in again kept the old session token")
	}
	replay := srv.NewClient(t)
	replay.SetCookie(sessionCookie, second)
	if p := replay.Get("/console"); p.Status != http.StatusSeeOther || p.Location() != "/signin" {
		t.Fatalf("replaced session still works: %d %q", p.Status, p.Location())
	}

	// Sign-out ends the session server-side: a copy of the cookie is dead.
	stolen := srv.NewClient(t)
	stolen.SetCookie(sessionCookie, third)
	if p := stolen.Get("/console"); p.Status != http.StatusOK {
		t.Fatalf("copied live session: %d", p.Status)
	}
	cl.Get("/console")
	if p := cl.Post("/signout", nil); p.Status != http.StatusSeeOther {
		t.Fatalf("sign-out: %d", p.Status)
	}
	if p := stolen.Get("/console"); p.Status != http.StatusSeeOther || p.Location() != "/signin" {
		t.Fatalf("session alive after sign-out: %d %q", p.Status, p.Location())
	}
	acts := auditActions(t, srv, tm.tenantID)
	for _, want := range []string{"tenant.signup", "signin", "signout"} {
		if !contains(acts, want) {
			t.Errorf("audit log %v lacks %s", acts, want)
		}
	}
}

func TestDisablingAnAccountEndsItsSessions(t *testing.T) {
	t.Parallel()
	srv := webtest.Start(t, webtest.Options{})
	tm := signUpTeam(t, srv, "Disable")
	mem, email, id := addMember(t, srv, tm, "tenant_reader")
	if p := mem.Get("/console"); p.Status != http.StatusOK {
		t.Fatalf("member before disable: %d", p.Status)
	}
	tm.admin.Get("/console/accounts")
	if p := tm.admin.Post("/console/accounts/"+strconv.FormatInt(id, 10)+"/disable", nil); p.Status != http.StatusSeeOther {
		t.Fatalf("disable: %d", p.Status)
	}
	if p := mem.Get("/console"); p.Status != http.StatusSeeOther || p.Location() != "/signin" {
		t.Fatalf("disabled member still signed in: %d %q", p.Status, p.Location())
	}
	if p := mem.SignIn(email, password); p.Status != http.StatusUnauthorized {
		t.Fatalf("disabled member signs in: %d", p.Status)
	}
	// The admin cannot lock themself out.
	var self int64
	if err := srv.Owner.QueryRow(t.Context(), `SELECT id FROM console_accounts WHERE email = $1`, tm.email).Scan(&self); err != nil {
		t.Fatal(err)
	}
	if p := tm.admin.Post("/console/accounts/"+strconv.FormatInt(self, 10)+"/disable", nil); p.Status != http.StatusBadRequest {
		t.Fatalf("self-disable: %d", p.Status)
	}
	tm.admin.Get("/console/accounts")
	if p := tm.admin.Post("/console/accounts/"+strconv.FormatInt(id, 10)+"/enable", nil); p.Status != http.StatusSeeOther {
		t.Fatalf("enable: %d", p.Status)
	}
	mem.MustSignIn(email, password)
	acts := auditActions(t, srv, tm.tenantID)
	for _, want := range []string{"account.invite", "account.join", "account.disable", "signin.disabled", "account.enable"} {
		if !contains(acts, want) {
			t.Errorf("audit log %v lacks %s", acts, want)
		}
	}
}

func TestRoleChangeHoldsOnTheNextRequest(t *testing.T) {
	t.Parallel()
	srv := webtest.Start(t, webtest.Options{})
	tm := signUpTeam(t, srv, "Roles")
	other, _, id := addMember(t, srv, tm, "tenant_admin")
	if p := other.Get("/console/audit"); p.Status != http.StatusOK {
		t.Fatalf("second admin on audit: %d", p.Status)
	}
	tm.admin.Get("/console/accounts")
	if p := tm.admin.Post("/console/accounts/"+strconv.FormatInt(id, 10)+"/role", url.Values{"role": {"tenant_reader"}}); p.Status != http.StatusSeeOther {
		t.Fatalf("set role: %d", p.Status)
	}
	if p := other.Get("/console/audit"); p.Status != http.StatusForbidden {
		t.Fatalf("demoted admin on audit: %d", p.Status)
	}
	if p := tm.admin.Post("/console/accounts/"+strconv.FormatInt(id, 10)+"/role", url.Values{"role": {"platform_admin"}}); p.Status != http.StatusBadRequest {
		t.Fatalf("promotion to platform admin: %d", p.Status)
	}
	if !contains(auditActions(t, srv, tm.tenantID), "account.role") {
		t.Fatal("role change not audited")
	}
}

func TestSignInRateLimits(t *testing.T) {
	t.Parallel()
	srv := webtest.Start(t, webtest.Options{Config: func(c *web.Config) {
		c.SignInPerAccount = 3
		c.SignInPerAddress = 6
	}})
	tm := signUpTeam(t, srv, "Limits")

	t.Run("per account", func(t *testing.T) {
		cl := srv.NewClient(t)
		for i := range 3 {
			if p := cl.SignIn(tm.email, "wrong password "+strconv.Itoa(i)); p.Status != http.StatusUnauthorized {
				t.Fatalf("failure %d: status %d", i, p.Status)
			}
		}
		p := cl.SignIn(tm.email, password)
		if p.Status != http.StatusTooManyRequests {
			t.Fatalf("right password after 3 failures: %d, want 429", p.Status)
		}
		if ra, err := strconv.Atoi(p.Header.Get("Retry-After")); err != nil || ra <= 0 {
			t.Fatalf("Retry-After %q", p.Header.Get("Retry-After"))
		}
	})
	t.Run("per address", func(t *testing.T) {
		// Three more failures on unknown accounts bring the address to 6.
		cl := srv.NewClient(t)
		for i := range 3 {
			if p := cl.SignIn("nobody"+strconv.Itoa(i)+"@example.com", "whatever it is"); p.Status != http.StatusUnauthorized {
				t.Fatalf("failure %d: %d", i, p.Status)
			}
		}
		if p := cl.SignIn("someone-else@example.com", "whatever it is"); p.Status != http.StatusTooManyRequests {
			t.Fatalf("address over its limit: %d, want 429", p.Status)
		}
	})
}
