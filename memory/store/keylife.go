package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// Key lifecycle (migration 000018): a key's end, its rotation and its own
// limits. They are read in the key's tenant after the key resolves, not by
// resolve_api_key, so the one lookup made before the tenant is known keeps
// its shape.

// KeyLimits are one key's own limits; a nil field takes the tenant's
// (Limits), as every key did before keys had limits of their own.
type KeyLimits struct {
	RequestsPerMinute *int
	TokensPerMinute   *int
	TokensPerDay      *int64
}

// Over is the limits in force for the key: its own where set, the
// tenant's l elsewhere.
func (k KeyLimits) Over(l Limits) Limits {
	if k.RequestsPerMinute != nil {
		l.RequestsPerMinute = *k.RequestsPerMinute
	}
	if k.TokensPerMinute != nil {
		l.TokensPerMinute = *k.TokensPerMinute
	}
	if k.TokensPerDay != nil {
		l.TokensPerDay = *k.TokensPerDay
	}
	return l
}

// Expired reports whether the key's end has come at now. A key without an
// end never expires.
func (k KeyIdentity) Expired(now time.Time) bool {
	return k.ExpiresAt != nil && !now.Before(*k.ExpiresAt)
}

// KeyOptions are what a new key is made with.
type KeyOptions struct {
	Name      string
	Scope     KeyScope
	ExpiresAt *time.Time // nil: never
	Limits    KeyLimits
}

const (
	keyLifeSQL = `SELECT expires_at, requests_per_minute, tokens_per_minute, tokens_per_day
		FROM api_keys WHERE tenant_id = $1 AND id = $2`
	insertKeyWithSQL = `INSERT INTO api_keys (tenant_id, user_id, name, prefix, key_hash, scope, expires_at,
			requests_per_minute, tokens_per_minute, tokens_per_day)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10) RETURNING id`
	// Only a live key that has not ended and was not rotated already is
	// rotated: rotating the old key of a rotation again would leave two
	// replacements of one key.
	rotatableKeySQL = `SELECT user_id, name, scope, requests_per_minute, tokens_per_minute, tokens_per_day
		FROM api_keys WHERE tenant_id = $1 AND id = $2 AND revoked_at IS NULL AND rotated_at IS NULL
			AND (expires_at IS NULL OR expires_at > now())
		FOR UPDATE`
	// The old key's end is the grace's end, or its own end when that comes
	// first: a rotation never lengthens a key's life.
	rotateOldSQL = `UPDATE api_keys SET rotated_at = now(),
			expires_at = LEAST(COALESCE(expires_at, 'infinity'::timestamptz), now() + make_interval(secs => $3))
		WHERE tenant_id = $1 AND id = $2 RETURNING expires_at`
	setKeyLimitsSQL = `UPDATE api_keys SET requests_per_minute = $3, tokens_per_minute = $4, tokens_per_day = $5
		WHERE tenant_id = $1 AND id = $2 AND revoked_at IS NULL`
)

// keyLife adds the key's end and own limits to a resolved key.
func (db *DB) keyLife(ctx context.Context, k *KeyIdentity) error {
	return db.InTenant(ctx, k.TenantID, func(tx pgx.Tx) error {
		return tx.QueryRow(ctx, keyLifeSQL, k.TenantID, k.KeyID).
			Scan(&k.ExpiresAt, &k.Limits.RequestsPerMinute, &k.Limits.TokensPerMinute, &k.Limits.TokensPerDay)
	})
}

// CreateKeyWith issues a new key bound to a memory user of the tenant,
// with an end and limits of its own when o has them.
func (db *DB) CreateKeyWith(ctx context.Context, tenantID, userID int64, o KeyOptions) (keyID int64, key string, err error) {
	if err := o.Scope.check(); err != nil {
		return 0, "", err
	}
	if err := o.Limits.check(); err != nil {
		return 0, "", err
	}
	key, hash, err := NewKey()
	if err != nil {
		return 0, "", err
	}
	err = db.InTenant(ctx, tenantID, func(tx pgx.Tx) error {
		if err := tx.QueryRow(ctx, insertKeyWithSQL, tenantID, userID, o.Name, ShortPrefix(key), hash, o.Scope, o.ExpiresAt,
			o.Limits.RequestsPerMinute, o.Limits.TokensPerMinute, o.Limits.TokensPerDay).Scan(&keyID); err != nil {
			return err
		}
		// The proxy finds a key by its coordinator-side lookup row (Citus).
		_, err := tx.Exec(ctx, insertKeyLookupSQL, hash, tenantID, keyID)
		return err
	})
	if err != nil {
		return 0, "", fmt.Errorf("create key: %w", err)
	}
	return keyID, key, nil
}

