package web

import (
	"context"
	"errors"
	"fmt"
	"math"
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
	accountEmailSQL = `SELECT email, role FROM console_accounts WHERE tenant_id = $1 AND id = $2`
	setRoleSQL      = `UPDATE console_accounts SET role = $3 WHERE tenant_id = $1 AND id = $2`
	disableSQL      = `UPDATE console_accounts SET disabled_at = now() WHERE tenant_id = $1 AND id = $2 AND disabled_at IS NULL`
	enableSQL       = `UPDATE console_accounts SET disabled_at = NULL WHERE tenant_id = $1 AND id = $2 AND disabled_at IS NOT NULL`
	// Whether the team holds an account with the address: what the
	// accounts page lists anyway. Other teams' accounts are not visible here.
	teamEmailSQL  = `SELECT EXISTS (SELECT 1 FROM console_accounts WHERE tenant_id = $1 AND lower(email) = $2)`
	inviteLockSQL = `SELECT pg_advisory_xact_lock(hashtextextended('perpetuity console_invites', $1))`
	// For each window: the team's invitations made in it, and when the
	// limit-th newest leaves it (when one more may be made).
	inviteCountSQL = `SELECT w.n, coalesce(w.retry, 0)::float8
FROM unnest($2::float8[], $3::int[]) WITH ORDINALITY AS r(secs, lim, i)
CROSS JOIN LATERAL (
    SELECT count(*)::int AS n,
        (SELECT extract(epoch FROM f.created_at + make_interval(secs => r.secs) - now())
         FROM console_invites f WHERE f.tenant_id = $1 AND f.created_at > now() - make_interval(secs => r.secs)
         ORDER BY f.created_at DESC OFFSET r.lim - 1 LIMIT 1) AS retry
    FROM console_invites t WHERE t.tenant_id = $1 AND t.created_at > now() - make_interval(secs => r.secs)
) w
ORDER BY r.i`
)

