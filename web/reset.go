package web

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/alexedwards/argon2id"
	"github.com/jackc/pgx/v5"
	"github.com/labstack/echo/v4"

	"github.com/perpetuity/perpetuity/memory/store"
	"github.com/perpetuity/perpetuity/templates"
)

// Password reset and unlock. No mail is sent (the service has none), so a
// reset link is issued by a platform admin in the console or by the
// operator on the command line, and handed over by them. A link is 256
// random bits, unguessable and so unforgeable; only its SHA-256 is stored,
// it works once, until it expires, and issuing another voids it. Using it
// sets a new password under the sign-up rules, ends every session of the
// account and forgets its sign-in failures. An unlock only forgets the
// failures. Both are audited.

const resetLinkPrefix = "/console/accounts/reset-link/"

// resetGoneMsg is what a link that no longer works gets.
const resetGoneMsg = "This password reset link has been used, has expired, or was replaced by a newer one. Ask a platform admin for a new link."

// IssueResetLink makes a password reset link for the enabled account with
// this address, valid for ttl, and records by as its issuer. It returns
// the link; store.ErrNotFound when there is no such account.
// `perpetuity admin reset-link EMAIL` calls it.
func IssueResetLink(ctx context.Context, db *store.DB, publicURL, email string, ttl time.Duration, by store.Actor) (string, error) {
	tok, err := newToken()
	if err != nil {
		return "", err
	}
	hash, _ := hashToken(tok)
	if _, err := db.IssuePasswordReset(ctx, normEmail(email), hash, ttl, by); err != nil {
		return "", err
	}
	return publicURL + "/reset/" + tok, nil
}

// UnlockAccount forgets every sign-in failure held against the account
// with this address and records by as who cleared them; it returns how
// many were. `perpetuity admin unlock EMAIL` calls it.
func UnlockAccount(ctx context.Context, db *store.DB, email string, by store.Actor) (int64, error) {
	email = normEmail(email)
	var a signInAccount
	err := db.Pool.QueryRow(ctx, accountByEmailSQL, email).Scan(&a.ID, &a.TenantID, &a.Hash, &a.Role, &a.Disabled)
	tenantID := a.TenantID
	if errors.Is(err, pgx.ErrNoRows) {
		return 0, store.ErrNotFound
	}
	if err != nil {
		return 0, fmt.Errorf("account by email: %w", err)
	}
	var n int64
	change := func(tx pgx.Tx) error {
		if n, err = unlockAccount(ctx, tx, email); err != nil {
			return err
		}
		e := auditEntry{TenantID: tenantID, ActorEmail: by.Email, Action: "account.unlock", Target: email,
			Detail: map[string]any{"attempts_cleared": n}, Address: by.Address}
		if by.AccountID != nil {
			e.ActorID = *by.AccountID
		}
		return writeAudit(ctx, tx, e)
	}
	if tenantID == 0 {
		err = pgx.BeginFunc(ctx, db.Pool, change)
	} else {
		err = db.InTenant(ctx, tenantID, change)
	}
	return n, err
}

// issueReset is a platform admin making a reset link for an account of
// the tenant it acts in; the link is shown once, on the page this
// redirects to.
func (c *Console) issueReset(ec echo.Context, s *session) error {
	ctx := ec.Request().Context()
	id, err := strconv.ParseInt(ec.Param("id"), 10, 64)
	if err != nil || id <= 0 {
		return c.notFound(ec)
	}
	var email, role string
	err = c.db.InTenant(ctx, s.TenantID, func(tx pgx.Tx) error {
		return tx.QueryRow(ctx, accountEmailSQL, s.TenantID, id).Scan(&email, &role)
	})
	if errors.Is(err, pgx.ErrNoRows) {
		return c.notFound(ec)
	}
	if err != nil {
		return c.internal(ec, err)
	}
	link, err := IssueResetLink(ctx, c.db, c.cfg.PublicURL, email, c.cfg.ResetTTL, storeActor(ec, s))
	if errors.Is(err, store.ErrNotFound) {
		return c.fail(ec, http.StatusConflict, "This account is disabled; enable it before giving it a new password.")
	}
	if err != nil {
		return c.internal(ec, err)
	}
	rid, err := c.putReveal(ec, s.TenantID, store.RevealReset, link, map[string]string{"email": email})
	if err != nil {
		return c.internal(ec, err)
	}
	return redirectToReveal(ec, resetLinkPrefix, rid)
}

