package web

import (
	"context"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/jackc/pgx/v5"
	"github.com/labstack/echo/v4"

	"github.com/perpetuity/perpetuity/memory/store"
	"github.com/perpetuity/perpetuity/templates"
)

const (
	listKeysSQL = `SELECT k.id, k.name, k.prefix, k.user_id, u.name, k.scope, k.created_at, k.last_used_at, k.revoked_at,
	k.expires_at, k.rotated_at, k.requests_per_minute, k.tokens_per_minute, k.tokens_per_day
FROM api_keys k JOIN memory_users u ON u.tenant_id = k.tenant_id AND u.id = k.user_id
WHERE k.tenant_id = $1 AND ($2::bigint = 0 OR k.user_id = $2) AND ($3::bigint = 0 OR k.id = $3)
ORDER BY k.revoked_at IS NOT NULL, k.created_at DESC, k.id DESC`
	listUserNamesSQL = `SELECT id, name FROM memory_users WHERE tenant_id = $1 ORDER BY name, id`
	userExistsSQL    = `SELECT name FROM memory_users WHERE tenant_id = $1 AND id = $2`
)

type keyRow struct {
	ID       int64
	Name     string
	Prefix   string
	UserID   int64
	User     string
	Scope    store.KeyScope
	Created  time.Time
	LastUsed *time.Time
	Revoked  *time.Time
	Expires  *time.Time
	Rotated  *time.Time
	RPM, TPM *int
	TPD      *int64
}

// listKeys reads the tenant's keys, optionally only one user's or one key.
func (c *Console) listKeys(ctx context.Context, tenantID, userID, keyID int64) ([]templates.KeyRow, error) {
	var rows []keyRow
	err := c.db.InTenant(ctx, tenantID, func(tx pgx.Tx) error {
		r, err := tx.Query(ctx, listKeysSQL, tenantID, userID, keyID)
		if err != nil {
			return err
		}
		rows, err = pgx.CollectRows(r, pgx.RowToStructByPos[keyRow])
		return err
	})
	if err != nil {
		return nil, err
	}
	now := time.Now()
	out := make([]templates.KeyRow, len(rows))
	for i, k := range rows {
		out[i] = templates.KeyRow{
			ID: k.ID, Name: k.Name, Prefix: k.Prefix, User: k.User, UserID: k.UserID, Scope: k.Scope.Label(),
			Created: exact(k.Created), LastUsed: agoPtr(k.LastUsed, now),
			Expires: keyEnd(k.Expires, k.Rotated, now), Expired: k.Expires != nil && !now.Before(*k.Expires),
			Limits: limitsLabel(store.KeyLimits{RequestsPerMinute: k.RPM, TokensPerMinute: k.TPM, TokensPerDay: k.TPD}),
		}
		out[i].Rotatable = k.Revoked == nil && k.Rotated == nil && !out[i].Expired
		if k.Revoked != nil {
			out[i].Revoked = exact(*k.Revoked)
		}
	}
	return out, nil
}

type userName struct {
	ID   int64
	Name string
}

func (c *Console) userOptions(ctx context.Context, tenantID, selected int64) ([]templates.Option, error) {
	var users []userName
	err := c.db.InTenant(ctx, tenantID, func(tx pgx.Tx) error {
		r, err := tx.Query(ctx, listUserNamesSQL, tenantID)
		if err != nil {
			return err
		}
		users, err = pgx.CollectRows(r, pgx.RowToStructByPos[userName])
		return err
	})
	if err != nil {
		return nil, err
	}
	out := make([]templates.Option, len(users))
	for i, u := range users {
		out[i] = templates.Option{Value: strconv.FormatInt(u.ID, 10), Label: u.Name, Selected: u.ID == selected}
	}
	return out, nil
}

