package web_test

import (
	"bytes"
	"io"
	"mime/multipart"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/PuerkitoBio/goquery"
	"github.com/labstack/echo/v4"

	"github.com/perpetuity/perpetuity/web"
	"github.com/perpetuity/perpetuity/web/webtest"
)

func TestSecurityHeadersAndNoInlineCode(t *testing.T) {
	t.Parallel()
	srv := webtest.Start(t, webtest.Options{})
	tm := signUpTeam(t, srv, "Headers")
	_, convID := storeTurn(t, srv, webtest.Turn{TenantID: tm.tenantID, UserID: tm.userID, Conversation: "c1", Role: "user", Text: "hello there", Peak: 1})
	pages := []string{
		"/signin", "/signup", "/console", "/console/connect", "/console/keys", "/console/users",
		"/console/memory", "/console/accounts", "/console/audit",
		"/console/conversations/" + itoa(convID), "/console/users/" + itoa(tm.userID), "/static/htmx.min.js",
	}
	anon := srv.NewClient(t)
	for _, path := range pages {
		cl := tm.admin
		if path == "/signin" || path == "/signup" {
			cl = anon
		}
		p := cl.Get(path)
		if p.Status != http.StatusOK {
			t.Fatalf("GET %s = %d", path, p.Status)
		}
		csp := p.Header.Get("Content-Security-Policy")
		for _, want := range []string{"frame-ancestors 'none'", "script-src 'self'", "style-src 'self'", "default-src 'none'"} {
			if !strings.Contains(csp, want) {
				t.Errorf("GET %s: CSP %q lacks %q", path, csp, want)
			}
		}
		if strings.Contains(csp, "unsafe-inline") || strings.Contains(csp, "unsafe-eval") {
			t.Errorf("GET %s: CSP allows inline code: %q", path, csp)
		}
		if got := p.Header.Get("X-Content-Type-Options"); got != "nosniff" {
			t.Errorf("GET %s: X-Content-Type-Options %q", path, got)
		}
		if strings.HasPrefix(path, "/static/") {
			continue
		}
		if got := p.Header.Get("Cache-Control"); got != "no-store" {
			t.Errorf("GET %s: Cache-Control %q, want no-store", path, got)
		}
		if n := p.Doc.Find("script:not([src])").Length(); n != 0 {
			t.Errorf("GET %s: %d inline scripts", path, n)
		}
		if n := p.Doc.Find("[style]").Length(); n != 0 {
			t.Errorf("GET %s: %d style attributes", path, n)
		}
		if n := p.Doc.Find("style").Length(); n != 0 {
			t.Errorf("GET %s: %d style elements", path, n)
		}
		p.Doc.Find("*").Each(func(_ int, s *goquery.Selection) {
			for _, a := range s.Nodes[0].Attr {
				if strings.HasPrefix(strings.ToLower(a.Key), "on") || strings.HasPrefix(a.Key, "hx-on") {
					t.Errorf("GET %s: inline handler %s=%q", path, a.Key, a.Val)
				}
			}
		})
		p.Doc.Find("script[src]").Each(func(_ int, s *goquery.Selection) {
			if src, _ := s.Attr("src"); !strings.HasPrefix(src, "/static/") {
				t.Errorf("GET %s: script from %q, want the binary's own /static/", path, src)
			}
		})
	}
}

func TestCookieFlags(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name    string
		secure  bool
		session string
	}{
		{"plain http", false, "pp_session"},
		{"behind TLS", true, "__Host-pp_session"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			srv := webtest.Start(t, webtest.Options{Config: func(cfg *web.Config) { cfg.SecureCookies = c.secure }})
			cl := srv.NewClient(t)
			// Read Set-Cookie directly: the jar would drop Secure cookies over http.
			form := cl.Get("/signup")
			var csrf *http.Cookie
			for _, ck := range (&http.Response{Header: form.Header}).Cookies() {
				csrf = ck
			}
			if csrf == nil || !csrf.HttpOnly || csrf.SameSite != http.SameSiteStrictMode || csrf.Secure != c.secure {
				t.Fatalf("CSRF cookie %+v", csrf)
			}
			if c.secure {
				cl.SetCookie(csrf.Name, csrf.Value) // the jar refuses Secure cookies over http
			}
			p := cl.Post("/signup", url.Values{"team": {"T"}, "email": {"flags@example.com"}, "password": {password}})
			if p.Status != http.StatusSeeOther {
				t.Fatalf("sign-up status %d", p.Status)
			}
			var sess *http.Cookie
			for _, ck := range (&http.Response{Header: p.Header}).Cookies() {
				if ck.Name == c.session {
					sess = ck
				}
			}
			if sess == nil {
				t.Fatalf("no %s cookie in %v", c.session, p.Header.Values("Set-Cookie"))
			}
			if !sess.HttpOnly || sess.SameSite != http.SameSiteLaxMode || sess.Secure != c.secure || sess.Path != "/" {
				t.Fatalf("session cookie %+v", sess)
			}
			if got := p.Header.Get("Strict-Transport-Security"); (got != "") != c.secure {
				t.Fatalf("HSTS %q with secure=%v", got, c.secure)
			}
		})
	}
}

