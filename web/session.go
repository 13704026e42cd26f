package web

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/labstack/echo/v4"

	"github.com/perpetuity/perpetuity/templates"
)

// session is a signed-in browser, as read on this request together with
// its account: role and disabled state are never older than the request.
type session struct {
	tokenHash  []byte
	AccountID  int64
	Email      string
	Role       string
	HomeTenant int64 // the account's tenant; 0 for a platform admin
	TenantID   int64 // the tenant the session acts in; 0 if none yet
	TenantName string
	CSRF       string
	lastSeen   time.Time
}

// domain is the Casbin domain of requests made in this session.
func (s *session) domain() string {
	if s.TenantID == 0 {
		return domainPlatform
	}
	return tenantDomain(s.TenantID)
}

// binding is where the account holds its role: platform admins everywhere,
// everyone else in their own tenant only.
func (s *session) binding() binding {
	if s.Role == templates.RolePlatformAdmin {
		return binding{role: s.Role, domain: domainAny}
	}
	return binding{role: s.Role, domain: tenantDomain(s.HomeTenant)}
}

const ctxSession = "perpetuity.console.session"

func sessionOf(ec echo.Context) *session {
	s, _ := ec.Get(ctxSession).(*session)
	return s
}

// Sessions are looked up by token before any tenant is known: these run
// functions that act as the owner (migration 000005), which also decide the
// acting tenant (a platform admin's entered one, everyone else's own).
const (
	loadSessionSQL = `SELECT account_id, email, role, home_tenant, tenant_id, tenant_name, csrf_token, last_seen_at
FROM console_session($1, $2)`
	touchSessionSQL = `SELECT console_session_touch($1)`
)

// loadSession attaches the session named by the cookie, if it is live.
// Static files skip it: they are public and need no database round trip.
func (c *Console) loadSession(next echo.HandlerFunc) echo.HandlerFunc {
	return func(ec echo.Context) error {
		if ec.Path() == staticRoute {
			return next(ec)
		}
		ck, err := ec.Cookie(c.sessionCookie)
		if err != nil || ck.Value == "" {
			return next(ec)
		}
		hash, ok := hashToken(ck.Value)
		if !ok {
			return next(ec)
		}
		ctx := ec.Request().Context()
		s := &session{tokenHash: hash}
		err = c.db.Pool.QueryRow(ctx, loadSessionSQL, hash, c.cfg.SessionIdle.Seconds()).Scan(
			&s.AccountID, &s.Email, &s.Role, &s.HomeTenant, &s.TenantID, &s.TenantName, &s.CSRF, &s.lastSeen)
		if errors.Is(err, pgx.ErrNoRows) {
			c.clearCookie(ec, c.sessionCookie)
			return next(ec)
		}
		if err != nil {
			c.log.Error("load console session", "err", err)
			return c.fail(ec, http.StatusServiceUnavailable, "The console cannot reach its database; try again shortly.")
		}
		if time.Since(s.lastSeen) > time.Minute {
			if _, err := c.db.Pool.Exec(ctx, touchSessionSQL, hash); err != nil {
				c.log.Warn("touch console session", "err", err)
			}
		}
		ec.Set(ctxSession, s)
		return next(ec)
	}
}

// newToken is 256 random bits, URL-safe.
func newToken() (string, error) {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("random token: %w", err)
	}
	return base64.RawURLEncoding.EncodeToString(b), nil
}

// hashToken is how session and invitation tokens are stored. Anything that
// is not one of our tokens is rejected before it reaches the database.
func hashToken(tok string) ([]byte, bool) {
	if len(tok) != 43 {
		return nil, false
	}
	if _, err := base64.RawURLEncoding.DecodeString(tok); err != nil {
		return nil, false
	}
	h := sha256.Sum256([]byte(tok))
	return h[:], true
}