// inviteLimited says, when the team has made as many invitations as it may
// for now, why and for how long; the same for every address.
func (c *Console) inviteLimited(ctx context.Context, tx pgx.Tx, tenantID int64) (string, time.Duration, error) {
	windows := []struct {
		span  time.Duration
		limit int
		name  string
	}{{time.Hour, c.cfg.InvitesPerHour, "hour"}, {24 * time.Hour, c.cfg.InvitesPerDay, "24 hours"}}
	secs, limits := make([]float64, len(windows)), make([]int32, len(windows))
	for i, w := range windows {
		secs[i], limits[i] = w.span.Seconds(), int32(w.limit)
	}
	rows, err := tx.Query(ctx, inviteCountSQL, tenantID, secs, limits)
	if err != nil {
		return "", 0, fmt.Errorf("count invitations: %w", err)
	}
	type count struct {
		N     int
		Retry float64
	}
	counts, err := pgx.CollectRows(rows, pgx.RowToStructByPos[count])
	if err != nil {
		return "", 0, fmt.Errorf("count invitations: %w", err)
	}
	msg, wait := "", time.Duration(0)
	for i, n := range counts {
		d := time.Duration(math.Max(n.Retry, 1) * float64(time.Second))
		if n.N >= windows[i].limit && d > wait {
			// Whole minutes, rounded up: the page then reads the same for
			// every refused address however the seconds tick.
			mins := int(math.Ceil(d.Minutes()))
			msg = fmt.Sprintf("This team has made %d invitations in the last %s, as many as it may; try again in %s.",
				windows[i].limit, windows[i].name, plural(mins, "minute"))
			wait = d
		}
	}
	return msg, wait, nil
}

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
	emails := make([]string, len(accts))
	for i, a := range accts {
		emails[i] = a.Email
	}
	held, err := c.throttleHeld(ctx, emails)
	if err != nil {
		return templates.Accounts{}, err
	}
	now := time.Now()
	v := templates.Accounts{}
	for i, a := range accts {
		v.Rows = append(v.Rows, templates.AccountRow{
			ID: a.ID, Email: a.Email, Role: a.Role, Created: exact(a.Created),
			LastSignIn: agoPtr(a.LastSignIn, now), Disabled: a.Disabled, Self: a.ID == s.AccountID, Throttled: held[i],
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
	return r == templates.RoleTenantAdmin || r == templates.RoleTenantMember || r == templates.RoleTenantReader
}

// invite creates an invitation and shows its link once. Its answer is the
// same whether or not the address has an account in another team or is
// the platform admin's (and the work done the same), so a tenant admin
// cannot use it to learn who has an account; an address has one account,
// in one team, so such an invitation simply cannot be accepted (see
// acceptInvite). Only addresses of the admin's own team, which the same
// page lists, are refused. Invitations are limited per team, and one
// refused leaves no row.
func (c *Console) invite(ec echo.Context, s *session) error {
	ctx := ec.Request().Context()
	email := normEmail(ec.FormValue("email"))
	role := ec.FormValue("role")
	problem := checkEmail(email)
	if problem == "" && !validTenantRole(role) {
		problem = "Choose a role."
	}
	status := http.StatusBadRequest
	var token string
	var retry time.Duration
	if problem == "" {
		var err error
		if token, err = newToken(); err != nil {
			return c.internal(ec, err)
		}
		hash, _ := hashToken(token)
		err = c.db.InTenant(ctx, s.TenantID, func(tx pgx.Tx) error {
			// A team's invitations are counted and made one at a time, so
			// the limit holds however many arrive at once.
			if _, err := tx.Exec(ctx, inviteLockSQL, s.TenantID); err != nil {
				return err
			}
			var member bool
			if err := tx.QueryRow(ctx, teamEmailSQL, s.TenantID, email).Scan(&member); err != nil {
				return err
			}
			if member {
				problem = "That address has an account in this team already."
				return nil
			}
			msg, wait, err := c.inviteLimited(ctx, tx, s.TenantID)
			if err != nil || msg != "" {
				problem, status, retry = msg, http.StatusTooManyRequests, wait
				return err
			}
			if err := store.RecordInvite(ctx, tx, store.Invite{TenantID: s.TenantID, Email: email, Role: role,
				TokenHash: hash, InvitedBy: s.AccountID, TTL: c.cfg.InviteTTL}); err != nil {
				return err
			}
			return writeAudit(ctx, tx, actor(ec, s, "account.invite", email, map[string]any{"role": role}))
		})
		if err != nil {
			return c.internal(ec, err)
		}
	}
	v, err := c.accountsView(ctx, s)
	if err != nil {
		return c.internal(ec, err)
	}
	if problem != "" {
		if status == http.StatusTooManyRequests {
			ec.Response().Header().Set("Retry-After", strconv.Itoa(int(math.Ceil(retry.Seconds()))))
		}
		v.Error = problem
		return c.render(ec, status, templates.AccountsPage(c.page(ec, s, "Accounts", "accounts"), v))
	}
	// Post/redirect/get: a reload of the page that shows the link neither
	// invites again nor shows the link again.
	id, err := c.putReveal(ec, s.TenantID, store.RevealInvite, c.cfg.PublicURL+"/invite/"+token, map[string]string{"email": email})
	if err != nil {
		return c.internal(ec, err)
	}
	return redirectToReveal(ec, invitedPrefix, id)
}

const invitedPrefix = "/console/accounts/invited/"

// invited is the page invite redirects to: the accounts page with the new
// invitation's link, the first time; saying that it was shown, ever after.
func (c *Console) invited(ec echo.Context, s *session) error {
	return c.accountsReveal(ec, s, store.RevealInvite, func(v *templates.Accounts, r revealed) {
		v.InviteURL = r.Secret
		if r.Secret == "" && r.About != nil {
			v.InviteSpent = r.About["email"]
		}
	})
}

// accountsReveal is the accounts page a form that made a secret of kind
// redirects to, with show putting the reveal (the secret the first time,
// what it was about after) into the page.
func (c *Console) accountsReveal(ec echo.Context, s *session, kind string, show func(*templates.Accounts, revealed)) error {
	r, err := c.takeReveal(ec, s.TenantID, kind)
	if err != nil {
		return c.internal(ec, err)
	}
	v, err := c.accountsView(ec.Request().Context(), s)
	if err != nil {
		return c.internal(ec, err)
	}
	show(&v, r)
	return c.render(ec, http.StatusOK, templates.AccountsPage(c.page(ec, s, "Accounts", "accounts"), v))
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
	return c.redirectNotice(ec, "/console/accounts", "role")
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
	return c.redirectNotice(ec, "/console/accounts", "disable")
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
	return c.redirectNotice(ec, "/console/accounts", "enable")
}