func TestCSRFRejection(t *testing.T) {
	t.Parallel()
	srv := webtest.Start(t, webtest.Options{})
	tm := signUpTeam(t, srv, "Csrf")
	tm.admin.Get("/console/keys")
	good := tm.admin.CSRF
	if good == "" {
		t.Fatal("no CSRF token on the keys page")
	}
	before := tm.admin.Get("/console/keys").TestID("key-row").Length()

	anon := srv.NewClient(t)
	anon.Get("/signin")
	cases := []struct {
		name   string
		cl     *webtest.Client
		path   string
		form   url.Values
		header http.Header
		status int
	}{
		{"no token", tm.admin, "/console/keys", url.Values{"_csrf": {""}, "name": {"x"}, "user_id": {itoa(tm.userID)}}, nil, http.StatusForbidden},
		{"wrong token", tm.admin, "/console/keys", url.Values{"_csrf": {good + "x"}, "name": {"x"}, "user_id": {itoa(tm.userID)}}, nil, http.StatusForbidden},
		{"anonymous cookie's token in a session", tm.admin, "/console/keys", url.Values{"_csrf": {anon.CSRF}, "user_id": {itoa(tm.userID)}}, nil, http.StatusForbidden},
		{"cross-site", tm.admin, "/console/keys", url.Values{"_csrf": {good}, "user_id": {itoa(tm.userID)}}, http.Header{"Sec-Fetch-Site": {"cross-site"}}, http.StatusForbidden},
		{"sign-in without token", anon, "/signin", url.Values{"_csrf": {""}, "email": {tm.email}, "password": {password}}, nil, http.StatusForbidden},
		{"sign-out without token", tm.admin, "/signout", url.Values{"_csrf": {""}}, nil, http.StatusForbidden},
		{"header token accepted", tm.admin, "/console/keys", url.Values{"_csrf": {""}, "name": {"x"}, "user_id": {itoa(tm.userID)}}, http.Header{"X-Csrf-Token": {good}}, http.StatusSeeOther},
	}
	for _, c := range cases {
		h := http.Header{"Content-Type": {"application/x-www-form-urlencoded"}}
		for k, v := range c.header {
			h[k] = v
		}
		p := c.cl.Do(http.MethodPost, c.path, strings.NewReader(c.form.Encode()), h)
		if p.Status != c.status {
			t.Errorf("%s: status %d, want %d", c.name, p.Status, c.status)
		}
	}
	after := tm.admin.Get("/console/keys").TestID("key-row").Length()
	if after != before+1 {
		t.Fatalf("keys %d -> %d: only the request with a valid token may create one", before, after)
	}
	if p := tm.admin.Get("/console"); p.Status != http.StatusOK {
		t.Fatalf("session ended by a forged sign-out: %d", p.Status)
	}
}

// TestUploadLimitNeedsASession: the dictionary upload's large body limit is
// for a signed-in session, not for whoever sends a session cookie. A body
// past the form limit from a made-up session is cut before the CSRF check
// reads it (the form it would have found valid is never parsed), while
// the admin's own session uploads past it (TestDictionaryRolloutFromConsole).
func TestUploadLimitNeedsASession(t *testing.T) {
	t.Parallel()
	srv := webtest.Start(t, webtest.Options{})
	anon := srv.NewClient(t)
	anon.Get("/signin")
	if anon.CSRF == "" {
		t.Fatal("no CSRF token before sign-in")
	}
	anon.SetCookie("pp_session", strings.Repeat("A", 43))
	var body bytes.Buffer
	mw := multipart.NewWriter(&body)
	fw, err := mw.CreateFormFile("file", "dict.json")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := fw.Write(bytes.Repeat([]byte("x"), 1<<20)); err != nil {
		t.Fatal(err)
	}
	// The token last: only a parser that read the whole file finds it.
	if err := mw.WriteField("_csrf", anon.CSRF); err != nil {
		t.Fatal(err)
	}
	if err := mw.Close(); err != nil {
		t.Fatal(err)
	}
	p := anon.Do(http.MethodPost, "/console/dictionaries", &body, http.Header{"Content-Type": {mw.FormDataContentType()}})
	if p.Status != http.StatusRequestEntityTooLarge || !strings.Contains(p.Body, "larger than the console takes") {
		t.Fatalf("status %d: the whole body was read for a session that does not exist\n%s", p.Status, p.Body)
	}
}

