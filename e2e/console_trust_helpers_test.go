package e2e

// Helpers of console_trust_test.go: browsers at chosen client addresses,
// an attacker without a browser, and a server the test stops itself.

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"

	"github.com/perpetuity/perpetuity/e2e/fakeprovider"
	"github.com/perpetuity/perpetuity/migrations/dbtest"
)

const trustPassword = "a long enough password"

// js runs a script in the page for its effect; it must end in true.
func js(expr string) chromedp.Action[chromedp.Void] {
	return func(ctx context.Context, t *chromedp.Target) (chromedp.Void, error) {
		_, err := chromedp.Evaluate[bool](expr)(ctx, t)
		return chromedp.Void{}, err
	}
}

// fromAddress makes the tab's requests come, as the server sees them
// behind a trusted load balancer, from addr.
func fromAddress(addr string) chromedp.Action[chromedp.Void] {
	return chromedp.Func(func(ctx context.Context, t *chromedp.Target) error {
		_, err := cdp.Call(ctx, t, network.SetExtraHTTPHeaders, network.SetExtraHTTPHeadersParams{Headers: network.Headers{"X-Forwarded-For": addr}})
		return err
	})
}

// trustTab opens a tab in a browser context of its own (its own cookies)
// whose requests come from addr.
func trustTab(t *testing.T, root context.Context, addr string) *tab {
	t.Helper()
	ctx, cancel := chromedp.NewContext(root, chromedp.WithNewBrowserContext())
	t.Cleanup(cancel)
	tb := newTab(t, ctx)
	tb.step("address "+addr, fromAddress(addr))
	return tb
}

func (tb *tab) signIn(base, email, pw string) {
	tb.t.Helper()
	tb.stepWithin("sign-in form", hashing,
		chromedp.Navigate(base+"/signin"),
		chromedp.WaitVisible(byTestID("signin-form")),
		chromedp.SendKeys(byTestID("signin-email"), email),
		chromedp.SendKeys(byTestID("signin-password"), pw),
		chromedp.Click(byTestID("signin-submit")),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid="account-email"], [data-testid="form-error"]`)),
	)
}

func (tb *tab) location() string {
	tb.t.Helper()
	return run(tb, "location", chromedp.Location())
}

func (tb *tab) body() string {
	tb.t.Helper()
	return run(tb, "page text", chromedp.Text(chromedp.CSS("body")))
}

// noConsoleErrors fails on anything the browser reported but the loads of
// pages answered with one of the expected statuses.
func (tb *tab) noConsoleErrors(expected ...int) {
	tb.t.Helper()
next:
	for _, p := range tb.consoleErrors() {
		for _, s := range expected {
			if strings.Contains(p, fmt.Sprintf("status of %d", s)) {
				continue next
			}
		}
		tb.t.Errorf("browser console: %s", p)
	}
}

var csrfField = regexp.MustCompile(`name="_csrf" value="([^"]+)"`)

// wrongSignIn is an attacker's sign-in from addr (no browser needed): it
// returns the status.
func wrongSignIn(t *testing.T, base, addr, email, pw string) int {
	t.Helper()
	jar, _ := cookiejar.New(nil)
	cl := &http.Client{Jar: jar, Timeout: 30 * time.Second, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	do := func(method, body string) (int, string) {
		req, _ := http.NewRequest(method, base+"/signin", strings.NewReader(body))
		req.Header.Set("X-Forwarded-For", addr)
		if body != "" {
			req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		}
		resp, err := cl.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	_, page := do(http.MethodGet, "")
	m := csrfField.FindStringSubmatch(page)
	if m == nil {
		t.Fatal("no CSRF token on the sign-in page")
	}
	st, _ := do(http.MethodPost, url.Values{"_csrf": {m[1]}, "email": {email}, "password": {pw}}.Encode())
	return st
}

// pathOf is a link's path: links name the configured public URL, which
// these servers on a port of their own do not serve.
func pathOf(t *testing.T, link string) string {
	t.Helper()
	u, err := url.Parse(link)
	if err != nil || u.Path == "" {
		t.Fatalf("link %q", link)
	}
	return u.Path
}

// createAdmin runs `perpetuity admin create`, password on standard input.
func createAdmin(t *testing.T, s *server, email string) {
	t.Helper()
	cmd := exec.Command(binary, "admin", "create", email)
	cmd.Env = append(os.Environ(), "DATABASE_URL="+s.DBURL)
	cmd.Stdin = strings.NewReader(trustPassword + "\n")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("admin create: %v\n%s", err, out)
	}
}

// stoppable is a server this test stops with SIGTERM, as an orchestrator
// does, to read what it logs on the way down.
type stoppable struct {
	URL   string
	db    *server // its database, for scalar
	cmd   *exec.Cmd
	log   *lockedBuffer
	ended chan struct{}
}

func startStoppable(t *testing.T) *stoppable {
	t.Helper()
	fs := httptest.NewServer(fakeprovider.New())
	t.Cleanup(fs.Close)
	dbURL := dbtest.New(t)
	s := &stoppable{db: &server{t: t, DBURL: dbURL}, cmd: exec.Command(binary, "serve"), log: &lockedBuffer{}, ended: make(chan struct{})}
	s.cmd.Env = append(os.Environ(), "DATABASE_URL="+dbURL, "PERPETUITY_ADDR=127.0.0.1:0",
		"PERPETUITY_OPENAI_BASE_URL="+fs.URL+"/v1", "PERPETUITY_ANTHROPIC_BASE_URL="+fs.URL)
	pr, pw, _ := os.Pipe()
	s.cmd.Stderr = pw
	if err := s.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pw.Close()
	addr := make(chan string, 1)
	go func() {
		defer close(s.ended) // stderr closed: the process ended
		sc := bufio.NewScanner(pr)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			s.log.Write([]byte(sc.Text() + "\n"))
			var rec struct{ Msg, Addr string }
			if json.Unmarshal(sc.Bytes(), &rec) == nil && rec.Msg == "perpetuity serving" {
				addr <- rec.Addr
			}
		}
	}()
	t.Cleanup(func() {
		_ = s.cmd.Process.Kill()
		_ = s.cmd.Wait()
		if t.Failed() {
			t.Logf("server log:\n%s", s.log.String())
		}
	})
	select {
	case a := <-addr:
		s.URL = "http://" + a
	case <-s.ended:
		t.Fatalf("server exited at start:\n%s", s.log.String())
	case <-time.After(30 * time.Second):
		t.Fatalf("server did not start:\n%s", s.log.String())
	}
	return s
}

// logLines are the server's JSON log records with this message.
func (s *stoppable) logLines(msg string) []map[string]any {
	var out []map[string]any
	for _, line := range strings.Split(s.log.String(), "\n") {
		var rec map[string]any
		if json.Unmarshal([]byte(line), &rec) == nil && rec["msg"] == msg {
			out = append(out, rec)
		}
	}
	return out
}
