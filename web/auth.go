package web

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net/http"
	"net/mail"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/alexedwards/argon2id"
	"github.com/jackc/pgerrcode"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/labstack/echo/v4"

	"github.com/perpetuity/perpetuity/memory/store"
	"github.com/perpetuity/perpetuity/templates"
)

const (
	minPassword = 12
	// maxPassword bounds what is hashed; argon2id itself takes any length
	// (no 72-byte cut like bcrypt), this only keeps hashing cheap to ask for.
	maxPassword = 1024
	// firstUserName is the memory user a new tenant's first key is bound to.
	firstUserName = "default"
)

// normEmail is how addresses are compared: trimmed, lower-cased.
func normEmail(s string) string { return strings.ToLower(strings.TrimSpace(s)) }

// checkEmail accepts a bare address (no display name) of sane length.
func checkEmail(email string) string {
	if len(email) < 3 || len(email) > 254 || !utf8.ValidString(email) {
		return "Enter a valid email address."
	}
	a, err := mail.ParseAddress(email)
	if err != nil || a.Address != email || a.Name != "" {
		return "Enter a valid email address."
	}
	return ""
}

func checkPassword(pw string) string {
	switch {
	case !utf8.ValidString(pw):
		return "The password is not valid text."
	case utf8.RuneCountInString(pw) < minPassword:
		return fmt.Sprintf("Use a password of at least %d characters.", minPassword)
	case len(pw) > maxPassword:
		return fmt.Sprintf("Use a password of at most %d bytes.", maxPassword)
	}
	return ""
}

// checkSignUp validates the sign-up form; the empty string means valid.
func checkSignUp(team, email, pw string) string {
	if team == "" || utf8.RuneCountInString(team) > 200 || !utf8.ValidString(team) || strings.ContainsAny(team, "\x00\r\n") {
		return "Enter a team name of up to 200 characters."
	}
	if m := checkEmail(email); m != "" {
		return m
	}
	return checkPassword(pw)
}

func isUniqueViolation(err error) bool {
	var pg *pgconn.PgError
	return errors.As(err, &pg) && pg.Code == pgerrcode.UniqueViolation
}

// Sign-in and sign-up look accounts up by address before any tenant is
// known, through functions that act as the owner (migration 000005); what
// happens in a tenant afterwards runs in it.
const (
	emailTakenSQL        = `SELECT console_email_taken($1)`
	insertAccountSQL     = `INSERT INTO console_accounts (tenant_id, email, password_hash, role) VALUES ($1, $2, $3, $4) RETURNING id`
	deleteTenantSQL      = `DELETE FROM tenants WHERE id = $1`
	signedInSQL          = `SELECT console_account_signed_in($1)`
	createPlatformAdmSQL = `SELECT console_create_platform_admin($1, $2)`
)

func (c *Console) signUpForm(ec echo.Context) error {
	if sessionOf(ec) != nil {
		return ec.Redirect(http.StatusSeeOther, "/console")
	}
	return c.render(ec, http.StatusOK, templates.SignUp(templates.AuthForm{CSRF: csrfOf(ec)}))
}

