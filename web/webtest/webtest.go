// Package webtest runs the console against a fresh PostgreSQL database in
// tests: a server on a loopback port (console only, no proxy), a browser-
// like client that keeps cookies and CSRF tokens, and helpers that store
// memory directly so the memory browser has something to show before the
// engine exists. The lead's end-to-end tests can mount the proxy beside it
// through Options.Mount.
package webtest

import (
	"context"
	"crypto/sha256"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/PuerkitoBio/goquery"
	"github.com/alexedwards/argon2id"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/labstack/echo/v4"

	"github.com/perpetuity/perpetuity/memory/store"
	"github.com/perpetuity/perpetuity/migrations/dbtest"
	"github.com/perpetuity/perpetuity/web"
)

// Options adjust the server a test gets.
type Options struct {
	Memory web.Memory         // nil: web.NewSQLMemory
	Config func(*web.Config)  // adjust the configuration before New
	Mount  func(e *echo.Echo) // register more routes (e.g. the proxy)
}

// Server is a console on a loopback port with its own database.
type Server struct {
	URL         string
	DatabaseURL string
	DB          *store.DB
	// Owner is the database as the migrating role, which row-level security
	// does not confine: for tests that inspect rows across tenants. The
	// console's own pool (DB) sees one tenant per transaction.
	Owner   *pgxpool.Pool
	Echo    *echo.Echo
	Console *web.Console
}

// CheapArgon2 keeps password hashing fast in tests; never use it in serving.
func CheapArgon2() *argon2id.Params {
	return &argon2id.Params{Memory: 1024, Iterations: 1, Parallelism: 1, SaltLength: 16, KeyLength: 32}
}

// Start builds the server; everything is torn down when t ends.
func Start(t testing.TB, o Options) *Server {
	t.Helper()
	dbURL := dbtest.New(t)
	ctx := context.Background()
	db, err := store.Open(ctx, dbURL)
	if err != nil {
		t.Fatalf("webtest: open store: %v", err)
	}
	t.Cleanup(db.Close)
	e := echo.New()
	e.HideBanner, e.HidePort = true, true
	srv := httptest.NewServer(e)
	t.Cleanup(srv.Close)
	cfg := web.Config{PublicURL: srv.URL, Argon2: CheapArgon2()}
	if o.Config != nil {
		o.Config(&cfg)
	}
	con, err := web.New(cfg, db, o.Memory, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatalf("webtest: console: %v", err)
	}
	con.Register(e)
	if o.Mount != nil {
		o.Mount(e)
	}
	return &Server{URL: srv.URL, DatabaseURL: dbURL, DB: db, Owner: dbtest.Owner(t, dbURL), Echo: e, Console: con}
}

// Client is a browser stand-in: it keeps cookies, does not follow
// redirects (tests look at them), and remembers the last CSRF token a page
// carried so posts can send it.
type Client struct {
	t    testing.TB
	HTTP *http.Client
	Base string
	CSRF string
}

// NewClient returns a client with an empty cookie jar.
func (s *Server) NewClient(t testing.TB) *Client {
	t.Helper()
	jar, err := cookiejar.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	return &Client{t: t, Base: s.URL, HTTP: &http.Client{
		Jar:           jar,
		Timeout:       30 * time.Second,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}}
}

// Page is one response, parsed.
type Page struct {
	Status int
	Header http.Header
	Body   string
	Doc    *goquery.Document
}

// Location is where a redirect points.
func (p *Page) Location() string { return p.Header.Get("Location") }

// TestID finds elements by data-testid.
func (p *Page) TestID(id string) *goquery.Selection {
	return p.Doc.Find(`[data-testid="` + id + `"]`)
}