const (
	endSessionSQL = `SELECT console_session_end($1)`
	// Drops the presented session and the account's expired ones, then
	// inserts the new one; NULL when the account may not act in the tenant.
	startSessionSQL = `SELECT console_session_start($1, $2, $3, $4, $5, $6)`
	// Runs in the tenant: a tenant account's sessions act in its tenant.
	deleteAccountSessionsSQL = `DELETE FROM console_sessions WHERE account_id = $2
	AND account_id IN (SELECT id FROM console_accounts WHERE tenant_id = $1)`
)

// startSession issues a fresh session for the account, acting in tenantID
// (0 for none), and drops the one the browser presented: a session token
// never survives a sign-in or a change of tenant (no fixation).
func (c *Console) startSession(ctx context.Context, ec echo.Context, accountID, tenantID int64) error {
	tok, err := newToken()
	if err != nil {
		return err
	}
	csrf, err := newToken()
	if err != nil {
		return err
	}
	hash, _ := hashToken(tok)
	var tenant *int64
	if tenantID != 0 {
		tenant = &tenantID
	}
	var old []byte
	if ck, err := ec.Cookie(c.sessionCookie); err == nil {
		old, _ = hashToken(ck.Value)
	}
	var started *bool
	if err := c.db.Pool.QueryRow(ctx, startSessionSQL, old, hash, accountID, tenant, csrf, c.cfg.SessionMax.Seconds()).Scan(&started); err != nil {
		return fmt.Errorf("start session: %w", err)
	}
	if started == nil {
		return fmt.Errorf("start session: account %d may not act in tenant %d", accountID, tenantID)
	}
	ec.SetCookie(&http.Cookie{
		Name:     c.sessionCookie,
		Value:    tok,
		Path:     "/",
		MaxAge:   int(c.cfg.SessionMax.Seconds()),
		HttpOnly: true,
		Secure:   c.cfg.SecureCookies,
		// Lax, not Strict: a link into the console from elsewhere should
		// arrive signed in. State changes are covered by the CSRF token.
		SameSite: http.SameSiteLaxMode,
	})
	// The session carries its own CSRF token from here on, and a secret
	// this request makes is sealed for the new token (reveal.go).
	ec.Set(ctxCSRF, csrf)
	ec.Set(ctxSessionToken, tok)
	return nil
}

// signInAs signs the browser in to the account: a fresh session acting in
// tenantID, a fresh device cookie, and the account's last sign-in time.
// Sign-up, invitations and password resets sign in through it as sign-in
// does, so an account that is signed in never reads "never signed in".
func (c *Console) signInAs(ctx context.Context, ec echo.Context, accountID, tenantID int64, passwordHash string) error {
	if err := c.startSession(ctx, ec, accountID, tenantID); err != nil {
		return err
	}
	if err := c.rememberDevice(ec, accountID, passwordHash); err != nil {
		return err
	}
	if _, err := c.db.Pool.Exec(ctx, signedInSQL, accountID); err != nil {
		c.log.Warn("record sign-in time", "err", err)
	}
	return nil
}

// endSession deletes the browser's session and its cookie.
func (c *Console) endSession(ctx context.Context, ec echo.Context, s *session) error {
	if _, err := c.db.Pool.Exec(ctx, endSessionSQL, s.tokenHash); err != nil {
		return fmt.Errorf("end session: %w", err)
	}
	c.clearCookie(ec, c.sessionCookie)
	return nil
}

func (c *Console) clearCookie(ec echo.Context, name string) {
	ec.SetCookie(&http.Cookie{Name: name, Value: "", Path: "/", MaxAge: -1, HttpOnly: true, Secure: c.cfg.SecureCookies, SameSite: http.SameSiteLaxMode})
}

// admin reports whether the session's account is an admin of its tenant
// (a platform admin is one of every tenant).
func (s *session) admin() bool {
	return s.Role == templates.RoleTenantAdmin || s.Role == templates.RolePlatformAdmin
}
