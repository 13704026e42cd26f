package web

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/labstack/echo/v4"

	"github.com/perpetuity/perpetuity/templates"
)

// auditEntry is one line of the audit log: who did what to what, never
// content or secrets. TenantID 0 records a platform-level event.
type auditEntry struct {
	TenantID   int64
	ActorID    int64
	ActorEmail string
	Action     string
	Target     string
	Detail     map[string]any
	Address    string
}

const (
	insertAuditSQL = `INSERT INTO audit_log (tenant_id, actor_id, actor_email, action, target, detail, address)
VALUES ($1, $2, $3, $4, $5, $6, $7)`
	// Platform events belong to no tenant, so no tenant transaction may
	// write them: a function that acts as the owner does (migration 000005).
	platformAuditSQL = `SELECT record_platform_audit($1, $2, $3, $4, $5, $6)`
)

// execer is a transaction or a pool: audit entries are written in the
// transaction of the change they record whenever there is one.
type execer interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
}

func writeAudit(ctx context.Context, q execer, e auditEntry) error {
	var actor *int64
	if e.ActorID != 0 {
		actor = &e.ActorID
	}
	detail := e.Detail
	if detail == nil {
		detail = map[string]any{}
	}
	d, err := json.Marshal(detail)
	if err != nil {
		return fmt.Errorf("audit detail: %w", err)
	}
	if e.TenantID == 0 {
		_, err = q.Exec(ctx, platformAuditSQL, actor, e.ActorEmail, e.Action, e.Target, d, e.Address)
	} else {
		_, err = q.Exec(ctx, insertAuditSQL, e.TenantID, actor, e.ActorEmail, e.Action, e.Target, d, e.Address)
	}
	if err != nil {
		return fmt.Errorf("audit %s: %w", e.Action, err)
	}
	return nil
}

// record writes an entry on its own, in the entry's tenant.
func (c *Console) record(ctx context.Context, e auditEntry) error {
	if e.TenantID == 0 {
		return writeAudit(ctx, c.db.Pool, e)
	}
	return c.db.InTenant(ctx, e.TenantID, func(tx pgx.Tx) error { return writeAudit(ctx, tx, e) })
}

// recordOrLog is record for events whose failure to log must not undo
// what already happened (a sign-in that succeeded, say).
func (c *Console) recordOrLog(ctx context.Context, e auditEntry) {
	if err := c.record(ctx, e); err != nil {
		c.log.Error("write audit entry", "err", err, "action", e.Action)
	}
}

// actor fills the who-and-where of an entry from the session.
func actor(ec echo.Context, s *session, action, target string, detail map[string]any) auditEntry {
	return auditEntry{
		TenantID: s.TenantID, ActorID: s.AccountID, ActorEmail: s.Email,
		Action: action, Target: target, Detail: detail, Address: clientAddress(ec),
	}
}

const auditPageSize = 100

const listAuditSQL = `SELECT id, at, actor_email, action, target, detail::text, address
FROM audit_log WHERE tenant_id = $1 AND ($2::bigint = 0 OR id < $2)
ORDER BY id DESC LIMIT $3`

type auditRow struct {
	ID      int64
	At      time.Time
	Actor   string
	Action  string
	Target  string
	Detail  string
	Address string
}

func (c *Console) audit(ec echo.Context, s *session) error {
	before, _ := strconv.ParseInt(ec.QueryParam("before"), 10, 64)
	ctx := ec.Request().Context()
	var rows []auditRow
	err := c.db.InTenant(ctx, s.TenantID, func(tx pgx.Tx) error {
		r, err := tx.Query(ctx, listAuditSQL, s.TenantID, before, auditPageSize)
		if err != nil {
			return err
		}
		rows, err = pgx.CollectRows(r, pgx.RowToStructByPos[auditRow])
		return err
	})
	if err != nil {
		return c.internal(ec, err)
	}
	v := templates.Audit{}
	for _, r := range rows {
		d := r.Detail
		if d == "{}" {
			d = ""
		}
		v.Rows = append(v.Rows, templates.AuditRow{
			At: exact(r.At), Actor: r.Actor, Action: r.Action, Target: r.Target, Detail: d, Address: r.Address,
		})
	}
	if len(rows) == auditPageSize {
		v.Next = "/console/audit?before=" + strconv.FormatInt(rows[len(rows)-1].ID, 10)
	}
	return c.render(ec, http.StatusOK, templates.AuditPage(c.page(ec, s, "Audit log", "audit"), v))
}
