package web

import (
	"context"
	"errors"
	"net/http"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/labstack/echo/v4"

	"github.com/perpetuity/perpetuity/memory/store"
	"github.com/perpetuity/perpetuity/templates"
)

const (
	listAccountsSQL = `SELECT id, email, role, created_at, last_sign_in_at, disabled_at IS NOT NULL
FROM console_accounts WHERE tenant_id = $1 ORDER BY email`
	listInvitesSQL = `SELECT email, role, expires_at FROM console_invites
WHERE tenant_id = $1 AND accepted_at IS NULL AND expires_at > now() ORDER BY created_at DESC`
	insertInviteSQL = `INSERT INTO console_invites (tenant_id, email, role, token_hash, invited_by, expires_at)
VALUES ($1, $2, $3, $4, $5, now() + make_interval(secs => $6))`
	accountEmailSQL = `SELECT email, role FROM console_accounts WHERE tenant_id = $1 AND id = $2`
	setRoleSQL      = `UPDATE console_accounts SET role = $3 WHERE tenant_id = $1 AND id = $2`
	disableSQL      = `UPDATE console_accounts SET disabled_at = now() WHERE tenant_id = $1 AND id = $2 AND disabled_at IS NULL`
	enableSQL       = `UPDATE console_accounts SET disabled_at = NULL WHERE tenant_id = $1 AND id = $2 AND disabled_at IS NOT NULL`
)

type accountRow struct {
	ID         int64
	Email      string
	Role       string
	Created    time.Time
	LastSignIn *time.Time
	Disabled   bool
}

type inviteRow struct {
	Email   string
	Role    string
	Expires time.Time
}

func (c *Console) accountsView(ctx context.Context, s *session) (templates.Accounts, error) {
	var accts []accountRow
	var invites []inviteRow
	err := c.db.InTenant(ctx, s.TenantID, func(tx pgx.Tx) error {
		r, err := tx.Query(ctx, listAccountsSQL, s.TenantID)
		if err != nil {
			return err
		}
		if accts, err = pgx.CollectRows(r, pgx.RowToStructByPos[accountRow]); err != nil {
			return err
		}
		r, err = tx.Query(ctx, listInvitesSQL, s.TenantID)
		if err != nil {
			return err
		}
		invites, err = pgx.CollectRows(r, pgx.RowToStructByPos[inviteRow])
		return err
	})
	if err != nil {
		return templates.Accounts{}, err
	}
	now := time.Now()
	v := templates.Accounts{}
	for _, a := range accts {
		v.Rows = append(v.Rows, templates.AccountRow{
			ID: a.ID, Email: a.Email, Role: a.Role, Created: exact(a.Created),
			LastSignIn: agoPtr(a.LastSignIn, now), Disabled: a.Disabled, Self: a.ID == s.AccountID,
		})
	}
	for _, i := range invites {
		v.Invites = append(v.Invites, templates.InviteRow{Email: i.Email, Role: i.Role, Expires: exact(i.Expires)})
	}
	return v, nil
}

func (c *Console) accounts(ec echo.Context, s *session) error {
	v, err := c.accountsView(ec.Request().Context(), s)
	if err != nil {
		return c.internal(ec, err)
	}
	return c.render(ec, http.StatusOK, templates.AccountsPage(c.page(ec, s, "Accounts", "accounts"), v))
}

func validTenantRole(r string) bool {
	return r == templates.RoleTenantAdmin || r == templates.RoleTenantMember
}

// invite creates an invitation and shows its link once.
func (c *Console) invite(ec echo.Context, s *session) error {
	ctx := ec.Request().Context()
	email := normEmail(ec.FormValue("email"))
	role := ec.FormValue("role")
	problem := checkEmail(email)
	if problem == "" && !validTenantRole(role) {
		problem = "Choose a role."
	}
	if problem == "" {
		var taken bool
		if err := c.db.Pool.QueryRow(ctx, emailTakenSQL, email).Scan(&taken); err != nil {
			return c.internal(ec, err)
		}
		if taken {
			problem = "That address has an account already."
		}
	}
	if problem != "" {
		v, err := c.accountsView(ctx, s)
		if err != nil {
			return c.internal(ec, err)
		}
		v.Error = problem
		return c.render(ec, http.StatusBadRequest, templates.AccountsPage(c.page(ec, s, "Accounts", "accounts"), v))
	}
	token, err := newToken()
	if err != nil {
		return c.internal(ec, err)
	}
	hash, _ := hashToken(token)
	err = c.db.InTenant(ctx, s.TenantID, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, insertInviteSQL, s.TenantID, email, role, hash, s.AccountID, c.cfg.InviteTTL.Seconds()); err != nil {
			return err
		}
		return writeAudit(ctx, tx, actor(ec, s, "account.invite", email, map[string]any{"role": role}))
	})
	if err != nil {
		return c.internal(ec, err)
	}
	v, err := c.accountsView(ctx, s)
	if err != nil {
		return c.internal(ec, err)
	}
	v.InviteURL = c.cfg.PublicURL + "/invite/" + token
	return c.render(ec, http.StatusCreated, templates.AccountsPage(c.page(ec, s, "Accounts", "accounts"), v))
}

