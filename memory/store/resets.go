package store

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"
)

// Password reset links (migration 15). The console hashes the link's token
// before it comes here; the store never sees the token. The reset page
// comes before any tenant is known, so these run functions that act as
// the owner and return only what the page needs; the audit entry of each
// is written in the same transaction, in the account's tenant (or as a
// platform event for a platform admin's account).

// PasswordReset is the account a link resets.
type PasswordReset struct {
	AccountID     int64
	TenantID      int64 // 0 for a platform admin
	Email         string
	SessionsEnded int64 // UsePasswordReset only
}

const (
	issueResetSQL   = `SELECT account_id, tenant_id FROM console_reset_issue($1, $2, $3, $4)`
	pendingResetSQL = `SELECT account_id, tenant_id, email FROM console_reset_pending($1)`
	useResetSQL     = `SELECT account_id, tenant_id, email, sessions_ended FROM console_reset_use($1, $2)`

	accountAuditSQL = `INSERT INTO audit_log (tenant_id, actor_id, actor_email, action, target, detail, address)
		VALUES ($1, $2, $3, $4, $5, $6, $7)`
	accountPlatformAuditSQL = `SELECT record_platform_audit($1, $2, $3, $4, $5, $6)`
)

// accountAudit writes an entry about an account in its tenant, or as a
// platform event (tenantID 0), in tx.
func accountAudit(ctx context.Context, tx pgx.Tx, tenantID int64, by Actor, action, target string, detail map[string]any) error {
	d, err := json.Marshal(detail)
	if err != nil {
		return err
	}
	if tenantID == 0 {
		_, err = tx.Exec(ctx, accountPlatformAuditSQL, by.AccountID, by.Email, action, target, d, by.Address)
		return err
	}
	if _, err := tx.Exec(ctx, setTenantSQL, strconv.FormatInt(tenantID, 10)); err != nil {
		return fmt.Errorf("set tenant: %w", err)
	}
	_, err = tx.Exec(ctx, accountAuditSQL, tenantID, by.AccountID, by.Email, action, target, d, by.Address)
	return err
}

// IssuePasswordReset stores a link's token hash for the enabled account
// with this (normalized) address, valid for ttl, voiding the account's
// earlier unused links, and records who issued it. ErrNotFound when there
// is no such account.
func (db *DB) IssuePasswordReset(ctx context.Context, email string, tokenHash []byte, ttl time.Duration, by Actor) (PasswordReset, error) {
	r := PasswordReset{Email: email}
	err := pgx.BeginFunc(ctx, db.Pool, func(tx pgx.Tx) error {
		if err := tx.QueryRow(ctx, issueResetSQL, email, tokenHash, ttl.Seconds(), by.Email).Scan(&r.AccountID, &r.TenantID); err != nil {
			return notFound(err)
		}
		return accountAudit(ctx, tx, r.TenantID, by, "account.reset_link", email,
			map[string]any{"account_id": r.AccountID, "valid_hours": ttl.Hours()})
	})
	if err != nil {
		return PasswordReset{}, fmt.Errorf("issue password reset: %w", err)
	}
	return r, nil
}

// PendingPasswordReset is the account a live link resets; ErrNotFound for
// a link used, expired, voided or never issued.
func (db *DB) PendingPasswordReset(ctx context.Context, tokenHash []byte) (PasswordReset, error) {
	var r PasswordReset
	err := db.Pool.QueryRow(ctx, pendingResetSQL, tokenHash).Scan(&r.AccountID, &r.TenantID, &r.Email)
	if err != nil {
		return PasswordReset{}, notFound(err)
	}
	return r, nil
}

// UsePasswordReset spends a live link: the account's password hash
// becomes passwordHash and its sessions and other links are gone, in one
// statement, so a link works once however many use it at the same time.
// The account is the actor of the audit entry, from address. ErrNotFound
// when the link is not live.
func (db *DB) UsePasswordReset(ctx context.Context, tokenHash []byte, passwordHash, address string) (PasswordReset, error) {
	var r PasswordReset
	err := pgx.BeginFunc(ctx, db.Pool, func(tx pgx.Tx) error {
		if err := tx.QueryRow(ctx, useResetSQL, tokenHash, passwordHash).Scan(&r.AccountID, &r.TenantID, &r.Email, &r.SessionsEnded); err != nil {
			return notFound(err)
		}
		id := r.AccountID
		return accountAudit(ctx, tx, r.TenantID, Actor{AccountID: &id, Email: r.Email, Address: address},
			"account.password_reset", r.Email, map[string]any{"sessions_ended": r.SessionsEnded})
	})
	if err != nil {
		return PasswordReset{}, fmt.Errorf("use password reset: %w", err)
	}
	return r, nil
}
