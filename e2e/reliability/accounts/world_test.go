// Package accounts is issue 15, findings 7 and 10, attacked on the real
// binary: a tenant admin's invitations must not tell which addresses have
// accounts anywhere, and must be limited with no rows left by refused ones
// (item 107); wrong passwords sent from many addresses must not lock the
// owner out of a browser it has signed in from (item 110).
package accounts

import (
	"context"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"os/exec"
	"regexp"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/perpetuity/perpetuity/e2e/fakeprovider"
	"github.com/perpetuity/perpetuity/e2e/reliability/internal/harness"
	"github.com/perpetuity/perpetuity/e2e/rig"
	"github.com/perpetuity/perpetuity/migrations/dbtest"
)

const password = "a long enough password"

// world is one running server behind a (pretend) load balancer on
// loopback: PERPETUITY_TRUSTED_PROXIES names 127.0.0.1, so each browser
// picks its client address in X-Forwarded-For.
type world struct {
	t     *testing.T
	proc  *rig.Proc
	env   []string
	dbURL string
}

func startWorld(t *testing.T) *world {
	t.Helper()
	fs := httptest.NewServer(fakeprovider.New())
	t.Cleanup(fs.Close)
	dbURL := dbtest.New(t)
	env := []string{
		"DATABASE_URL=" + dbURL,
		"PERPETUITY_OPENAI_BASE_URL=" + fs.URL + "/v1",
		"PERPETUITY_ANTHROPIC_BASE_URL=" + fs.URL,
		"PERPETUITY_TRUSTED_PROXIES=127.0.0.1",
	}
	proc, err := rig.Serve(t, env)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			log := proc.Log.String()
			if len(log) > 8<<10 {
				log = log[len(log)-8<<10:]
			}
			t.Logf("server log (last 8 kB):\n%s", log)
		}
	})
	return &world{t: t, proc: proc, env: env, dbURL: dbURL}
}

func (w *world) scalar(sql string, args ...any) int64 {
	w.t.Helper()
	n, err := rig.Scalar(context.Background(), w.dbURL, sql, args...)
	if err != nil {
		w.t.Fatalf("%s: %v", sql, err)
	}
	return n
}

// createPlatformAdmin runs `perpetuity admin create`, password on stdin.
func (w *world) createPlatformAdmin(email string) {
	w.t.Helper()
	cmd := exec.Command(rig.Binary(w.t), "admin", "create", email)
	cmd.Env = append(cmd.Environ(), w.env...)
	cmd.Stdin = strings.NewReader(password + "\n")
	if out, err := cmd.CombinedOutput(); err != nil {
		w.t.Fatalf("admin create: %v\n%s", err, out)
	}
}

// browser is one browser at one client address: its own cookie jar (the
// session, CSRF and device cookies), redirects not followed, the last CSRF
// token a page carried.
type browser struct {
	t    testing.TB
	base string
	addr string
	http *http.Client
	mu   sync.Mutex // csrf, for bursts from one browser
	csrf string
}

// forwardFor names the browser's address to the server, as the load
// balancer in front of it would.
type forwardFor struct{ b *browser }

func (f forwardFor) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("X-Forwarded-For", f.b.addr)
	return http.DefaultTransport.RoundTrip(r)
}

func (w *world) browser(addr string) *browser {
	jar, _ := cookiejar.New(nil)
	b := &browser{t: w.t, base: w.proc.URL, addr: addr}
	b.http = &http.Client{
		Jar: jar, Timeout: 60 * time.Second, Transport: forwardFor{b},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
	return b
}

// answer is one response and how long it took.
type answer struct {
	status  int
	header  http.Header
	body    string
	elapsed time.Duration
}

func (b *browser) get(path string) answer { return b.send(http.MethodGet, path, nil) }

// post sends a form with the browser's current CSRF token.
func (b *browser) post(path string, form url.Values) answer {
	if form == nil {
		form = url.Values{}
	}
	b.mu.Lock()
	form.Set("_csrf", b.csrf)
	b.mu.Unlock()
	return b.send(http.MethodPost, path, form)
}

// postFollow posts and, on a 303 (post/redirect/get), gets the page it
// points to, as a browser does; elapsed stays the post's.
func (b *browser) postFollow(path string, form url.Values) answer {
	a := b.post(path, form)
	if a.status != http.StatusSeeOther {
		return a
	}
	g := b.get(a.header.Get("Location"))
	g.elapsed = a.elapsed
	return g
}

func (b *browser) send(method, path string, form url.Values) answer {
	b.t.Helper()
	start := time.Now()
	a, err := harness.ConsoleDo(context.Background(), b.http, method, b.base+path, form)
	el := time.Since(start)
	if err != nil {
		b.t.Fatal(err)
	}
	if a.CSRF != "" {
		b.mu.Lock()
		b.csrf = a.CSRF
		b.mu.Unlock()
	}
	return answer{status: a.Status, header: a.Header, body: string(a.Body), elapsed: el}
}

func (b *browser) signUp(team, email string) {
	b.t.Helper()
	b.get("/signup")
	if a := b.post("/signup", url.Values{"team": {team}, "email": {email}, "password": {password}}); a.status != http.StatusSeeOther {
		b.t.Fatalf("sign-up %s: %d %.300s", email, a.status, a.body)
	}
}

// signIn tries a password; the browser's session, if any, is over first
// (its other cookies, the device cookie among them, stay).
func (b *browser) signIn(email, pw string) answer {
	b.t.Helper()
	u, _ := url.Parse(b.base)
	b.http.Jar.SetCookies(u, []*http.Cookie{{Name: "pp_session", Value: "", Path: "/", MaxAge: -1}})
	b.get("/signin")
	return b.post("/signin", url.Values{"email": {email}, "password": {pw}})
}

func (b *browser) cookie(name string) string {
	u, _ := url.Parse(b.base)
	for _, c := range b.http.Jar.Cookies(u) {
		if c.Name == name {
			return c.Value
		}
	}
	return ""
}

var (
	inviteLink = regexp.MustCompile(`/invite/[A-Za-z0-9_-]{43}`)
	tables     = regexp.MustCompile(`(?s)<table.*?</table>`)
	csrfValue  = regexp.MustCompile(`name="_csrf" value="[^"]*"`)
)

// formError is the text of the page's form error, if any.
var formErrorRE = regexp.MustCompile(`data-testid="form-error">([^<]*)<`)

func formError(body string) string {
	if m := formErrorRE.FindStringSubmatch(body); m != nil {
		return m[1]
	}
	return ""
}

func median(ds []time.Duration) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := append([]time.Duration(nil), ds...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	return s[len(s)/2]
}

// alike is the timing guard: two medians within a factor of two of each
// other, or within 5 ms. A correctness guard against a class that takes a
// different path, not a performance target.
func alike(a, b time.Duration) bool {
	lo, hi := min(a, b), max(a, b)
	return hi-lo <= 5*time.Millisecond || hi <= 2*lo
}
