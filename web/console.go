// Package web is the admin console: sign-up and sign-in, API keys, memory
// users, the memory browser with heat pictures, accounts and the audit log.
// It is a library: New builds a Console and Register mounts its routes on
// the Echo instance that also serves the proxy (whose /k/ and /v1/ routes
// are not the console's).
//
// Choices made here, beyond DESIGN §9:
//   - Console accounts (people) are separate from memory users (whose
//     memory it is). One account per email address service-wide; tenant
//     accounts are tenant_admin, tenant_member (keys and usage, no memory
//     content) or tenant_reader (memory content, read-only), platform
//     admins belong to no tenant and act in one tenant at a time after
//     "entering" it.
//   - Sessions are rows in console_sessions holding only a SHA-256 of the
//     cookie token; they are rotated on sign-in and on entering a tenant,
//     deleted on sign-out and when the account is disabled, and the account
//     row is re-read on every request.
//   - CSRF: a synchronizer token per session, a double-submit cookie before
//     sign-in (see csrf.go). Sign-in failures are throttled in the
//     database (throttle.go) per account and address, or per browser the
//     owner signed in from before (device.go), with growing delays and no
//     lock on the account (signin.go); admins clear them and platform
//     admins or the operator issue reset links (reset.go).
//   - Every page that shows memory content writes an audit entry first
//     (memory.go, export.go); the audit page names what entries acted on
//     by its current name (memory/store/audit.go).
//   - Keys and reset links are shown once, on the page their form
//     redirects to, sealed for the session until then (reveal.go), never
//     stored in plain text or carried in a URL; invitation links are shown
//     once, in the response that made them.
//   - Every tenant query runs in store.DB.InTenant and names tenant_id; IDs
//     from URLs are looked up within the session's tenant, so another
//     tenant's IDs are simply not found (404).
package web

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/a-h/templ"
	"github.com/alexedwards/argon2id"
	"github.com/labstack/echo/v4"

	"github.com/perpetuity/perpetuity/memory/ops"
	"github.com/perpetuity/perpetuity/memory/store"
	"github.com/perpetuity/perpetuity/policies"
	"github.com/perpetuity/perpetuity/templates"
)

// Config is the console's configuration; zero values take the defaults
// noted on each field.
type Config struct {
	// PublicURL is where users reach the service, e.g. http://localhost:8080.
	// Proxy URLs are PublicURL+"/k/<key>/v1" (OpenAI) and PublicURL+"/k/<key>"
	// (Anthropic).
	PublicURL string
	// SecureCookies marks cookies Secure (and __Host- prefixed) and sends
	// HSTS; set it whenever the console is served over TLS.
	SecureCookies bool

	SessionIdle time.Duration // sign out after this long unused; default 8h
	SessionMax  time.Duration // sign out after this long regardless; default 72h

	// Sign-in failures on an account are counted per client address, or
	// per browser holding the account's device cookie (device.go): after
	// SignInPerAccount of them in a day, each further attempt from there
	// waits SignInDelay after the one before, doubling up to
	// SignInMaxDelay. Nothing locks the account itself. A client address
	// may fail SignInPerAddress times on any accounts per SignInWindow
	// (four times that per day) besides (throttle.go).
	SignInWindow     time.Duration // default 15m
	SignInPerAccount int           // free failures per account and address, or per trusted browser; default 5
	SignInDelay      time.Duration // the first wait after them; default 30s
	SignInMaxDelay   time.Duration // the longest wait; default 1h
	SignInPerAddress int           // failures per client address, any account; default 20
	DeviceTrust      time.Duration // how long a sign-in vouches for its browser; default 90 days
	SignUpWindow     time.Duration // default 1h
	SignUpPerAddress int           // sign-up attempts per address per window; default 10

	InviteTTL      time.Duration // how long an invitation link works; default 7 days
	ResetTTL       time.Duration // how long a password reset link works; default 24h
	AuditPageSize  int           // audit entries per page; default 100
	InvitesPerHour int           // invitations a team may make per hour; default 20
	InvitesPerDay  int           // and per 24 hours; default 100

	// KeyChanged, when set, is told a key's id after the console revoked
	// or rotated it or changed its limits, so the proxy in this process
	// drops its cached copy and the change holds on the key's next request.
	KeyChanged func(keyID int64)
	// InspectRetention is how long the proxy keeps request records for the
	// inspector (inspector.go); the pages say so. 0: none are kept.
	InspectRetention time.Duration

	// Argon2 are the password hashing parameters; nil means
	// argon2id.DefaultParams. Tests pass cheap ones.
	Argon2 *argon2id.Params
}