// readRefused is a body the server stopped reading, as app's body
// deadline and budget refuse one: its error carries the status.
type readRefused struct{ status int }

func (e readRefused) Error() string   { return "refused" }
func (e readRefused) StatusCode() int { return e.status }

type failingBody struct {
	read io.Reader
	err  error
}

func (b *failingBody) Read(p []byte) (int, error) {
	n, err := b.read.Read(p)
	if err == io.EOF {
		return n, b.err
	}
	return n, err
}

func (b *failingBody) Close() error { return nil }

// TestFormUnreadSaysWhy: a console form whose body the server stopped
// reading (too slow, the process's body budget spent, the client gone)
// gets a page saying so with its status, not "this form has expired": a
// user told that reloads and resends into the same refusal. Urlencoded
// and multipart forms alike; the form's token is valid throughout.
func TestFormUnreadSaysWhy(t *testing.T) {
	t.Parallel()
	srv := webtest.Start(t, webtest.Options{})
	// The test's requests name the error their body ends with; the body
	// is cut before its last byte, where the token is, as a refusal
	// would cut it.
	srv.Echo.Pre(func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(ec echo.Context) error {
			r := ec.Request()
			var err error
			switch r.Header.Get("X-Test-Body") {
			case "budget":
				err = readRefused{http.StatusServiceUnavailable}
			case "timeout":
				err = readRefused{http.StatusRequestTimeout}
			case "reset":
				err = io.ErrUnexpectedEOF
			default:
				return next(ec)
			}
			b, rerr := io.ReadAll(r.Body)
			if rerr != nil {
				return rerr
			}
			r.Body = &failingBody{read: bytes.NewReader(b[:len(b)-1]), err: err}
			return next(ec)
		}
	})
	cl := srv.NewClient(t)
	cl.Get("/signin")
	if cl.CSRF == "" {
		t.Fatal("no CSRF token before sign-in")
	}
	form := url.Values{"email": {"a@example.com"}, "password": {"not this one"}, "_csrf": {cl.CSRF}}.Encode()
	var multi bytes.Buffer
	mw := multipart.NewWriter(&multi)
	for k, v := range map[string]string{"email": "a@example.com", "password": "not this one", "_csrf": cl.CSRF} {
		if err := mw.WriteField(k, v); err != nil {
			t.Fatal(err)
		}
	}
	if err := mw.Close(); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		body, contentType, payload string
		status                     int
		says, retryAfter           string
	}{
		{"budget", "application/x-www-form-urlencoded", form, http.StatusServiceUnavailable, "busy", "1"},
		{"budget", mw.FormDataContentType(), multi.String(), http.StatusServiceUnavailable, "busy", "1"},
		{"timeout", "application/x-www-form-urlencoded", form, http.StatusRequestTimeout, "too long", ""},
		{"timeout", mw.FormDataContentType(), multi.String(), http.StatusRequestTimeout, "too long", ""},
		{"reset", "application/x-www-form-urlencoded", form, http.StatusBadRequest, "could not be read", ""},
		// The same form read whole: the token is good, the sign-in fails.
		{"whole", "application/x-www-form-urlencoded", form, http.StatusOK, "", ""},
	}
	for _, c := range cases {
		t.Run(c.body+" "+strings.Split(c.contentType, ";")[0], func(t *testing.T) {
			p := cl.Do(http.MethodPost, "/signin", strings.NewReader(c.payload),
				http.Header{"Content-Type": {c.contentType}, "X-Test-Body": {c.body}})
			if strings.Contains(p.Body, "expired") {
				t.Fatalf("status %d: a form the server stopped reading called expired\n%s", p.Status, p.Body)
			}
			if c.body == "whole" {
				if p.Status == http.StatusForbidden || p.Status >= 500 {
					t.Fatalf("status %d for a form read whole\n%s", p.Status, p.Body)
				}
				return
			}
			if p.Status != c.status || !strings.Contains(p.Body, c.says) || p.Header.Get("Retry-After") != c.retryAfter {
				t.Fatalf("status %d, Retry-After %q; want %d saying %q, Retry-After %q\n%s",
					p.Status, p.Header.Get("Retry-After"), c.status, c.says, c.retryAfter, p.Body)
			}
		})
	}
	// A form read whole that parses badly (a stray % in the query) is not
	// a body the server stopped reading: its token decides, as before.
	p := cl.Do(http.MethodPost, "/signin?x=%zz", strings.NewReader(form), http.Header{"Content-Type": {"application/x-www-form-urlencoded"}})
	if p.Status == http.StatusBadRequest || p.Status == http.StatusForbidden || p.Status >= 500 {
		t.Fatalf("status %d for a form read whole beside a malformed query\n%s", p.Status, p.Body)
	}
}