// Do sends a request and parses the answer; header may be nil.
func (c *Client) Do(method, path string, body io.Reader, header http.Header) *Page {
	c.t.Helper()
	req, err := http.NewRequest(method, c.Base+path, body)
	if err != nil {
		c.t.Fatalf("webtest: %s %s: %v", method, path, err)
	}
	for k, vs := range header {
		for _, v := range vs {
			req.Header.Add(k, v)
		}
	}
	resp, err := c.HTTP.Do(req)
	if err != nil {
		c.t.Fatalf("webtest: %s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		c.t.Fatalf("webtest: read %s %s: %v", method, path, err)
	}
	doc, err := goquery.NewDocumentFromReader(strings.NewReader(string(b)))
	if err != nil {
		c.t.Fatalf("webtest: parse %s %s: %v", method, path, err)
	}
	if tok, ok := doc.Find(`input[name="_csrf"]`).First().Attr("value"); ok && tok != "" {
		c.CSRF = tok
	}
	return &Page{Status: resp.StatusCode, Header: resp.Header, Body: string(b), Doc: doc}
}

// Get fetches a page.
func (c *Client) Get(path string) *Page {
	c.t.Helper()
	return c.Do(http.MethodGet, path, nil, nil)
}

// Post submits a form, adding the last seen CSRF token unless the form
// carries one (tests of CSRF set "_csrf" themselves).
func (c *Client) Post(path string, form url.Values) *Page {
	c.t.Helper()
	if form == nil {
		form = url.Values{}
	}
	if _, ok := form["_csrf"]; !ok {
		form.Set("_csrf", c.CSRF)
	}
	h := http.Header{"Content-Type": {"application/x-www-form-urlencoded"}}
	return c.Do(http.MethodPost, path, strings.NewReader(form.Encode()), h)
}

// PostFollow posts form and, when the answer is a 303 (post/redirect/get),
// gets the page it points to, as a browser does.
func (c *Client) PostFollow(path string, form url.Values) *Page {
	c.t.Helper()
	p := c.Post(path, form)
	if p.Status == http.StatusSeeOther {
		return c.Get(p.Location())
	}
	return p
}

// Cookie is the value of the named cookie the client holds for the server.
func (c *Client) Cookie(name string) string {
	u, _ := url.Parse(c.Base)
	for _, ck := range c.HTTP.Jar.Cookies(u) {
		if ck.Name == name {
			return ck.Value
		}
	}
	return ""
}

// SetCookie plants a cookie, e.g. to replay a stolen session.
func (c *Client) SetCookie(name, value string) {
	u, _ := url.Parse(c.Base)
	c.HTTP.Jar.SetCookies(u, []*http.Cookie{{Name: name, Value: value, Path: "/"}})
}

// SignUp signs a team up, follows the redirect to the welcome page (its
// only showing of the first key) and returns that page and the key.
func (c *Client) SignUp(team, email, password string) (*Page, string) {
	c.t.Helper()
	c.Get("/signup")
	p := c.Post("/signup", url.Values{"team": {team}, "email": {email}, "password": {password}})
	if p.Status != http.StatusSeeOther || !strings.HasPrefix(p.Location(), "/console/welcome/") {
		c.t.Fatalf("webtest: sign-up %s: status %d to %q: %s", email, p.Status, p.Location(), p.TestID("form-error").Text())
	}
	w := c.Get(p.Location())
	key := strings.TrimSpace(w.TestID("new-key").Text())
	if w.Status != http.StatusOK || key == "" {
		c.t.Fatalf("webtest: welcome page %d shows no key", w.Status)
	}
	return w, key
}

// CreateKey submits the new-key form, follows its redirect to the page
// that shows the key once, and returns that page and the key. A refused
// form is returned as it came, with no key.
func (c *Client) CreateKey(form url.Values) (*Page, string) {
	c.t.Helper()
	p := c.Post("/console/keys", form)
	if p.Status != http.StatusSeeOther {
		return p, ""
	}
	if !strings.HasPrefix(p.Location(), "/console/keys/new/") {
		c.t.Fatalf("webtest: new key redirected to %q", p.Location())
	}
	k := c.Get(p.Location())
	return k, strings.TrimSpace(k.TestID("new-key").Text())
}

// SignIn signs in and returns the redirect.
func (c *Client) SignIn(email, password string) *Page {
	c.t.Helper()
	c.Get("/signin")
	return c.Post("/signin", url.Values{"email": {email}, "password": {password}})
}

// MustSignIn signs in and fails the test unless it worked.
func (c *Client) MustSignIn(email, password string) {
	c.t.Helper()
	p := c.SignIn(email, password)
	if p.Status != http.StatusSeeOther {
		c.t.Fatalf("webtest: sign-in %s: status %d: %s", email, p.Status, p.TestID("form-error").Text())
	}
	c.Get(p.Location()) // pick up the session's CSRF token
}

// Turn is one stored message for the memory browser to show.
type Turn struct {
	TenantID     int64
	UserID       int64
	Conversation string // conversation key; created on first use
	Role         string // user or assistant
	Speaker      string
	Text         string
	BornClock    int64
	Tau          float64
	Peak         float64 // birth activation peak; 0 means none is written
	Reheats      [][2]float64
}

// StoreTurn writes a message as one item with its birth activation and
// any reheats (clock, peak), advancing the user's clock to the latest of
// them. It stands in for capture until the engine writes memory.
func StoreTurn(ctx context.Context, db *store.DB, tr Turn) (itemID, conversationID int64, err error) {
	conversationID, err = db.EnsureConversation(ctx, tr.TenantID, tr.UserID, tr.Conversation, "")
	if err != nil {
		return 0, 0, err
	}
	if tr.Tau == 0 {
		tr.Tau = 1000
	}
	fp := sha256.Sum256([]byte(fmt.Sprintf("%s|%d|%s", tr.Role, tr.BornClock, tr.Text)))
	tokens := strings.Fields(strings.ToLower(tr.Text))
	err = db.InTenant(ctx, tr.TenantID, func(tx pgx.Tx) error {
		var msgID, seq int64
		if err := tx.QueryRow(ctx, `UPDATE tenant_heads SET seq = seq + 1 WHERE tenant_id = $1 RETURNING seq`, tr.TenantID).Scan(&seq); err != nil {
			return err
		}
		if err := tx.QueryRow(ctx, `INSERT INTO messages (tenant_id, user_id, conversation_id, role, speaker, position, fingerprint, created_at)
			VALUES ($1, $2, $3, $4, $5, 0, $6, now()) RETURNING id`,
			tr.TenantID, tr.UserID, conversationID, tr.Role, tr.Speaker, fp[:]).Scan(&msgID); err != nil {
			return err
		}
		if err := tx.QueryRow(ctx, `INSERT INTO items (tenant_id, message_id, user_id, conversation_id, role, speaker, part, body,
			tokens, token_count, born_clock, born_at, tau, novelty, seq)
			VALUES ($1, $2, $3, $4, $5, $6, 0, $7, $8, $9, $10, now(), $11, 0.5, $12) RETURNING id`,
			tr.TenantID, msgID, tr.UserID, conversationID, tr.Role, tr.Speaker, tr.Text, tokens, len(tokens),
			tr.BornClock, tr.Tau, seq).Scan(&itemID); err != nil {
			return err
		}
		clock := tr.BornClock + int64(len(tokens))
		if tr.Peak > 0 {
			tLast, peak := tr.BornClock, tr.Peak
			for _, r := range tr.Reheats {
				if _, err := tx.Exec(ctx, `INSERT INTO reheats (tenant_id, viewer_id, item_id, clock, peak) VALUES ($1, $2, $3, $4, $5)`,
					tr.TenantID, tr.UserID, itemID, int64(r[0]), r[1]); err != nil {
					return err
				}
				tLast, peak = int64(r[0]), r[1]
				clock = max(clock, tLast)
			}
			if _, err := tx.Exec(ctx, `INSERT INTO activations (tenant_id, viewer_id, item_id, t_last, peak) VALUES ($1, $2, $3, $4, $5)`,
				tr.TenantID, tr.UserID, itemID, tLast, peak); err != nil {
				return err
			}
		}
		_, err := tx.Exec(ctx, `UPDATE memory_users SET clock = greatest(clock, $3), last_seen_at = now() WHERE tenant_id = $1 AND id = $2`,
			tr.TenantID, tr.UserID, clock)
		return err
	})
	return itemID, conversationID, err
}

// SetClock moves a memory user's clock, to watch heat decay.
func SetClock(ctx context.Context, db *store.DB, tenantID, userID, clock int64) error {
	return db.InTenant(ctx, tenantID, func(tx pgx.Tx) error {
		_, err := tx.Exec(ctx, `UPDATE memory_users SET clock = $3 WHERE tenant_id = $1 AND id = $2`, tenantID, userID, clock)
		return err
	})
}