func (cfg *Config) defaults() error {
	u, err := url.Parse(cfg.PublicURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("console: PublicURL %q is not an http(s) URL", cfg.PublicURL)
	}
	cfg.PublicURL = strings.TrimRight(cfg.PublicURL, "/")
	def := func(d *time.Duration, v time.Duration) {
		if *d <= 0 {
			*d = v
		}
	}
	defInt := func(n *int, v int) {
		if *n <= 0 {
			*n = v
		}
	}
	def(&cfg.SessionIdle, 8*time.Hour)
	def(&cfg.SessionMax, 72*time.Hour)
	def(&cfg.SignInWindow, 15*time.Minute)
	def(&cfg.SignUpWindow, time.Hour)
	def(&cfg.InviteTTL, 7*24*time.Hour)
	def(&cfg.DeviceTrust, 90*24*time.Hour)
	defInt(&cfg.SignInPerAccount, 5)
	def(&cfg.SignInDelay, 30*time.Second)
	def(&cfg.SignInMaxDelay, time.Hour)
	def(&cfg.ResetTTL, 24*time.Hour)
	defInt(&cfg.AuditPageSize, auditPageSize)
	defInt(&cfg.SignInPerAddress, 20)
	defInt(&cfg.SignUpPerAddress, 10)
	defInt(&cfg.InvitesPerHour, 20)
	defInt(&cfg.InvitesPerDay, 100)
	if cfg.SignInWindow > maxThrottleWindow || cfg.SignUpWindow > maxThrottleWindow || cfg.SignInMaxDelay > maxThrottleWindow {
		return fmt.Errorf("console: throttle windows are at most %s", maxThrottleWindow)
	}
	if cfg.Argon2 == nil {
		p := *argon2id.DefaultParams
		cfg.Argon2 = &p
	}
	return nil
}

// Console serves the admin console.
type Console struct {
	cfg           Config
	db            *store.DB
	mem           Memory
	log           *slog.Logger
	authz         *authorizer
	dummyHash     string // compared against when an email is unknown, so timing says nothing
	sessionCookie string
	csrfCookie    string
	deviceCookie  string
	flashCookie   string
	arenas        ops.Arenas // the serving engine, for integrity checks (SetArenas)
	redactor      *ops.Redactor
}