// memoryUserName finds a memory user of the tenant; ErrNotFound otherwise,
// which is what another tenant's user id gets.
func (c *Console) memoryUserName(ctx context.Context, tenantID, userID int64) (string, error) {
	var name string
	err := c.db.InTenant(ctx, tenantID, func(tx pgx.Tx) error {
		return tx.QueryRow(ctx, userExistsSQL, tenantID, userID).Scan(&name)
	})
	if errors.Is(err, pgx.ErrNoRows) {
		return "", store.ErrNotFound
	}
	return name, err
}

func (c *Console) keysView(ctx context.Context, s *session) (templates.Keys, error) {
	rows, err := c.listKeys(ctx, s.TenantID, 0, 0)
	if err != nil {
		return templates.Keys{}, err
	}
	// No user is chosen for the admin: a key bound to whoever sorts
	// first, because the form was sent as it came, is a key for the
	// wrong memory.
	users, err := c.userOptions(ctx, s.TenantID, 0)
	if err != nil {
		return templates.Keys{}, err
	}
	return templates.Keys{Rows: rows, Users: users, Scopes: scopeOptions(store.ScopeUser)}, nil
}

// scopeOptions are the scopes a new key may have; pinned comes first and
// is the default, so an admin who does not choose gets the narrow key.
func scopeOptions(selected store.KeyScope) []templates.Option {
	out := make([]templates.Option, 0, 2)
	for _, s := range []store.KeyScope{store.ScopeUser, store.ScopeTenant} {
		label := "pinned to its memory user"
		if s == store.ScopeTenant {
			label = "tenant-wide (may name any memory user)"
		}
		out = append(out, templates.Option{Value: string(s), Label: label, Selected: s == selected})
	}
	return out
}

func (c *Console) keys(ec echo.Context, s *session) error {
	v, err := c.keysView(ec.Request().Context(), s)
	if err != nil {
		return c.internal(ec, err)
	}
	return c.render(ec, http.StatusOK, templates.KeysPage(c.page(ec, s, "API keys", "keys"), v))
}

// createKey issues a key bound to the memory user the admin chose, an
// existing one of the tenant or a new one, and sends the browser to the
// page that shows it once (reveal.go): reloading that page makes no
// second key and shows this one no more.
func (c *Console) createKey(ec echo.Context, s *session) error {
	ctx := ec.Request().Context()
	name := strings.TrimSpace(ec.FormValue("name"))
	userField := ec.FormValue("user_id")
	newUser := strings.TrimSpace(ec.FormValue("new_user"))
	expiresField := strings.TrimSpace(ec.FormValue("expires"))
	problem := ""
	switch {
	case name == "":
		problem = "Name the key (say, after the agent or machine that will use it), so that you can tell it apart later."
	case utf8.RuneCountInString(name) > 100 || !utf8.ValidString(name) || strings.ContainsAny(name, "\x00\r\n"):
		problem = "Use a key name of up to 100 characters, on one line."
	}
	expires, why := parseKeyExpiry(expiresField, time.Now())
	if problem == "" {
		problem = why
	}
	// No scope in the form (an older page, a script) is a pinned key.
	scope := store.ScopeUser
	if f := ec.FormValue("scope"); f != "" && problem == "" {
		var err error
		if scope, err = store.ParseKeyScope(f); err != nil {
			problem = "Choose the key's scope: pinned to its memory user, or tenant-wide."
		}
	}
	// A tenant-wide key reads every memory user's memory through the
	// proxy: a member, who reads no memory in the console, may not make one.
	if scope == store.ScopeTenant && !s.admin() {
		return c.fail(ec, http.StatusForbidden, "Only an admin can create a tenant-wide key: it reads every memory user's memory through the proxy.")
	}
	var userID int64
	var user string
	switch {
	case problem != "":
	case userField == "new" || (userField == "" && newUser != ""):
		if newUser == "" || utf8.RuneCountInString(newUser) > 200 || !utf8.ValidString(newUser) {
			problem = "Name the new memory user (up to 200 characters)."
			break
		}
		id, err := c.db.EnsureUser(ctx, s.TenantID, newUser)
		if err != nil {
			return c.internal(ec, err)
		}
		userID, user = id, newUser
	default:
		id, err := strconv.ParseInt(userField, 10, 64)
		if err != nil || id <= 0 {
			problem = "Choose the memory user the key is for."
			break
		}
		n, err := c.memoryUserName(ctx, s.TenantID, id)
		if err != nil {
			return c.internal(ec, err)
		}
		userID, user = id, n
	}
	if problem != "" {
		v, err := c.keysView(ctx, s)
		if err != nil {
			return c.internal(ec, err)
		}
		v.Error, v.Name, v.NewUser, v.Expires = problem, name, newUser, expiresField
		for i := range v.Users {
			v.Users[i].Selected = v.Users[i].Value == userField
		}
		for i := range v.Scopes {
			v.Scopes[i].Selected = v.Scopes[i].Value == string(scope)
		}
		v.NewUserChosen = userField == "new"
		return c.render(ec, http.StatusBadRequest, templates.KeysPage(c.page(ec, s, "API keys", "keys"), v))
	}
	keyID, key, err := c.db.CreateKeyWith(ctx, s.TenantID, userID, store.KeyOptions{Name: name, Scope: scope, ExpiresAt: expires})
	if err != nil {
		return c.internal(ec, err)
	}
	detail := map[string]any{"key_id": keyID, "key_prefix": store.ShortPrefix(key), "user": user, "scope": string(scope)}
	if expires != nil {
		detail["expires_at"] = exact(*expires)
	}
	c.recordOrLog(ctx, actor(ec, s, "key.create", name, detail))
	id, err := c.putReveal(ec, s.TenantID, store.RevealKey, key, map[string]string{
		"name": name, "prefix": store.ShortPrefix(key), "user": user, "scope": string(scope),
	})
	if err != nil {
		return c.internal(ec, err)
	}
	return redirectToReveal(ec, newKeyPrefix, id)
}

