package web

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/labstack/echo/v4"

	"github.com/perpetuity/perpetuity/memory/store"
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

// storeActor is the session's account, with its client address, for the
// store's operations that write their own audit entries (purge,
// dictionary rollouts, integrity checks).
func storeActor(ec echo.Context, s *session) store.Actor {
	id := s.AccountID
	return store.Actor{AccountID: &id, Email: s.Email, Address: clientAddress(ec)}
}

// actor fills the who-and-where of an entry from the session.
func actor(ec echo.Context, s *session, action, target string, detail map[string]any) auditEntry {
	return auditEntry{
		TenantID: s.TenantID, ActorID: s.AccountID, ActorEmail: s.Email,
		Action: action, Target: target, Detail: detail, Address: clientAddress(ec),
	}
}

// auditPageSize is how many entries a page of the audit log lists.
const auditPageSize = 100

// auditDay is how the audit filters write a day (UTC).
const auditDay = "2006-01-02"

// auditFilter reads the audit page's filters from the query string; one
// that does not parse is reported and left out.
func auditFilter(ec echo.Context, size int) (store.AuditFilter, templates.AuditFilter, string) {
	q := ec.QueryParams()
	v := templates.AuditFilter{
		Actor: strings.TrimSpace(q.Get("actor")), Action: strings.TrimSpace(q.Get("action")),
		From: strings.TrimSpace(q.Get("from")), To: strings.TrimSpace(q.Get("to")),
	}
	problem := ""
	if len(v.Actor) > 254 || !utf8.ValidString(v.Actor) {
		v.Actor, problem = "", "Use a shorter actor filter."
	}
	if len(v.Action) > 100 || !utf8.ValidString(v.Action) {
		v.Action, problem = "", "Choose an action from the list."
	}
	f := store.AuditFilter{Actor: v.Actor, Action: v.Action, Limit: size}
	if v.From != "" {
		d, err := time.Parse(auditDay, v.From)
		if err != nil {
			v.From, problem = "", "Write dates as YYYY-MM-DD."
		} else {
			f.Since = d
		}
	}
	if v.To != "" {
		d, err := time.Parse(auditDay, v.To)
		if err != nil {
			v.To, problem = "", "Write dates as YYYY-MM-DD."
		} else {
			f.Until = d.AddDate(0, 0, 1) // the whole day named
		}
	}
	f.Before, _ = strconv.ParseInt(q.Get("before"), 10, 64)
	if f.Before <= 0 {
		f.Before = 0
		if f.After, _ = strconv.ParseInt(q.Get("after"), 10, 64); f.After < 0 {
			f.After = 0
		}
	}
	return f, v, problem
}

// auditLink is the audit page with the filters and one paging parameter.
func auditLink(v templates.AuditFilter, key string, id int64) string {
	q := url.Values{}
	for k, val := range map[string]string{"actor": v.Actor, "action": v.Action, "from": v.From, "to": v.To} {
		if val != "" {
			q.Set(k, val)
		}
	}
	if key != "" {
		q.Set(key, strconv.FormatInt(id, 10))
	}
	if len(q) == 0 {
		return "/console/audit"
	}
	return "/console/audit?" + q.Encode()
}

// audit lists the team's audit log, newest first, filtered by actor,
// action and day, a page at a time. What an entry acted on is shown by
// its current name.
func (c *Console) audit(ec echo.Context, s *session) error {
	ctx := ec.Request().Context()
	f, fv, problem := auditFilter(ec, c.cfg.AuditPageSize)
	rows, more, err := c.db.AuditLog(ctx, s.TenantID, f)
	if err != nil {
		return c.internal(ec, err)
	}
	actions, err := c.db.AuditActions(ctx, s.TenantID)
	if err != nil {
		return c.internal(ec, err)
	}
	v := templates.Audit{Filter: fv, Error: problem, Filtered: fv != templates.AuditFilter{}}
	for _, a := range actions {
		v.Actions = append(v.Actions, templates.Option{Value: a, Label: a, Selected: a == fv.Action})
	}
	for _, r := range rows {
		d := r.Detail
		if d == "{}" {
			d = ""
		}
		target, id := r.Target, ""
		if r.TargetName != "" {
			target, id = r.TargetName, r.Target
		}
		v.Rows = append(v.Rows, templates.AuditRow{
			At: exact(r.At), Actor: r.Actor, Action: r.Action, Target: target, TargetID: id, Detail: d, Address: r.Address,
		})
	}
	if len(rows) > 0 {
		newest, oldest := rows[0].ID, rows[len(rows)-1].ID
		if (f.After == 0 && more) || f.After != 0 {
			v.Older = auditLink(fv, "before", oldest)
		}
		if f.Before != 0 || (f.After != 0 && more) {
			v.Newer = auditLink(fv, "after", newest)
		}
	}
	if f.Before != 0 || f.After != 0 {
		v.Newest = auditLink(fv, "", 0)
	}
	return c.render(ec, http.StatusOK, templates.AuditPage(c.page(ec, s, "Audit log", "audit"), v))
}
