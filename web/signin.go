package web

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net/http"
	"strconv"
	"time"

	"github.com/alexedwards/argon2id"
	"github.com/jackc/pgx/v5"
	"github.com/labstack/echo/v4"

	"github.com/perpetuity/perpetuity/templates"
)

const accountByEmailSQL = `SELECT id, tenant_id, password_hash, role, disabled FROM console_account_by_email($1)`

// signInAccount is the account an address names; ID 0 and the dummy hash
// when there is none, so that what follows does the same work either way.
type signInAccount struct {
	ID, TenantID int64
	Hash, Role   string
	Disabled     bool
}

func (c *Console) accountByEmail(ctx context.Context, email string) (signInAccount, error) {
	var a signInAccount
	err := c.db.Pool.QueryRow(ctx, accountByEmailSQL, email).Scan(&a.ID, &a.TenantID, &a.Hash, &a.Role, &a.Disabled)
	if errors.Is(err, pgx.ErrNoRows) {
		return signInAccount{Hash: c.dummyHash}, nil
	}
	if err != nil {
		return signInAccount{}, fmt.Errorf("account by email: %w", err)
	}
	return a, nil
}

const (
	waitMsg = "Too many failed sign-ins to this account from your address; try again in %s. " +
		"An admin of your team can clear this at once, and a platform admin can give you a link to set a new password."
	waitDeviceMsg = "Too many failed sign-ins from this browser; try again in %s. " +
		"An admin of your team can clear this at once, and a platform admin can give you a link to set a new password."
	waitAddressMsg = "Too many failed sign-ins from your address; try again in %s."
)

// signInRules are the limits an attempt is held to, the scope that starts
// afresh when it succeeds (own) and those that only take it back (shared).
// Failures on an account are counted per client address, or per browser
// for a browser that signed in to it before (its device cookie), and slow
// that address or browser down with growing delays; they never lock the
// account itself, so someone who knows an admin's address and sends wrong
// passwords from somewhere holds back only that somewhere. The address's
// failures on any account (credential stuffing) are limited besides.
func (c *Console) signInRules(email, addr string, dev device, trusted bool) (rules []rule, own string, shared []string) {
	byAddress, byDevice := accountScopes(email)
	backoff := func(scope, why string) rule {
		return rule{scope: scope, limit: c.cfg.SignInPerAccount, window: maxThrottleWindow, why: why,
			delay: c.cfg.SignInDelay, maxDelay: c.cfg.SignInMaxDelay}
	}
	if trusted {
		own = byDevice + dev.nonceHex()
		return []rule{backoff(own, waitDeviceMsg)}, own, nil
	}
	own = byAddress + addr
	shared = []string{"address:" + addr}
	rules = append([]rule{backoff(own, waitMsg)},
		grown(rule{scope: shared[0], limit: c.cfg.SignInPerAddress, window: c.cfg.SignInWindow, why: waitAddressMsg})...)
	return rules, own, shared
}

func (c *Console) signInForm(ec echo.Context) error {
	if sessionOf(ec) != nil {
		return ec.Redirect(http.StatusSeeOther, "/console")
	}
	return c.render(ec, http.StatusOK, templates.SignIn(templates.AuthForm{CSRF: csrfOf(ec)}))
}

// signIn checks the password under the throttle's rules, and on success
// issues a fresh session and a fresh device cookie. An unknown address and
// a wrong password get the same answer after the same work.
func (c *Console) signIn(ec echo.Context) error {
	ctx := ec.Request().Context()
	email := normEmail(ec.FormValue("email"))
	pw := ec.FormValue("password")
	addr := clientAddress(ec)
	form := templates.AuthForm{CSRF: csrfOf(ec), Email: email}
	again := func(status int, msg string) error {
		form.Error = msg
		return c.render(ec, status, templates.SignIn(form))
	}
	a, err := c.accountByEmail(ctx, email)
	if err != nil {
		return c.internal(ec, err)
	}
	dev, trusted := c.trustedDevice(ec, a.ID, a.Hash)
	rules, own, shared := c.signInRules(email, addr, dev, trusted)
	no, err := c.admit(ctx, rules)
	if err != nil {
		return c.internal(ec, err)
	}
	if no != nil {
		ec.Response().Header().Set("Retry-After", strconv.Itoa(int(math.Ceil(no.retry.Seconds()))))
		return again(http.StatusTooManyRequests, fmt.Sprintf(no.rule.why, no.retry.Round(time.Second)))
	}
	okPass := false
	if len(pw) <= maxPassword {
		if okPass, err = argon2id.ComparePasswordAndHash(pw, a.Hash); err != nil {
			return c.internal(ec, err)
		}
	}
	if a.ID == 0 || !okPass || a.Disabled {
		if a.ID != 0 {
			action := "signin.failed"
			if a.Disabled && okPass {
				action = "signin.disabled"
			}
			c.recordOrLog(ctx, auditEntry{TenantID: a.TenantID, ActorID: a.ID, ActorEmail: email, Action: action,
				Address: addr, Detail: map[string]any{"known_browser": trusted}})
		}
		return again(http.StatusUnauthorized, "Email or password is wrong.")
	}
	// The browser (or the account at this address) starts afresh; the
	// counts this attempt took from the shared scopes are given back.
	if err := c.clearThrottle(ctx, own); err != nil {
		return c.internal(ec, err)
	}
	if err := c.refund(ctx, shared...); err != nil {
		return c.internal(ec, err)
	}
	if err := c.signInAs(ctx, ec, a.ID, a.TenantID, a.Hash); err != nil {
		return c.internal(ec, err)
	}
	c.recordOrLog(ctx, auditEntry{TenantID: a.TenantID, ActorID: a.ID, ActorEmail: email, Action: "signin", Address: addr})
	if a.TenantID == 0 {
		return ec.Redirect(http.StatusSeeOther, "/platform/tenants")
	}
	return ec.Redirect(http.StatusSeeOther, "/console")
}