// New builds the console. mem is what the memory browser reads; nil means
// the SQL-backed NewSQLMemory(db). It fails when the embedded policy cannot
// be loaded or leaves a console route without any rule.
func New(cfg Config, db *store.DB, mem Memory, log *slog.Logger) (*Console, error) {
	if err := cfg.defaults(); err != nil {
		return nil, err
	}
	if db == nil {
		return nil, errors.New("console: nil database")
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if mem == nil {
		mem = NewSQLMemory(db)
	}
	az, err := newAuthorizer(policies.Model(), policies.Policy())
	if err != nil {
		return nil, fmt.Errorf("console policy: %w", err)
	}
	dummy, err := argon2id.CreateHash("not a password anyone has", cfg.Argon2)
	if err != nil {
		return nil, fmt.Errorf("console: %w", err)
	}
	c := &Console{
		cfg: cfg, db: db, mem: mem, log: log, authz: az, dummyHash: dummy,
		sessionCookie: "pp_session", csrfCookie: "pp_csrf", deviceCookie: "pp_device", flashCookie: "pp_flash",
		redactor: &ops.Redactor{St: db},
	}
	if cfg.SecureCookies {
		// __Host- cookies are Secure, host-only and path "/" by force.
		c.sessionCookie, c.csrfCookie, c.deviceCookie = "__Host-pp_session", "__Host-pp_csrf", "__Host-pp_device"
		c.flashCookie = "__Host-pp_flash"
	}
	for _, r := range c.routes() {
		if !c.authz.hasRule(r.path, r.method) {
			return nil, fmt.Errorf("console policy: no rule for %s %s", r.method, r.path)
		}
	}
	return c, nil
}

type route struct {
	method string
	path   string
	h      echo.HandlerFunc
}

const staticRoute = "/static/*"

// routes is every console route. Each must have a rule in policies/.
func (c *Console) routes() []route {
	t := c.inTenant
	return append([]route{
		{http.MethodGet, "/", c.root},
		{http.MethodGet, staticRoute, c.static},
		{http.MethodGet, "/signup", c.signUpForm},
		{http.MethodPost, "/signup", c.signUp},
		{http.MethodGet, "/signin", c.signInForm},
		{http.MethodPost, "/signin", c.signIn},
		{http.MethodPost, "/signout", c.signOut},
		{http.MethodGet, "/invite/:token", c.inviteForm},
		{http.MethodPost, "/invite/:token", c.acceptInvite},
		{http.MethodGet, "/reset/:token", c.resetForm},
		{http.MethodPost, "/reset/:token", c.resetPassword},

		{http.MethodGet, "/console", t(c.overview)},
		{http.MethodGet, "/console/connect", t(c.connect)},
		{http.MethodGet, welcomePrefix + ":id", t(c.welcome)},
		{http.MethodGet, "/console/keys", t(c.keys)},
		{http.MethodPost, "/console/keys", t(c.createKey)},
		{http.MethodGet, newKeyPrefix + ":id", t(c.newKey)},
		{http.MethodPost, "/console/keys/:id/revoke", t(c.revokeKey)},
		{http.MethodGet, "/console/keys/:id/rotate", t(c.confirmRotate)},
		{http.MethodPost, "/console/keys/:id/rotate", t(c.rotateKey)},
		{http.MethodGet, "/console/keys/:id/limits", t(c.keyLimitsForm)},
		{http.MethodPost, "/console/keys/:id/limits", t(c.saveKeyLimits)},
		{http.MethodGet, "/console/usage", t(c.usage)},
		{http.MethodGet, "/console/users", t(c.users)},
		{http.MethodGet, "/console/users/:id", t(c.user)},
		{http.MethodGet, "/console/users/:id/export", t(c.exportUser)},
		{http.MethodGet, "/console/memory", t(c.memory)},
		{http.MethodGet, "/console/conversations/:id", t(c.conversation)},
		{http.MethodGet, "/console/items/:id", t(c.item)},
		{http.MethodGet, "/console/requests", t(c.requests)},
		{http.MethodGet, "/console/requests/:id", t(c.request)},
		{http.MethodPost, "/console/items/:id/redact", t(c.redactItem)},
		{http.MethodGet, "/console/accounts", t(c.accounts)},
		{http.MethodPost, "/console/accounts/invite", t(c.invite)},
		{http.MethodGet, invitedPrefix + ":id", t(c.invited)},
		{http.MethodPost, "/console/accounts/:id/role", t(c.setRole)},
		{http.MethodPost, "/console/accounts/:id/disable", t(c.disable)},
		{http.MethodPost, "/console/accounts/:id/enable", t(c.enable)},
		{http.MethodPost, "/console/accounts/:id/unlock", t(c.unlock)},
		{http.MethodPost, "/console/accounts/:id/reset-link", t(c.issueReset)},
		{http.MethodGet, resetLinkPrefix + ":id", t(c.resetLinkShown)},
		{http.MethodGet, "/console/audit", t(c.audit)},

		{http.MethodGet, "/platform/tenants", c.tenants},
		{http.MethodPost, "/platform/tenants/:id/enter", c.enterTenant},
	}, c.opsRoutes()...)
}

// Register mounts every console route on e, each behind the same chain:
// security headers, session, the body's bound, CSRF, then authorization.
// Nothing is added to e globally, so the proxy's routes are untouched.
func (c *Console) Register(e *echo.Echo) {
	mw := []echo.MiddlewareFunc{c.secureHeaders, c.loadSession, c.boundBody, c.csrf, c.authorize}
	for _, r := range c.routes() {
		e.Add(r.method, r.path, r.h, mw...)
	}
}

// tenantHandler is a handler that runs inside the session's tenant.
type tenantHandler func(ec echo.Context, s *session) error

// inTenant adapts a tenantHandler: authorization has run already, so a
// session is present; a platform admin who has not entered a tenant is sent
// to choose one.
func (c *Console) inTenant(h tenantHandler) echo.HandlerFunc {
	return func(ec echo.Context) error {
		s := sessionOf(ec)
		if s == nil {
			return c.fail(ec, http.StatusUnauthorized, "Sign in first.")
		}
		if s.TenantID == 0 {
			if s.Role == templates.RolePlatformAdmin {
				return ec.Redirect(http.StatusSeeOther, "/platform/tenants")
			}
			return c.fail(ec, http.StatusForbidden, "This account belongs to no tenant.")
		}
		return h(ec, s)
	}
}

func (c *Console) root(ec echo.Context) error {
	if sessionOf(ec) != nil {
		return ec.Redirect(http.StatusSeeOther, "/console")
	}
	return ec.Redirect(http.StatusSeeOther, "/signin")
}

// page is the layout data for a signed-in page.
func (c *Console) page(ec echo.Context, s *session, title, nav string) templates.Page {
	return templates.Page{
		Title: title, Nav: nav, CSRF: csrfOf(ec), Email: s.Email, Role: s.Role,
		TenantName: s.TenantName, Notice: c.takeNotice(ec),
	}
}

// flashTTL bounds how long a notice waits for the page it was meant for.
const flashTTL = time.Minute

// redirectNotice answers an action with a redirect to path whose page
// shows the notice of key once: the key rides in a short-lived cookie, not
// in the URL, so a reload, a bookmark or the page's own polling later does
// not show "Derivation started." again.
func (c *Console) redirectNotice(ec echo.Context, path, key string) error {
	ec.SetCookie(&http.Cookie{Name: c.flashCookie, Value: key, Path: "/", MaxAge: int(flashTTL / time.Second),
		HttpOnly: true, Secure: c.cfg.SecureCookies, SameSite: http.SameSiteLaxMode})
	return ec.Redirect(http.StatusSeeOther, path)
}

// takeNotice is the notice a redirect asked for, consumed: a full page
// shows it and clears the cookie. Fragments (htmx) leave it for the page.
func (c *Console) takeNotice(ec echo.Context) string {
	if isHTMX(ec) {
		return ""
	}
	if ck, err := ec.Cookie(c.flashCookie); err == nil {
		ec.SetCookie(&http.Cookie{Name: c.flashCookie, Value: "", Path: "/", MaxAge: -1,
			HttpOnly: true, Secure: c.cfg.SecureCookies, SameSite: http.SameSiteLaxMode})
		if n := notice(ck.Value); n != "" {
			return n
		}
	}
	return ""
}

// notice is the confirmation a redirect may ask for; only these fixed
// texts are ever shown, whatever the cookie or query string says.
func notice(key string) string {
	switch key {
	case "role":
		return "Role changed."
	case "disable":
		return "Account disabled; its sessions are ended."
	case "enable":
		return "Account enabled."
	case "revoke":
		return "Key revoked."
	case "key-limits":
		return "Key limits saved: they apply from the key's next request."
	case "entered":
		return "You are now acting in this tenant."
	case "purge":
		return "This user's memory was purged."
	case "redact":
		return "The item was redacted: no serving process shows it again."
	case "upload":
		return "Dictionary loaded dark: no team serves it until it is derived and flipped."
	case "derive":
		return "Derivation started: its progress shows below."
	case "flip":
		return "Flipped: every serving process uses the new version from its next request."
	case "retire":
		return "Version retired: its rows are gone, and using it again needs a new derivation."
	case "unlock":
		return "Failed sign-ins cleared: the account can sign in at once, from anywhere."
	case "reset":
		return "Your new password is set, and every other session of your account has ended."
	}
	return ""
}

// render writes a component with a status; it renders into a buffer first
// so that a failing component never leaves half a page behind.
func (c *Console) render(ec echo.Context, status int, comp templ.Component) error {
	var buf bytes.Buffer
	if err := comp.Render(ec.Request().Context(), &buf); err != nil {
		c.log.Error("render console page", "err", err, "route", ec.Path())
		return c.fail(ec, http.StatusInternalServerError, "Something went wrong.")
	}
	return ec.HTMLBlob(status, buf.Bytes())
}

// fail renders an error page. It never includes the underlying error.
func (c *Console) fail(ec echo.Context, status int, msg string) error {
	var buf bytes.Buffer
	if err := templates.ErrorPage(status, msg).Render(ec.Request().Context(), &buf); err != nil {
		return ec.String(status, msg)
	}
	return ec.HTMLBlob(status, buf.Bytes())
}

// internal logs err and answers 500 (or 404 for store.ErrNotFound).
func (c *Console) internal(ec echo.Context, err error) error {
	if errors.Is(err, store.ErrNotFound) {
		return c.notFound(ec)
	}
	if errors.Is(err, context.Canceled) {
		return nil
	}
	c.log.Error("console request failed", "err", err, "route", ec.Path())
	return c.fail(ec, http.StatusInternalServerError, "Something went wrong.")
}

func (c *Console) notFound(ec echo.Context) error {
	return c.fail(ec, http.StatusNotFound, "Not found.")
}

// isHTMX reports whether the request came from htmx and wants a fragment.
func isHTMX(ec echo.Context) bool { return ec.Request().Header.Get("HX-Request") == "true" }
