package authz

import (
	"context"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/perpetuity/perpetuity/e2e/fakeprovider"
	"github.com/perpetuity/perpetuity/e2e/reliability/internal/harness"
	"github.com/perpetuity/perpetuity/e2e/rig"
	"github.com/perpetuity/perpetuity/migrations/dbtest"
)

// world is one running server with its fake provider and database.
type world struct {
	t     *testing.T
	proc  *rig.Proc
	fake  *fakeprovider.Provider
	env   []string
	dbURL string
}

func startWorld(t *testing.T) *world {
	t.Helper()
	fake := fakeprovider.New()
	fs := httptest.NewServer(fake)
	t.Cleanup(fs.Close)
	dbURL := dbtest.New(t)
	env := []string{
		"DATABASE_URL=" + dbURL,
		"PERPETUITY_OPENAI_BASE_URL=" + fs.URL + "/v1",
		"PERPETUITY_ANTHROPIC_BASE_URL=" + fs.URL,
	}
	proc, err := rig.Serve(t, env)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("server log (last 8 kB):\n%s", tail(proc.Log.String(), 8<<10))
		}
	})
	return &world{t: t, proc: proc, fake: fake, env: env, dbURL: dbURL}
}

func tail(s string, n int) string {
	if len(s) > n {
		return s[len(s)-n:]
	}
	return s
}

// answer is one response, read whole.
type answer struct {
	status int
	header http.Header
	body   []byte
}

// send makes one request; header keys are sent exactly as given (case
// variants of header names reach the wire as written).
func (w *world) send(method, path string, header map[string][]string, body string) answer {
	w.t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, w.proc.URL+path, rd)
	if err != nil {
		w.t.Fatalf("%s %s: %v", method, path, err)
	}
	for k, vs := range header {
		req.Header[k] = append(req.Header[k], vs...)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		w.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return answer{status: resp.StatusCode, header: resp.Header, body: b}
}

// console is a browser stand-in: cookies, no redirects followed, the last
// CSRF token a page carried.
type console struct {
	t    *testing.T
	base string
	http *http.Client
	csrf string
}

func newConsole(t *testing.T, base string) *console {
	jar, _ := cookiejar.New(nil)
	return &console{t: t, base: base, http: &http.Client{
		Jar: jar, Timeout: 30 * time.Second,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}}
}

func (c *console) get(path string) answer { return c.send(http.MethodGet, path, nil) }

// post sends a form carrying the current CSRF token.
func (c *console) post(path string, form url.Values) answer {
	if form == nil {
		form = url.Values{}
	}
	form.Set("_csrf", c.csrf)
	return c.send(http.MethodPost, path, form)
}

// postFollow posts and, on a 303 (post/redirect/get), gets the page it
// points to, as a browser does.
func (c *console) postFollow(path string, form url.Values) answer {
	a := c.post(path, form)
	if a.status != http.StatusSeeOther {
		return a
	}
	return c.get(a.header.Get("Location"))
}

func (c *console) send(method, path string, form url.Values) answer {
	c.t.Helper()
	a, err := harness.ConsoleDo(context.Background(), c.http, method, c.base+path, form)
	if err != nil {
		c.t.Fatal(err)
	}
	if a.CSRF != "" {
		c.csrf = a.CSRF
	}
	return answer{status: a.Status, header: a.Header, body: a.Body}
}

func (c *console) signIn(email, password string) {
	c.t.Helper()
	c.get("/signin")
	a := c.post("/signin", url.Values{"email": {email}, "password": {password}})
	if a.status != http.StatusSeeOther {
		c.t.Fatalf("sign in %s: status %d: %.300s", email, a.status, a.body)
	}
}

// createPlatformAdmin runs `perpetuity admin create`, password on stdin.
func createPlatformAdmin(t *testing.T, env []string, email, password string) {
	t.Helper()
	cmd := exec.Command(rig.Binary(t), "admin", "create", email)
	cmd.Env = append(cmd.Environ(), env...)
	cmd.Stdin = strings.NewReader(password + "\n")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("admin create: %v\n%s", err, out)
	}
}

func scalar(w *world, sql string, args ...any) (int64, error) {
	return rig.Scalar(context.Background(), w.dbURL, sql, args...)
}