// signUp creates a tenant, its first memory user and key, and its first
// admin account, signs the admin in, and sends the browser to the welcome
// page, which shows the key once (reveal.go): reloading it neither repeats
// the sign-up nor shows the key again.
func (c *Console) signUp(ec echo.Context) error {
	ctx := ec.Request().Context()
	team := strings.TrimSpace(ec.FormValue("team"))
	email := normEmail(ec.FormValue("email"))
	pw := ec.FormValue("password")
	form := templates.AuthForm{CSRF: csrfOf(ec), Team: team, Email: email}
	again := func(status int, msg string) error {
		form.Error = msg
		return c.render(ec, status, templates.SignUp(form))
	}
	if msg := checkSignUp(team, email, pw); msg != "" {
		return again(http.StatusBadRequest, msg)
	}
	addr := clientAddress(ec)
	if no, err := c.admit(ctx, []rule{{scope: "signup:" + addr, limit: c.cfg.SignUpPerAddress, window: c.cfg.SignUpWindow}}); err != nil {
		return c.internal(ec, err)
	} else if no != nil {
		ec.Response().Header().Set("Retry-After", strconv.Itoa(int(math.Ceil(no.retry.Seconds()))))
		return again(http.StatusTooManyRequests, "Too many sign-ups from your address; try again later.")
	}
	var taken bool
	if err := c.db.Pool.QueryRow(ctx, emailTakenSQL, email).Scan(&taken); err != nil {
		return c.internal(ec, err)
	}
	if taken {
		return again(http.StatusConflict, "An account with this email exists already; sign in instead.")
	}
	hash, err := argon2id.CreateHash(pw, c.cfg.Argon2)
	if err != nil {
		return c.internal(ec, err)
	}
	nt, err := c.db.CreateTenant(ctx, team, firstUserName)
	if err != nil {
		return c.internal(ec, err)
	}
	var accountID int64
	err = c.db.InTenant(ctx, nt.TenantID, func(tx pgx.Tx) error {
		if err := tx.QueryRow(ctx, insertAccountSQL, nt.TenantID, email, hash, templates.RoleTenantAdmin).Scan(&accountID); err != nil {
			return err
		}
		return writeAudit(ctx, tx, auditEntry{
			TenantID: nt.TenantID, ActorID: accountID, ActorEmail: email, Action: "tenant.signup",
			Target: team, Detail: map[string]any{"key_prefix": store.ShortPrefix(nt.Key), "user": nt.UserName}, Address: addr,
		})
	})
	if err != nil {
		// CreateTenant committed on its own: take the tenant back out so a
		// lost race on the email leaves no orphan team behind.
		derr := c.db.InTenant(context.WithoutCancel(ctx), nt.TenantID, func(tx pgx.Tx) error {
			_, err := tx.Exec(context.WithoutCancel(ctx), deleteTenantSQL, nt.TenantID)
			return err
		})
		if derr != nil {
			c.log.Error("remove tenant after failed sign-up", "err", derr, "tenant", nt.TenantID)
		}
		if isUniqueViolation(err) {
			return again(http.StatusConflict, "An account with this email exists already; sign in instead.")
		}
		return c.internal(ec, err)
	}
	if err := c.signInAs(ctx, ec, accountID, nt.TenantID, hash); err != nil {
		return c.internal(ec, err)
	}
	id, err := c.putReveal(ec, nt.TenantID, store.RevealWelcome, nt.Key, map[string]string{
		"name": "first key", "prefix": store.ShortPrefix(nt.Key), "user": nt.UserName, "scope": string(nt.Scope),
	})
	if err != nil {
		return c.internal(ec, err)
	}
	return redirectToReveal(ec, welcomePrefix, id)
}

const welcomePrefix = "/console/welcome/"

// welcome is the page sign-up redirects to: the connect page with the
// first key, the first time; without it (and saying so) ever after.
func (c *Console) welcome(ec echo.Context, s *session) error {
	r, err := c.takeReveal(ec, s.TenantID, store.RevealWelcome)
	if err != nil {
		return c.internal(ec, err)
	}
	return c.render(ec, http.StatusOK, templates.ConnectPage(c.page(ec, s, "Welcome", "connect"), c.revealedKey(r), true))
}

// revealedKey is the connect view of a revealed key: with the key on its
// first view, saying that it was shown on any later one.
func (c *Console) revealedKey(r revealed) templates.Connect {
	conn := c.connectFor(r.Secret, r.About["name"], r.About["user"])
	conn.TenantWide = r.About["scope"] == string(store.ScopeTenant)
	if r.Secret == "" {
		conn.Spent = true
		conn.KeyPrefix = r.About["prefix"]
	}
	return conn
}

// connectFor is the connect view for a key (empty: placeholder).
func (c *Console) connectFor(key, name, user string) templates.Connect {
	v := templates.Connect{
		Key: key, KeyName: name, UserName: user,
		OpenAIBase:    c.cfg.PublicURL + "/k/{key}/v1",
		AnthropicBase: c.cfg.PublicURL + "/k/{key}",
	}
	if key != "" {
		v.KeyPrefix = store.ShortPrefix(key)
	}
	return v
}

func (c *Console) signOut(ec echo.Context) error {
	ctx := ec.Request().Context()
	s := sessionOf(ec)
	if s == nil {
		return ec.Redirect(http.StatusSeeOther, "/signin")
	}
	if err := c.endSession(ctx, ec, s); err != nil {
		return c.internal(ec, err)
	}
	c.recordOrLog(ctx, actor(ec, s, "signout", "", nil))
	return ec.Redirect(http.StatusSeeOther, "/signin")
}

const (
	// Before the invitation is found its tenant is not known: a function.
	inviteByTokenSQL = `SELECT tenant_id, id, email, role, tenant_name FROM console_invite($1)`
	claimInviteSQL   = `UPDATE console_invites SET accepted_at = now()
WHERE tenant_id = $1 AND id = $2 AND accepted_at IS NULL AND expires_at > now()`
)

type pendingInvite struct {
	TenantID int64
	ID       int64
	Email    string
	Role     string
	Tenant   string
}

