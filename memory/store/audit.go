package store

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// The audit log as the console reads it: one tenant's entries, filtered
// and paged newest first. Entries name what they acted on by a stable id
// ("memory_user:3"); the page shows what that is called now, read through
// the labels the binding log keeps current (memory_users.display_name,
// conversations.title), and the id when it no longer exists.

// AuditFilter narrows and pages the log. Zero fields do not filter.
type AuditFilter struct {
	Actor  string    // the actor's address contains this (case-insensitive)
	Action string    // exactly this action
	Since  time.Time // at or after
	Until  time.Time // before
	Before int64     // entries older than this id (the next page)
	After  int64     // entries newer than this id (the previous page)
	Limit  int
}

// AuditEntry is one entry as the console lists it.
type AuditEntry struct {
	ID         int64
	At         time.Time
	Actor      string
	Action     string
	Target     string
	TargetName string // what Target names now; empty when the entry names it already
	Detail     string // JSON
	Address    string
}

// auditTargetName resolves the ids entries name; each is one probe by
// primary key of the entry's own tenant.
const auditTargetName = `CASE
    WHEN l.target ~ '^memory_user:[0-9]{1,18}$' THEN coalesce((
        SELECT CASE WHEN u.display_name <> '' AND u.display_name <> u.name THEN u.display_name || ' (' || u.name || ')' ELSE u.name END
        FROM memory_users u WHERE u.tenant_id = l.tenant_id AND u.id = split_part(l.target, ':', 2)::bigint),
        -- A user gone since is named as the entry wrote it down.
        nullif(l.detail->>'user', ''), '')
    WHEN l.target ~ '^conversation:[0-9]{1,18}$' THEN coalesce((
        SELECT coalesce(nullif(c.title, ''), c.ext_key)
        FROM conversations c WHERE c.tenant_id = l.tenant_id AND c.id = split_part(l.target, ':', 2)::bigint), '')
    WHEN l.target ~ '^dictionary:[0-9]{1,9}$' THEN 'dictionary v' || split_part(l.target, ':', 2) || coalesce(' (' || (
        SELECT d.name FROM dictionaries d WHERE d.version = split_part(l.target, ':', 2)::int) || ')', '')
    WHEN l.target ~ '^integrity_report:[0-9]{1,18}$' THEN 'integrity report #' || split_part(l.target, ':', 2)
    WHEN l.target ~ '^item:[0-9]{1,18}$' THEN 'item #' || split_part(l.target, ':', 2)
    ELSE '' END`

// Newest first; a previous page (after) is read oldest first and turned
// around by the caller.
const listAuditSQL = `SELECT l.id, l.at, l.actor_email, l.action, l.target, ` + auditTargetName + `, l.detail::text, l.address
FROM audit_log l
WHERE l.tenant_id = $1
  AND ($2::text = '' OR strpos(lower(l.actor_email), lower($2::text)) > 0)
  AND ($3::text = '' OR l.action = $3::text)
  AND ($4::timestamptz IS NULL OR l.at >= $4::timestamptz)
  AND ($5::timestamptz IS NULL OR l.at < $5::timestamptz)
  AND ($6::bigint = 0 OR l.id < $6::bigint)
  AND ($7::bigint = 0 OR l.id > $7::bigint)
ORDER BY CASE WHEN $7::bigint = 0 THEN -l.id ELSE l.id END
LIMIT $8`

const auditActionsSQL = `SELECT DISTINCT action FROM audit_log WHERE tenant_id = $1 ORDER BY action`

// AuditLog reads a page of the tenant's log, newest first, and whether
// more entries lie beyond it in the direction it was read (older for a
// first or Before page, newer for an After page).
func (db *DB) AuditLog(ctx context.Context, tenantID int64, f AuditFilter) ([]AuditEntry, bool, error) {
	var since, until *time.Time
	if !f.Since.IsZero() {
		since = &f.Since
	}
	if !f.Until.IsZero() {
		until = &f.Until
	}
	var out []AuditEntry
	err := db.InTenant(ctx, tenantID, func(tx pgx.Tx) error {
		rows, err := tx.Query(ctx, listAuditSQL, tenantID, f.Actor, f.Action, since, until, f.Before, f.After, f.Limit+1)
		if err != nil {
			return err
		}
		out, err = pgx.CollectRows(rows, pgx.RowToStructByPos[AuditEntry])
		return err
	})
	if err != nil {
		return nil, false, fmt.Errorf("audit log: %w", err)
	}
	more := len(out) > f.Limit
	if more {
		out = out[:f.Limit]
	}
	if f.After != 0 {
		for i, j := 0, len(out)-1; i < j; i, j = i+1, j-1 {
			out[i], out[j] = out[j], out[i]
		}
	}
	return out, more, nil
}

// AuditActions lists the actions the tenant's log holds, for a filter.
func (db *DB) AuditActions(ctx context.Context, tenantID int64) ([]string, error) {
	var out []string
	err := db.InTenant(ctx, tenantID, func(tx pgx.Tx) error {
		rows, err := tx.Query(ctx, auditActionsSQL, tenantID)
		if err != nil {
			return err
		}
		out, err = pgx.CollectRows(rows, pgx.RowTo[string])
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("audit actions: %w", err)
	}
	return out, nil
}
