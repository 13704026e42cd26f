package web

import (
	"errors"
	"net/http"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/labstack/echo/v4"

	"github.com/perpetuity/perpetuity/templates"
)

// The platform admin's tenant list is the one console read across tenants;
// it touches only tenants and accounts, never a tenant's memory, and runs
// as the owner (a function, migration 000005). A tenant's name is read in
// the tenant.
const (
	listTenantsSQL = `SELECT id, name, created_at, accounts FROM platform_tenants()`
	tenantNameSQL  = `SELECT name FROM tenants WHERE id = $1`
)

type tenantRow struct {
	ID       int64
	Name     string
	Created  time.Time
	Accounts int64
}

func (c *Console) platformSession(ec echo.Context) (*session, bool) {
	s := sessionOf(ec)
	return s, s != nil && s.Role == templates.RolePlatformAdmin
}

func (c *Console) tenants(ec echo.Context) error {
	s, ok := c.platformSession(ec)
	if !ok {
		return c.fail(ec, http.StatusForbidden, "Your role does not allow this.")
	}
	ctx := ec.Request().Context()
	r, err := c.db.Pool.Query(ctx, listTenantsSQL)
	if err != nil {
		return c.internal(ec, err)
	}
	rows, err := pgx.CollectRows(r, pgx.RowToStructByPos[tenantRow])
	if err != nil {
		return c.internal(ec, err)
	}
	out := make([]templates.TenantRow, len(rows))
	for i, t := range rows {
		out[i] = templates.TenantRow{ID: t.ID, Name: t.Name, Created: exact(t.Created), Accounts: t.Accounts, Current: t.ID == s.TenantID}
	}
	return c.render(ec, http.StatusOK, templates.TenantsPage(c.page(ec, s, "Tenants", "platform"), out))
}

// enterTenant makes the platform admin's session act in one tenant. The
// session is reissued (a new token for a new reach) and the tenant's audit
// log records the visit.
func (c *Console) enterTenant(ec echo.Context) error {
	s, ok := c.platformSession(ec)
	if !ok {
		return c.fail(ec, http.StatusForbidden, "Your role does not allow this.")
	}
	ctx := ec.Request().Context()
	id, err := strconv.ParseInt(ec.Param("id"), 10, 64)
	if err != nil || id <= 0 {
		return c.notFound(ec)
	}
	var name string
	err = c.db.InTenant(ctx, id, func(tx pgx.Tx) error { return tx.QueryRow(ctx, tenantNameSQL, id).Scan(&name) })
	if err != nil {
		if errors.Is(err, pgx.ErrNoRows) {
			return c.notFound(ec)
		}
		return c.internal(ec, err)
	}
	if err := c.startSession(ctx, ec, s.AccountID, id); err != nil {
		return c.internal(ec, err)
	}
	c.recordOrLog(ctx, auditEntry{TenantID: id, ActorID: s.AccountID, ActorEmail: s.Email, Action: "platform.enter", Target: name, Address: clientAddress(ec)})
	return c.redirectNotice(ec, "/console", "entered")
}