func (c *Console) lookupInvite(ctx context.Context, token string) (pendingInvite, error) {
	var inv pendingInvite
	hash, ok := hashToken(token)
	if !ok {
		return inv, store.ErrNotFound
	}
	err := c.db.Pool.QueryRow(ctx, inviteByTokenSQL, hash).Scan(&inv.TenantID, &inv.ID, &inv.Email, &inv.Role, &inv.Tenant)
	if errors.Is(err, pgx.ErrNoRows) {
		return inv, store.ErrNotFound
	}
	return inv, err
}

func (c *Console) inviteForm(ec echo.Context) error {
	token := ec.Param("token")
	inv, err := c.lookupInvite(ec.Request().Context(), token)
	if err != nil {
		return c.internal(ec, err)
	}
	return c.render(ec, http.StatusOK, templates.AcceptInvite(templates.AuthForm{
		CSRF: csrfOf(ec), Email: inv.Email, Token: token, Tenant: inv.Tenant, Role: inv.Role,
	}))
}

// joinTakenMsg is what accepting an invitation to an address that has an
// account says. Whoever holds the link learns this much, no more than one
// address per invitation, and invitations are limited per team.
const joinTakenMsg = "This address has an account already, in another team or on the platform, and an address has one account. " +
	"Sign in with it, or ask for an invitation to another address."

// acceptInvite turns an invitation into an account and signs it in; the
// invitation is claimed in the same transaction, so a link works once. An
// invitation to an address that has an account cannot be accepted: the
// account stays where it is, and the invitation stays pending, as one for a
// new address does until someone accepts it.
func (c *Console) acceptInvite(ec echo.Context) error {
	ctx := ec.Request().Context()
	token := ec.Param("token")
	inv, err := c.lookupInvite(ctx, token)
	if err != nil {
		return c.internal(ec, err)
	}
	form := templates.AuthForm{CSRF: csrfOf(ec), Email: inv.Email, Token: token, Tenant: inv.Tenant, Role: inv.Role}
	pw := ec.FormValue("password")
	if msg := checkPassword(pw); msg != "" {
		form.Error = msg
		return c.render(ec, http.StatusBadRequest, templates.AcceptInvite(form))
	}
	var taken bool
	if err := c.db.Pool.QueryRow(ctx, emailTakenSQL, inv.Email).Scan(&taken); err != nil {
		return c.internal(ec, err)
	}
	if taken {
		form.Error = joinTakenMsg
		return c.render(ec, http.StatusConflict, templates.AcceptInvite(form))
	}
	hash, err := argon2id.CreateHash(pw, c.cfg.Argon2)
	if err != nil {
		return c.internal(ec, err)
	}
	var id int64
	err = c.db.InTenant(ctx, inv.TenantID, func(tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, claimInviteSQL, inv.TenantID, inv.ID)
		if err != nil {
			return err
		}
		if tag.RowsAffected() == 0 {
			return store.ErrNotFound
		}
		if err := tx.QueryRow(ctx, insertAccountSQL, inv.TenantID, inv.Email, hash, inv.Role).Scan(&id); err != nil {
			return err
		}
		return writeAudit(ctx, tx, auditEntry{
			TenantID: inv.TenantID, ActorID: id, ActorEmail: inv.Email, Action: "account.join",
			Target: inv.Email, Detail: map[string]any{"role": inv.Role}, Address: clientAddress(ec),
		})
	})
	if isUniqueViolation(err) { // lost a race with another sign-up or invitation
		form.Error = joinTakenMsg
		return c.render(ec, http.StatusConflict, templates.AcceptInvite(form))
	}
	if err != nil {
		return c.internal(ec, err)
	}
	if err := c.signInAs(ctx, ec, id, inv.TenantID, hash); err != nil {
		return c.internal(ec, err)
	}
	return ec.Redirect(http.StatusSeeOther, "/console")
}

// CreatePlatformAdmin creates an account that administers every tenant.
// `perpetuity admin create EMAIL` calls it with a password read from
// standard input.
func CreatePlatformAdmin(ctx context.Context, db *store.DB, email, password string) error {
	email = normEmail(email)
	if msg := checkEmail(email); msg != "" {
		return errors.New(msg)
	}
	if msg := checkPassword(password); msg != "" {
		return errors.New(msg)
	}
	hash, err := argon2id.CreateHash(password, argon2id.DefaultParams)
	if err != nil {
		return fmt.Errorf("hash password: %w", err)
	}
	return pgx.BeginFunc(ctx, db.Pool, func(tx pgx.Tx) error {
		var id int64
		if err := tx.QueryRow(ctx, createPlatformAdmSQL, email, hash).Scan(&id); err != nil {
			if isUniqueViolation(err) {
				return fmt.Errorf("an account with email %s exists already", email)
			}
			return fmt.Errorf("create platform admin: %w", err)
		}
		return writeAudit(ctx, tx, auditEntry{ActorID: id, ActorEmail: email, Action: "platform.admin.create", Target: email})
	})
}