// targetAccount parses :id and refuses the signed-in account itself: an
// admin cannot demote or disable themself, so a tenant keeps an admin.
func (c *Console) targetAccount(ec echo.Context, s *session) (int64, bool, error) {
	id, err := strconv.ParseInt(ec.Param("id"), 10, 64)
	if err != nil || id <= 0 {
		return 0, false, c.notFound(ec)
	}
	if id == s.AccountID {
		return 0, false, c.fail(ec, http.StatusBadRequest, "You cannot change your own account here.")
	}
	return id, true, nil
}

// changeAccount runs one tenant-scoped change to an account with its audit
// entry in the same transaction; another tenant's account is not found.
func (c *Console) changeAccount(ec echo.Context, s *session, id int64, action string, change func(ctx context.Context, tx pgx.Tx, email, role string) (map[string]any, error)) error {
	ctx := ec.Request().Context()
	err := c.db.InTenant(ctx, s.TenantID, func(tx pgx.Tx) error {
		var email, role string
		if err := tx.QueryRow(ctx, accountEmailSQL, s.TenantID, id).Scan(&email, &role); err != nil {
			if errors.Is(err, pgx.ErrNoRows) {
				return store.ErrNotFound
			}
			return err
		}
		detail, err := change(ctx, tx, email, role)
		if err != nil {
			return err
		}
		return writeAudit(ctx, tx, actor(ec, s, action, email, detail))
	})
	return err
}

func (c *Console) setRole(ec echo.Context, s *session) error {
	id, ok, err := c.targetAccount(ec, s)
	if !ok {
		return err
	}
	role := ec.FormValue("role")
	if !validTenantRole(role) {
		return c.fail(ec, http.StatusBadRequest, "Choose a role.")
	}
	err = c.changeAccount(ec, s, id, "account.role", func(ctx context.Context, tx pgx.Tx, _, from string) (map[string]any, error) {
		if _, err := tx.Exec(ctx, setRoleSQL, s.TenantID, id, role); err != nil {
			return nil, err
		}
		return map[string]any{"from": from, "to": role}, nil
	})
	if err != nil {
		return c.internal(ec, err)
	}
	return ec.Redirect(http.StatusSeeOther, "/console/accounts?done=role")
}

// disable blocks the account and ends every session it has, at once.
func (c *Console) disable(ec echo.Context, s *session) error {
	id, ok, err := c.targetAccount(ec, s)
	if !ok {
		return err
	}
	err = c.changeAccount(ec, s, id, "account.disable", func(ctx context.Context, tx pgx.Tx, _, _ string) (map[string]any, error) {
		if _, err := tx.Exec(ctx, disableSQL, s.TenantID, id); err != nil {
			return nil, err
		}
		tag, err := tx.Exec(ctx, deleteAccountSessionsSQL, s.TenantID, id)
		if err != nil {
			return nil, err
		}
		return map[string]any{"sessions_ended": tag.RowsAffected()}, nil
	})
	if err != nil {
		return c.internal(ec, err)
	}
	return ec.Redirect(http.StatusSeeOther, "/console/accounts?done=disable")
}

func (c *Console) enable(ec echo.Context, s *session) error {
	id, ok, err := c.targetAccount(ec, s)
	if !ok {
		return err
	}
	err = c.changeAccount(ec, s, id, "account.enable", func(ctx context.Context, tx pgx.Tx, _, _ string) (map[string]any, error) {
		_, err := tx.Exec(ctx, enableSQL, s.TenantID, id)
		return nil, err
	})
	if err != nil {
		return c.internal(ec, err)
	}
	return ec.Redirect(http.StatusSeeOther, "/console/accounts?done=enable")
}
