package web_test

import (
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

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

// TestWrongPasswordsCannotLockTheAccount is issue 18, finding 2: wrong
// passwords for an account, from one address or from many, hold back only
// the addresses they came from (growing delays), never the account: its
// owner signs in from another address at once, in a fresh browser as well
// as in one it used before, and from the attacked address in a browser it
// used before.
func TestWrongPasswordsCannotLockTheAccount(t *testing.T) {
	t.Parallel()
	srv := webtest.Start(t, behindBalancer(func(c *web.Config) {
		c.SignInPerAccount, c.SignInPerAddress = 3, 100
	}))
	tm := signUpTeam(t, srv, "Lockout")
	owner := srv.NewClient(t)
	if p := signInFrom(owner, "192.0.2.10", tm.email, password); p.Status != http.StatusSeeOther {
		t.Fatalf("owner's first sign-in: %d", p.Status)
	}
	if owner.Cookie(deviceCookie) == "" {
		t.Error("no device cookie after a sign-in")
	}
	// A storm from one address: three are checked, then it waits.
	checked := 0
	for i := range 30 {
		switch p := signInFrom(srv.NewClient(t), "198.51.100.7", tm.email, "wrong password "+strconv.Itoa(i)); p.Status {
		case http.StatusUnauthorized:
			checked++
		case http.StatusTooManyRequests:
			if ra, err := strconv.Atoi(p.Header.Get("Retry-After")); err != nil || ra <= 0 {
				t.Fatalf("attempt %d: Retry-After %q", i, p.Header.Get("Retry-After"))
			}
		default:
			t.Fatalf("attempt %d: status %d", i, p.Status)
		}
	}
	if checked != 3 {
		t.Errorf("%d of 30 wrong passwords from one address were checked, want the 3 free ones", checked)
	}
	// And from many, two each: none of these addresses is slowed yet.
	for i := range 40 {
		addr := fmt.Sprintf("203.0.113.%d", 1+i/2)
		if p := signInFrom(srv.NewClient(t), addr, tm.email, "wrong password "+strconv.Itoa(i)); p.Status != http.StatusUnauthorized {
			t.Fatalf("attempt %d from %s: %d", i, addr, p.Status)
		}
	}
	cases := []struct {
		name string
		cl   *webtest.Client
		addr string
		want int
	}{
		{"a fresh browser at a fresh address", srv.NewClient(t), "192.0.2.99", http.StatusSeeOther},
		{"the owner's browser at its address", owner, "192.0.2.10", http.StatusSeeOther},
		{"the owner's browser at the attacked address", owner, "198.51.100.7", http.StatusSeeOther},
		{"a fresh browser at the attacked address", srv.NewClient(t), "198.51.100.7", http.StatusTooManyRequests},
	}
	for _, c := range cases {
		if p := signInFrom(c.cl, c.addr, tm.email, password); p.Status != c.want {
			t.Errorf("%s after the storm: %d %s, want %d", c.name, p.Status, p.TestID("form-error").Text(), c.want)
		}
	}

	// A trusted browser is throttled on its own failures, and those do not
	// spill onto the account's other browsers.
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

// TestSignInDelaysGrow: past the free failures, each attempt from an
// address waits after the one before, twice as long each time; when the
// wait is over one more attempt is checked.
func TestSignInDelaysGrow(t *testing.T) {
	t.Parallel()
	srv := webtest.Start(t, behindBalancer(func(c *web.Config) {
		c.SignInPerAccount, c.SignInDelay, c.SignInMaxDelay = 2, time.Second, time.Hour
	}))
	tm := signUpTeam(t, srv, "Delays")
	const addr = "198.51.100.20"
	attempt := func(pw string) (int, int) {
		p := signInFrom(srv.NewClient(t), addr, tm.email, pw)
		ra, _ := strconv.Atoi(p.Header.Get("Retry-After"))
		return p.Status, ra
	}
	for i := range 2 {
		if st, _ := attempt("wrong " + strconv.Itoa(i)); st != http.StatusUnauthorized {
			t.Fatalf("free failure %d: %d", i, st)
		}
	}
	var waits []int
	for round := range 2 {
		st, ra := attempt("wrong again")
		if st != http.StatusTooManyRequests || ra <= 0 {
			t.Fatalf("round %d, right after a failure: %d Retry-After %d, want 429 with a wait", round, st, ra)
		}
		waits = append(waits, ra)
		time.Sleep(time.Duration(ra)*time.Second + 100*time.Millisecond)
		if st, _ := attempt("wrong once more"); st != http.StatusUnauthorized {
			t.Fatalf("round %d, after waiting %ds: %d, want the attempt checked", round, ra, st)
		}
	}
	if waits[1] <= waits[0] {
		t.Errorf("waits %v do not grow", waits)
	}
	if p := signInFrom(srv.NewClient(t), "192.0.2.30", tm.email, password); p.Status != http.StatusSeeOther {
		t.Errorf("the owner from another address during the delays: %d", p.Status)
	}
}

// TestDeviceCookieIsBoundToItsAccount: a device cookie vouches only for the
// account that signed in with it, and a tampered one vouches for nothing.
func TestDeviceCookieIsBoundToItsAccount(t *testing.T) {
	t.Parallel()
	srv := webtest.Start(t, behindBalancer(func(c *web.Config) {
		c.SignInPerAccount, c.SignInPerAddress = 2, 100
	}))
	a := signUpTeam(t, srv, "Device A")
	b := signUpTeam(t, srv, "Device B")
	const addr = "192.0.2.20"
	cl := srv.NewClient(t)
	if p := signInFrom(cl, addr, a.email, password); p.Status != http.StatusSeeOther {
		t.Fatalf("sign-in: %d", p.Status)
	}
	good := cl.Cookie(deviceCookie)
	if good == "" {
		t.Fatal("no device cookie after a sign-in")
	}
	// B's and A's failures at this address use up its free ones.
	for range 2 {
		signInFrom(srv.NewClient(t), addr, b.email, "wrong password")
		signInFrom(srv.NewClient(t), addr, a.email, "wrong password")
	}
	if p := signInFrom(cl, addr, b.email, password); p.Status != http.StatusTooManyRequests {
		t.Fatalf("A's device cookie used for B: %d, want B's limit at this address (429)", p.Status)
	}
	// One character of the MAC changed, the cookie still well formed: the
	// last character holds padding bits too, so the one before it is
	// changed, always to another. (Setting the last two to "AA" forged
	// the genuine cookie itself whenever its MAC ended in a zero byte:
	// one run in 256.)
	i := len(good) - 2
	other := "A"
	if good[i] == 'A' {
		other = "B"
	}
	for _, forged := range []string{good[:i] + other + good[i+1:], "x" + good, "", "not.a.cookie", strings.Repeat("A", 4096)} {
		c := srv.NewClient(t)
		c.SetCookie(deviceCookie, forged)
		if p := signInFrom(c, addr, a.email, password); p.Status != http.StatusTooManyRequests {
			t.Errorf("forged device cookie %.20q: %d, want the address's limit (429)", forged, p.Status)
		}
	}
	c := srv.NewClient(t)
	c.SetCookie(deviceCookie, good)
	if p := signInFrom(c, addr, a.email, password); p.Status != http.StatusSeeOther {
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
