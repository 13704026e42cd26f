package web_test

import (
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"

	"github.com/labstack/echo/v4"

	"github.com/perpetuity/perpetuity/web"
	"github.com/perpetuity/perpetuity/web/webtest"
)

const deviceCookie = "pp_device"

// behindBalancer serves the console as if behind a load balancer on
// loopback, so a test names each client's address in X-Forwarded-For.
func behindBalancer(cfg func(*web.Config)) webtest.Options {
	return webtest.Options{Config: cfg, Mount: func(e *echo.Echo) {
		e.IPExtractor = echo.ExtractIPFromXFFHeader(echo.TrustLoopback(true))
	}}
}

// signInFrom signs in from a client address ("" for the socket's own),
// as a browser whose earlier session is over (signed out or expired): it
// keeps its other cookies, the device cookie among them.
func signInFrom(cl *webtest.Client, addr, email, pw string) *webtest.Page {
	cl.SetCookie(sessionCookie, "")
	h := http.Header{}
	if addr != "" {
		h.Set("X-Forwarded-For", addr)
	}
	cl.Do(http.MethodGet, "/signin", nil, h)
	form := url.Values{"email": {email}, "password": {pw}, "_csrf": {cl.CSRF}}
	h.Set("Content-Type", "application/x-www-form-urlencoded")
	return cl.Do(http.MethodPost, "/signin", strings.NewReader(form.Encode()), h)
}

// TestLockoutCannotDenyTheOwner is finding 10 of issue 15: wrong passwords
// from many addresses must not lock the owner out of a browser it signed
// in from before; a fresh browser meets the account-wide limit.
func TestLockoutCannotDenyTheOwner(t *testing.T) {
	t.Parallel()
	srv := webtest.Start(t, behindBalancer(func(c *web.Config) {
		c.SignInPerAccount, c.SignInPerAccountAll, c.SignInPerAddress = 3, 6, 10
	}))
	tm := signUpTeam(t, srv, "Lockout")
	owner := srv.NewClient(t)
	if p := signInFrom(owner, "192.0.2.10", tm.email, password); p.Status != http.StatusSeeOther {
		t.Fatalf("owner's first sign-in: %d", p.Status)
	}
	if owner.Cookie(deviceCookie) == "" {
		t.Error("no device cookie after a sign-in")
	}
	refused := 0
	for i := range 20 {
		addr := fmt.Sprintf("198.51.100.%d", 1+i/2)
		p := signInFrom(srv.NewClient(t), addr, tm.email, "wrong password "+strconv.Itoa(i))
		switch p.Status {
		case http.StatusUnauthorized:
		case http.StatusTooManyRequests:
			refused++
		default:
			t.Fatalf("attempt %d: status %d", i, p.Status)
		}
	}
	if checked := 20 - refused; checked > 6 {
		t.Errorf("%d of 20 wrong passwords were checked; the account-wide limit is 6", checked)
	}
	for _, addr := range []string{"192.0.2.10", "203.0.113.50"} {
		if p := signInFrom(owner, addr, tm.email, password); p.Status != http.StatusSeeOther {
			t.Fatalf("owner with its device cookie from %s after the attack: %d %s, want a sign-in", addr, p.Status, p.TestID("form-error").Text())
		}
	}
	fresh := signInFrom(srv.NewClient(t), "203.0.113.99", tm.email, password)
	if fresh.Status != http.StatusTooManyRequests {
		t.Fatalf("fresh browser during the attack: %d, want 429 (the account-wide limit)", fresh.Status)
	}
	if ra, err := strconv.Atoi(fresh.Header.Get("Retry-After")); err != nil || ra <= 0 {
		t.Fatalf("Retry-After %q", fresh.Header.Get("Retry-After"))
	}

	// The trusted browser is throttled on its own failures, and those do not
	// spill onto the account's other trusted browsers.
	for i := range 3 {
		if p := signInFrom(owner, "192.0.2.10", tm.email, "typo "+strconv.Itoa(i)); p.Status != http.StatusUnauthorized {
			t.Fatalf("device failure %d: %d", i, p.Status)
		}
	}
	if p := signInFrom(owner, "192.0.2.10", tm.email, password); p.Status != http.StatusTooManyRequests {
		t.Fatalf("device after its own 3 failures: %d, want 429", p.Status)
	}
	if p := signInFrom(tm.admin, "192.0.2.11", tm.email, password); p.Status != http.StatusSeeOther {
		t.Fatalf("the sign-up browser (its own device cookie): %d", p.Status)
	}
}

// TestDeviceCookieIsBoundToItsAccount: a device cookie vouches only for the
// account that signed in with it, and a tampered one vouches for nothing.
func TestDeviceCookieIsBoundToItsAccount(t *testing.T) {
	t.Parallel()
	srv := webtest.Start(t, behindBalancer(func(c *web.Config) {
		c.SignInPerAccount, c.SignInPerAccountAll, c.SignInPerAddress = 2, 2, 100
	}))
	a := signUpTeam(t, srv, "Device A")
	b := signUpTeam(t, srv, "Device B")
	cl := srv.NewClient(t)
	if p := signInFrom(cl, "192.0.2.20", a.email, password); p.Status != http.StatusSeeOther {
		t.Fatalf("sign-in: %d", p.Status)
	}
	good := cl.Cookie(deviceCookie)
	if good == "" {
		t.Fatal("no device cookie after a sign-in")
	}
	for i := range 2 { // B's account-wide limit for untrusted browsers
		signInFrom(srv.NewClient(t), fmt.Sprintf("198.51.100.%d", 30+i), b.email, "wrong password")
	}
	if p := signInFrom(cl, "192.0.2.20", b.email, password); p.Status != http.StatusTooManyRequests {
		t.Fatalf("A's device cookie used for B: %d, want B's untrusted limit (429)", p.Status)
	}
	for i := range 2 {
		signInFrom(srv.NewClient(t), fmt.Sprintf("198.51.100.%d", 40+i), a.email, "wrong password")
	}
	for _, forged := range []string{good[:len(good)-2] + "AA", "x" + good, "", "not.a.cookie", strings.Repeat("A", 4096)} {
		c := srv.NewClient(t)
		c.SetCookie(deviceCookie, forged)
		if p := signInFrom(c, "192.0.2.21", a.email, password); p.Status != http.StatusTooManyRequests {
			t.Errorf("forged device cookie %.20q: %d, want the untrusted limit (429)", forged, p.Status)
		}
	}
	c := srv.NewClient(t)
	c.SetCookie(deviceCookie, good)
	if p := signInFrom(c, "192.0.2.22", a.email, password); p.Status != http.StatusSeeOther {
		t.Fatalf("the genuine device cookie, copied: %d", p.Status)
	}
}

// TestSignInAnswersAlikeForUnknownAndWrong: no such account and a wrong
// password get the same status and message.
func TestSignInAnswersAlikeForUnknownAndWrong(t *testing.T) {
	t.Parallel()
	srv := webtest.Start(t, webtest.Options{})
	tm := signUpTeam(t, srv, "Alike")
	wrong := srv.NewClient(t).SignIn(tm.email, "wrong password")
	unknown := srv.NewClient(t).SignIn("nobody-"+unique()+"@example.com", "wrong password")
	if wrong.Status != unknown.Status || wrong.TestID("form-error").Text() != unknown.TestID("form-error").Text() {
		t.Fatalf("wrong password %d %q, unknown account %d %q", wrong.Status, wrong.TestID("form-error").Text(),
			unknown.Status, unknown.TestID("form-error").Text())
	}
}