// Rotation is a rotated key's replacement and the old key's end.
type Rotation struct {
	NewID         int64
	Key           string // the new key, to be shown once
	Name          string
	UserID        int64
	Scope         KeyScope
	OldValidUntil time.Time
}

// RotateKey replaces a live key with a new one of the same name, memory
// user, scope and limits, and ends the old one grace from now (or at its
// own end, when sooner). The new key has no end of its own. ErrNotFound
// when the key is revoked, ended, already rotated or not the tenant's.
func (db *DB) RotateKey(ctx context.Context, tenantID, keyID int64, grace time.Duration) (Rotation, error) {
	if grace < 0 {
		return Rotation{}, fmt.Errorf("rotate key: negative grace %v", grace)
	}
	key, hash, err := NewKey()
	if err != nil {
		return Rotation{}, err
	}
	out := Rotation{Key: key}
	err = db.InTenant(ctx, tenantID, func(tx pgx.Tx) error {
		var l KeyLimits
		if err := tx.QueryRow(ctx, rotatableKeySQL, tenantID, keyID).
			Scan(&out.UserID, &out.Name, &out.Scope, &l.RequestsPerMinute, &l.TokensPerMinute, &l.TokensPerDay); err != nil {
			return notFound(err)
		}
		if err := tx.QueryRow(ctx, insertKeyWithSQL, tenantID, out.UserID, out.Name, ShortPrefix(key), hash, out.Scope, nil,
			l.RequestsPerMinute, l.TokensPerMinute, l.TokensPerDay).Scan(&out.NewID); err != nil {
			return fmt.Errorf("insert replacement: %w", err)
		}
		if _, err := tx.Exec(ctx, insertKeyLookupSQL, hash, tenantID, out.NewID); err != nil {
			return fmt.Errorf("insert replacement's lookup: %w", err)
		}
		return tx.QueryRow(ctx, rotateOldSQL, tenantID, keyID, grace.Seconds()).Scan(&out.OldValidUntil)
	})
	if errors.Is(err, ErrNotFound) {
		return Rotation{}, ErrNotFound
	}
	if err != nil {
		return Rotation{}, fmt.Errorf("rotate key %d: %w", keyID, err)
	}
	return out, nil
}

// SetKeyLimits replaces a live key's own limits (nil fields: the
// tenant's). ErrNotFound when there is no such live key in the tenant.
func (db *DB) SetKeyLimits(ctx context.Context, tenantID, keyID int64, l KeyLimits) error {
	if err := l.check(); err != nil {
		return err
	}
	return db.InTenant(ctx, tenantID, func(tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, setKeyLimitsSQL, tenantID, keyID, l.RequestsPerMinute, l.TokensPerMinute, l.TokensPerDay)
		if err != nil {
			return fmt.Errorf("set key limits: %w", err)
		}
		if tag.RowsAffected() == 0 {
			return ErrNotFound
		}
		return nil
	})
}

// maxKeyLimit bounds a minute limit so it fits the column (integer).
const maxKeyLimit = 1<<31 - 1

func (k KeyLimits) check() error {
	for _, v := range []*int{k.RequestsPerMinute, k.TokensPerMinute} {
		if v != nil && (*v < 0 || *v > maxKeyLimit) {
			return fmt.Errorf("key limit %d: want 0 (unlimited) to %d", *v, maxKeyLimit)
		}
	}
	if k.TokensPerDay != nil && *k.TokensPerDay < 0 {
		return fmt.Errorf("key tokens per day %d: want 0 (unlimited) or more", *k.TokensPerDay)
	}
	return nil
}

const keyOwnLimitsSQL = `SELECT requests_per_minute, tokens_per_minute, tokens_per_day FROM api_keys WHERE tenant_id = $1 AND id = $2`

// KeyOwnLimits reads a key's own limits (nil fields: the tenant's).
func (db *DB) KeyOwnLimits(ctx context.Context, tenantID, keyID int64) (KeyLimits, error) {
	var l KeyLimits
	err := db.InTenant(ctx, tenantID, func(tx pgx.Tx) error {
		return tx.QueryRow(ctx, keyOwnLimitsSQL, tenantID, keyID).Scan(&l.RequestsPerMinute, &l.TokensPerMinute, &l.TokensPerDay)
	})
	if err != nil {
		return l, fmt.Errorf("key limits: %w", notFound(err))
	}
	return l, nil
}