// resetLinkShown is the accounts page with the reset link just made, the
// first time; saying that it was shown, ever after.
func (c *Console) resetLinkShown(ec echo.Context, s *session) error {
	return c.accountsReveal(ec, s, store.RevealReset, func(v *templates.Accounts, r revealed) {
		v.Reset = &templates.ResetReveal{URL: r.Secret, Email: r.About["email"], Hours: int(c.cfg.ResetTTL.Hours())}
	})
}

// unlock forgets the sign-in failures held against an account of the
// tenant, from every address and browser, with its audit entry. An admin
// may clear their own, from a browser where they are signed in.
func (c *Console) unlock(ec echo.Context, s *session) error {
	id, err := strconv.ParseInt(ec.Param("id"), 10, 64)
	if err != nil || id <= 0 {
		return c.notFound(ec)
	}
	err = c.changeAccount(ec, s, id, "account.unlock", func(ctx context.Context, tx pgx.Tx, email, _ string) (map[string]any, error) {
		n, err := unlockAccount(ctx, tx, normEmail(email))
		return map[string]any{"attempts_cleared": n}, err
	})
	if err != nil {
		return c.internal(ec, err)
	}
	return c.redirectNotice(ec, "/console/accounts", "unlock")
}

func (c *Console) resetForm(ec echo.Context) error {
	token := ec.Param("token")
	hash, ok := hashToken(token)
	if !ok {
		return c.fail(ec, http.StatusNotFound, resetGoneMsg)
	}
	r, err := c.db.PendingPasswordReset(ec.Request().Context(), hash)
	if errors.Is(err, store.ErrNotFound) {
		return c.fail(ec, http.StatusNotFound, resetGoneMsg)
	}
	if err != nil {
		return c.internal(ec, err)
	}
	return c.render(ec, http.StatusOK, templates.ResetPassword(templates.AuthForm{CSRF: csrfOf(ec), Email: r.Email, Token: token}))
}

// resetPassword sets the account's new password from a live link, ends
// every session it had, forgets its sign-in failures and signs this
// browser in.
func (c *Console) resetPassword(ec echo.Context) error {
	ctx := ec.Request().Context()
	token := ec.Param("token")
	hash, ok := hashToken(token)
	if !ok {
		return c.fail(ec, http.StatusNotFound, resetGoneMsg)
	}
	pending, err := c.db.PendingPasswordReset(ctx, hash)
	if errors.Is(err, store.ErrNotFound) {
		return c.fail(ec, http.StatusNotFound, resetGoneMsg)
	}
	if err != nil {
		return c.internal(ec, err)
	}
	pw := ec.FormValue("password")
	if msg := checkPassword(pw); msg != "" {
		form := templates.AuthForm{CSRF: csrfOf(ec), Email: pending.Email, Token: token, Error: msg}
		return c.render(ec, http.StatusBadRequest, templates.ResetPassword(form))
	}
	pwHash, err := argon2id.CreateHash(pw, c.cfg.Argon2)
	if err != nil {
		return c.internal(ec, err)
	}
	r, err := c.db.UsePasswordReset(ctx, hash, pwHash, clientAddress(ec))
	if errors.Is(err, store.ErrNotFound) { // used by someone else meanwhile
		return c.fail(ec, http.StatusNotFound, resetGoneMsg)
	}
	if err != nil {
		return c.internal(ec, err)
	}
	if _, err := unlockAccount(ctx, c.db.Pool, r.Email); err != nil {
		c.log.Warn("clear sign-in failures after a reset", "err", err)
	}
	if err := c.signInAs(ctx, ec, r.AccountID, r.TenantID, pwHash); err != nil {
		return c.internal(ec, err)
	}
	if r.TenantID == 0 {
		return ec.Redirect(http.StatusSeeOther, "/platform/tenants")
	}
	return c.redirectNotice(ec, "/console", "reset")
}
