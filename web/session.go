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

// For a platform admin the acting tenant is the one entered; for everyone
// else it is always the account's own, whatever the session row says.
const loadSessionSQL = `
SELECT a.id, a.email, a.role, coalesce(a.tenant_id, 0),
       coalesce(CASE WHEN a.role = 'platform_admin' THEN s.tenant_id ELSE a.tenant_id END, 0),
       coalesce(t.name, ''), s.csrf_token, s.last_seen_at
FROM console_sessions s
JOIN console_accounts a ON a.id = s.account_id
LEFT JOIN tenants t ON t.id = CASE WHEN a.role = 'platform_admin' THEN s.tenant_id ELSE a.tenant_id END
WHERE s.token_hash = $1
  AND s.expires_at > now()
  AND s.last_seen_at > now() - make_interval(secs => $2)
  AND a.disabled_at IS NULL`

const touchSessionSQL = `UPDATE console_sessions SET last_seen_at = now()
WHERE token_hash = $1 AND last_seen_at < now() - interval '1 minute'`

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
	deleteSessionSQL         = `DELETE FROM console_sessions WHERE token_hash = $1`
	deleteStaleSessionsSQL   = `DELETE FROM console_sessions WHERE account_id = $1 AND expires_at < now()`
	insertSessionSQL         = `INSERT INTO console_sessions (token_hash, account_id, tenant_id, csrf_token, expires_at) VALUES ($1, $2, $3, $4, now() + make_interval(secs => $5))`
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
	err = pgx.BeginFunc(ctx, c.db.Pool, func(tx pgx.Tx) error {
		if ck, err := ec.Cookie(c.sessionCookie); err == nil {
			if old, ok := hashToken(ck.Value); ok {
				if _, err := tx.Exec(ctx, deleteSessionSQL, old); err != nil {
					return err
				}
			}
		}
		if _, err := tx.Exec(ctx, deleteStaleSessionsSQL, accountID); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, insertSessionSQL, hash, accountID, tenant, csrf, c.cfg.SessionMax.Seconds())
		return err
	})
	if err != nil {
		return fmt.Errorf("start session: %w", err)
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
	// The session carries its own CSRF token from here on.
	ec.Set(ctxCSRF, csrf)
	return nil
}

// endSession deletes the browser's session and its cookie.
func (c *Console) endSession(ctx context.Context, ec echo.Context, s *session) error {
	if _, err := c.db.Pool.Exec(ctx, deleteSessionSQL, s.tokenHash); err != nil {
		return fmt.Errorf("end session: %w", err)
	}
	c.clearCookie(ec, c.sessionCookie)
	return nil
}

func (c *Console) clearCookie(ec echo.Context, name string) {
	ec.SetCookie(&http.Cookie{Name: name, Value: "", Path: "/", MaxAge: -1, HttpOnly: true, Secure: c.cfg.SecureCookies, SameSite: http.SameSiteLaxMode})
}
