package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgerrcode"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// Limits are a tenant's per-key limits (migration 000006): each of the
// tenant's keys may make RequestsPerMinute requests and spend
// TokensPerMinute and TokensPerDay provider tokens. 0 means unlimited.
type Limits struct {
	RequestsPerMinute int
	TokensPerMinute   int
	TokensPerDay      int64
	UpdatedAt         time.Time
}

// LimitsUpdate names the limits to change; nil fields keep their value.
type LimitsUpdate struct {
	RequestsPerMinute *int
	TokensPerMinute   *int
	TokensPerDay      *int64
}

const (
	tenantLimitsSQL = `SELECT requests_per_minute, tokens_per_minute, tokens_per_day, updated_at
		FROM tenant_limits WHERE tenant_id = $1`
	// A new row takes the fields not given from $5..$7 (the service
	// defaults in force), so limiting one thing does not lift another.
	setLimitsSQL = `INSERT INTO tenant_limits (tenant_id, requests_per_minute, tokens_per_minute, tokens_per_day)
		VALUES ($1, COALESCE($2::integer, $5::integer), COALESCE($3::integer, $6::integer), COALESCE($4::bigint, $7::bigint))
		ON CONFLICT (tenant_id) DO UPDATE SET
			requests_per_minute = COALESCE($2::integer, tenant_limits.requests_per_minute),
			tokens_per_minute = COALESCE($3::integer, tenant_limits.tokens_per_minute),
			tokens_per_day = COALESCE($4::bigint, tenant_limits.tokens_per_day),
			updated_at = now()
		RETURNING requests_per_minute, tokens_per_minute, tokens_per_day, updated_at`
	resetLimitsSQL = `DELETE FROM tenant_limits WHERE tenant_id = $1`
)

// TenantLimits reads the tenant's own limits; ErrNotFound when it has none
// (the service defaults apply).
func (db *DB) TenantLimits(ctx context.Context, tenantID int64) (Limits, error) {
	var l Limits
	err := db.InTenant(ctx, tenantID, func(tx pgx.Tx) error {
		return tx.QueryRow(ctx, tenantLimitsSQL, tenantID).Scan(&l.RequestsPerMinute, &l.TokensPerMinute, &l.TokensPerDay, &l.UpdatedAt)
	})
	if err = notFound(err); err != nil && !errors.Is(err, ErrNotFound) {
		return l, fmt.Errorf("tenant limits: %w", err)
	}
	return l, err
}

// SetTenantLimits changes the tenant's limits named in u and returns them
// all. A tenant without limits of its own gets a row whose other fields
// come from base. ErrNotFound when there is no such tenant.
func (db *DB) SetTenantLimits(ctx context.Context, tenantID int64, u LimitsUpdate, base Limits) (Limits, error) {
	var l Limits
	err := db.InTenant(ctx, tenantID, func(tx pgx.Tx) error {
		return tx.QueryRow(ctx, setLimitsSQL, tenantID, u.RequestsPerMinute, u.TokensPerMinute, u.TokensPerDay,
			base.RequestsPerMinute, base.TokensPerMinute, base.TokensPerDay).
			Scan(&l.RequestsPerMinute, &l.TokensPerMinute, &l.TokensPerDay, &l.UpdatedAt)
	})
	var pe *pgconn.PgError
	if errors.As(err, &pe) && pe.Code == pgerrcode.ForeignKeyViolation {
		return l, ErrNotFound
	}
	if err != nil {
		return l, fmt.Errorf("set tenant limits: %w", err)
	}
	return l, nil
}

// ResetTenantLimits drops the tenant's own limits, so the service defaults
// apply again; it reports whether there were any.
func (db *DB) ResetTenantLimits(ctx context.Context, tenantID int64) (bool, error) {
	var had bool
	err := db.InTenant(ctx, tenantID, func(tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, resetLimitsSQL, tenantID)
		had = tag.RowsAffected() > 0
		return err
	})
	if err != nil {
		return false, fmt.Errorf("reset tenant limits: %w", err)
	}
	return had, nil
}