const newKeyPrefix = "/console/keys/new/"

// newKey is the page createKey redirects to: the keys page with the new
// key, the first time; saying that it was shown, ever after.
func (c *Console) newKey(ec echo.Context, s *session) error {
	ctx := ec.Request().Context()
	r, err := c.takeReveal(ec, s.TenantID, store.RevealKey)
	if err != nil {
		return c.internal(ec, err)
	}
	v, err := c.keysView(ctx, s)
	if err != nil {
		return c.internal(ec, err)
	}
	conn := c.revealedKey(r)
	v.New = &conn
	v.Rotated = rotatedNote(r.About)
	return c.render(ec, http.StatusOK, templates.KeysPage(c.page(ec, s, "API keys", "keys"), v))
}

func (c *Console) revokeKey(ec echo.Context, s *session) error {
	ctx := ec.Request().Context()
	k, ok, err := c.keyParam(ec, s)
	if err != nil {
		return c.internal(ec, err)
	}
	if !ok {
		return c.notFound(ec)
	}
	// Tenant-wide keys are the admins' to make, rotate and end: a member
	// revoking one stopped every agent the team runs on it.
	if k.Scope == store.ScopeTenant.Label() && !s.admin() {
		return c.fail(ec, http.StatusForbidden, "Only an admin can revoke a tenant-wide key.")
	}
	id := k.ID
	if err := c.db.RevokeKey(ctx, s.TenantID, id); err != nil {
		return c.internal(ec, err)
	}
	c.keyChanged(id)
	rows, err := c.listKeys(ctx, s.TenantID, 0, id)
	if err != nil {
		return c.internal(ec, err)
	}
	if len(rows) != 1 {
		return c.notFound(ec)
	}
	c.recordOrLog(ctx, actor(ec, s, "key.revoke", rows[0].Name, map[string]any{"key_id": id, "key_prefix": rows[0].Prefix}))
	if isHTMX(ec) {
		return c.render(ec, http.StatusOK, templates.KeyRowFragment(c.page(ec, s, "", ""), rows[0]))
	}
	return c.redirectNotice(ec, "/console/keys", "revoke")
}
