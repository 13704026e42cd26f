package store

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/jackc/pgerrcode"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/perpetuity/perpetuity/memory/dict"
)

// KeyPrefix starts every Perpetuity key, so leaked keys are recognisable.
const KeyPrefix = "ppk_"

// NewKey returns a fresh random key (192 bits) and its stored hash.
func NewKey() (key string, hash []byte, err error) {
	b := make([]byte, 24)
	if _, err := rand.Read(b); err != nil {
		return "", nil, fmt.Errorf("random key: %w", err)
	}
	key = KeyPrefix + base64.RawURLEncoding.EncodeToString(b)
	return key, HashKey(key), nil
}

// HashKey is how keys are stored: keys carry 192 random bits, so a plain
// SHA-256 is enough and keeps the per-request lookup cheap.
func HashKey(key string) []byte {
	s := sha256.Sum256([]byte(key))
	return s[:]
}

// ShortPrefix is the part of a key that may be shown after creation.
func ShortPrefix(key string) string {
	if len(key) < len(KeyPrefix)+6 {
		return KeyPrefix
	}
	return key[:len(KeyPrefix)+6]
}

// Tenant is a team.
type Tenant struct {
	ID                int64
	Name              string
	UserFieldIdentity bool
	CreatedAt         time.Time
}

// NewTenant is what creating a tenant hands back: the key is shown once.
type NewTenant struct {
	TenantID int64
	UserID   int64
	UserName string
	KeyID    int64
	Key      string
	Scope    KeyScope // the first key's
}

const (
	// The tenant row and its head come from a function that runs as the
	// owner: without an exact version the head starts on the newer of the
	// default and the version most tenants serve, a look across tenants
	// (migration 000013).
	createTenantSQL = `SELECT create_tenant($1, $2, $3)`
	insertUserSQL   = `INSERT INTO memory_users (tenant_id, name, display_name) VALUES ($1, $2, $3) RETURNING id`
	insertKeySQL    = `INSERT INTO api_keys (tenant_id, user_id, name, prefix, key_hash, scope) VALUES ($1, $2, $3, $4, $5, $6) RETURNING id`
	// A key's hash is unique across tenants in the lookup, which stays on
	// the coordinator under Citus (migration 000020): the key is what
	// names its tenant.
	insertKeyLookupSQL = `INSERT INTO key_lookup (key_hash, tenant_id, key_id) VALUES ($1, $2, $3)`
)

// insertKey writes a key and its lookup row in the caller's (tenant)
// transaction, so a key is never found without its row or the reverse.
func insertKey(ctx context.Context, tx pgx.Tx, tenantID, userID int64, name, key string, hash []byte, scope KeyScope) (int64, error) {
	var id int64
	if err := tx.QueryRow(ctx, insertKeySQL, tenantID, userID, name, ShortPrefix(key), hash, scope).Scan(&id); err != nil {
		return 0, fmt.Errorf("insert key: %w", err)
	}
	if _, err := tx.Exec(ctx, insertKeyLookupSQL, hash, tenantID, id); err != nil {
		return 0, fmt.Errorf("insert key lookup: %w", err)
	}
	return id, nil
}

// CreateTenant creates a tenant, its first memory user and its first API
// key, pinned to that user, in one transaction.
func (db *DB) CreateTenant(ctx context.Context, name, firstUser string) (NewTenant, error) {
	return db.CreateTenantScoped(ctx, name, firstUser, ScopeUser)
}

// CreateTenantScoped is CreateTenant with the first key's scope chosen.
func (db *DB) CreateTenantScoped(ctx context.Context, name, firstUser string, scope KeyScope) (NewTenant, error) {
	return db.CreateTenantWith(ctx, name, firstUser, TenantOptions{Scope: scope})
}

// TenantOptions are the choices made when a tenant is created.
type TenantOptions struct {
	Scope KeyScope // the first key's; empty: ScopeUser
	// Dict is the dictionary version the tenant starts on; 0 starts it on
	// dict.Default, or on the version most tenants serve if that is newer.
	Dict int
}

// CreateTenantWith creates a tenant, its first memory user and its first
// API key in one transaction. The dictionary it starts on is loaded first
// if the database lacks it and the binary ships it: a new tenant has no
// items, so it needs no derivation, only the dictionary's entries.
func (db *DB) CreateTenantWith(ctx context.Context, name, firstUser string, o TenantOptions) (NewTenant, error) {
	scope := o.Scope
	if scope == "" {
		scope = ScopeUser
	}
	if err := scope.check(); err != nil {
		return NewTenant{}, err
	}
	version, exact := o.Dict, o.Dict != 0
	if !exact {
		version = dict.Default
	}
	if err := db.ensureStartDictionary(ctx, version); err != nil {
		return NewTenant{}, err
	}
	out := NewTenant{Scope: scope}
	err := pgx.BeginFunc(ctx, db.Pool, func(tx pgx.Tx) error {
		if err := tx.QueryRow(ctx, createTenantSQL, name, version, exact).Scan(&out.TenantID); err != nil {
			if isCode(err, dictMissingCode) {
				return fmt.Errorf("insert tenant: dictionary v%d: %w", version, ErrNotFound)
			}
			return fmt.Errorf("insert tenant: %w", err)
		}
		if _, err := tx.Exec(ctx, setTenantSQL, strconv.FormatInt(out.TenantID, 10)); err != nil {
			return fmt.Errorf("set tenant: %w", err)
		}
		if err := tx.QueryRow(ctx, insertUserSQL, out.TenantID, firstUser, firstUser).Scan(&out.UserID); err != nil {
			return fmt.Errorf("insert first user: %w", err)
		}
		if err := bindNewUser(ctx, tx, out.TenantID, out.UserID, firstUser, "created"); err != nil {
			return err
		}
		out.UserName = firstUser
		key, hash, err := NewKey()
		if err != nil {
			return err
		}
		if out.KeyID, err = insertKey(ctx, tx, out.TenantID, out.UserID, "first key", key, hash, scope); err != nil {
			return err
		}
		out.Key = key
		return nil
	})
	return out, err
}

// CreateKey issues a new key bound to a memory user of the tenant and
// pinned to it.
func (db *DB) CreateKey(ctx context.Context, tenantID, userID int64, name string) (keyID int64, key string, err error) {
	return db.CreateKeyScoped(ctx, tenantID, userID, name, ScopeUser)
}

// CreateKeyScoped is CreateKey with the scope chosen.
func (db *DB) CreateKeyScoped(ctx context.Context, tenantID, userID int64, name string, scope KeyScope) (keyID int64, key string, err error) {
	if err := scope.check(); err != nil {
		return 0, "", err
	}
	key, hash, err := NewKey()
	if err != nil {
		return 0, "", err
	}
	err = db.InTenant(ctx, tenantID, func(tx pgx.Tx) error {
		keyID, err = insertKey(ctx, tx, tenantID, userID, name, key, hash, scope)
		return err
	})
	if err != nil {
		return 0, "", fmt.Errorf("create key: %w", err)
	}
	return keyID, key, nil
}

const revokeKeySQL = `UPDATE api_keys SET revoked_at = now() WHERE tenant_id = $1 AND id = $2 AND revoked_at IS NULL`

// RevokeKey revokes a key of the tenant; ErrNotFound if there is no such live key.
func (db *DB) RevokeKey(ctx context.Context, tenantID, keyID int64) error {
	return db.InTenant(ctx, tenantID, func(tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, revokeKeySQL, tenantID, keyID)
		if err != nil {
			return err
		}
		if tag.RowsAffected() == 0 {
			return ErrNotFound
		}
		return nil
	})
}

// KeyIdentity is what a Perpetuity key resolves to.
type KeyIdentity struct {
	TenantID          int64
	KeyID             int64
	UserID            int64
	UserName          string
	UserFieldIdentity bool
	Scope             KeyScope
	// ExpiresAt is the key's end (nil: none); the proxy refuses the key
	// from that instant (Expired), cached or not.
	ExpiresAt *time.Time
	// Limits are the key's own, over the tenant's (keylife.go).
	Limits KeyLimits
}

const resolveKeySQL = `SELECT tenant_id, key_id, user_id, user_name, user_field_identity, scope FROM resolve_api_key($1)`

// ResolveKey finds the unrevoked key with this value, ended or not (the
// caller refuses an ended key with its own answer, KeyIdentity.Expired).
// The lookup is the only one not scoped by a tenant, because the key is
// what names the tenant; its end and own limits are then read in it.
func (db *DB) ResolveKey(ctx context.Context, key string) (KeyIdentity, error) {
	var k KeyIdentity
	err := db.Pool.QueryRow(ctx, resolveKeySQL, HashKey(key)).Scan(&k.TenantID, &k.KeyID, &k.UserID, &k.UserName, &k.UserFieldIdentity, &k.Scope)
	if err != nil {
		return k, notFound(err)
	}
	if err := db.keyLife(ctx, &k); err != nil {
		return KeyIdentity{}, fmt.Errorf("key lifecycle: %w", notFound(err))
	}
	return k, nil
}

const touchKeySQL = `UPDATE api_keys SET last_used_at = now()
	WHERE tenant_id = $1 AND id = $2 AND (last_used_at IS NULL OR last_used_at < now() - interval '1 minute')`

// TouchKey records that a key was used, at most once a minute per key.
func (db *DB) TouchKey(ctx context.Context, tenantID, keyID int64) error {
	return db.InTenant(ctx, tenantID, func(tx pgx.Tx) error {
		_, err := tx.Exec(ctx, touchKeySQL, tenantID, keyID)
		return err
	})
}

// The no-op update on conflict makes the statement return the existing row
// even when a concurrent insert of the same name committed after this
// statement's snapshot (DO NOTHING would return no row at all).
const ensureUserSQL = `INSERT INTO memory_users (tenant_id, name, display_name) VALUES ($1, $2, $2)
	ON CONFLICT (tenant_id, name) DO UPDATE SET name = EXCLUDED.name RETURNING id, xmax = 0`

// EnsureUser returns the id of the tenant's memory user with this name,
// creating it on first sight.
func (db *DB) EnsureUser(ctx context.Context, tenantID int64, name string) (int64, error) {
	var id int64
	err := db.InTenant(ctx, tenantID, func(tx pgx.Tx) error {
		// Read first: the common case writes nothing and commits without a WAL flush.
		err := tx.QueryRow(ctx, userByNameSQL, tenantID, name).Scan(&id)
		if err != pgx.ErrNoRows {
			return err
		}
		var inserted bool // xmax = 0: this statement made the row
		if err := tx.QueryRow(ctx, ensureUserSQL, tenantID, name).Scan(&id, &inserted); err != nil || !inserted {
			return err
		}
		return bindNewUser(ctx, tx, tenantID, id, name, "created")
	})
	if err != nil {
		return 0, fmt.Errorf("ensure user: %w", err)
	}
	return id, nil
}

const findConversationSQL = `SELECT id FROM conversations WHERE tenant_id = $1 AND user_id = $2 AND ext_key = $3`

const ensureConversationSQL = `INSERT INTO conversations (tenant_id, user_id, ext_key, title) VALUES ($1, $2, $3, $4)
	ON CONFLICT (tenant_id, user_id, ext_key) DO UPDATE SET ext_key = EXCLUDED.ext_key RETURNING id, xmax = 0`

// EnsureConversation returns the id of the user's conversation with this
// key, creating it on first sight. The common case, a conversation that
// exists, is one round trip that writes nothing.
func (db *DB) EnsureConversation(ctx context.Context, tenantID, userID int64, extKey, title string) (int64, error) {
	id, err := db.FindConversation(ctx, tenantID, userID, extKey)
	if !errors.Is(err, ErrNotFound) {
		return id, err
	}
	err = db.InTenant(ctx, tenantID, func(tx pgx.Tx) error {
		err := tx.QueryRow(ctx, findConversationSQL, tenantID, userID, extKey).Scan(&id)
		if err != pgx.ErrNoRows {
			return err
		}
		var inserted bool
		if err := tx.QueryRow(ctx, ensureConversationSQL, tenantID, userID, extKey, title).Scan(&id, &inserted); err != nil || !inserted {
			return err
		}
		return bindNewConversation(ctx, tx, tenantID, userID, id, title, "created")
	})
	if err != nil {
		return 0, fmt.Errorf("ensure conversation: %w", err)
	}
	return id, nil
}

// ConversationGone reports whether err is a capture refused because its
// conversation no longer exists: the user was purged after the id was
// looked up. The refused transaction stored nothing.
func ConversationGone(err error) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe) && pe.Code == pgerrcode.ForeignKeyViolation &&
		pe.ConstraintName == "messages_tenant_id_conversation_id_fkey"
}

// deleteTenantSQL removes every row of a tenant, children first. Used for
// scratch tenants (eval, bench) and tenant removal.
var deleteTenantSQL = []string{
	`DELETE FROM chain_edges WHERE tenant_id = $1`,
	`DELETE FROM chain_heads WHERE tenant_id = $1`,
	`DELETE FROM reply_sources WHERE tenant_id = $1`,
	`DELETE FROM reheats WHERE tenant_id = $1`,
	`DELETE FROM activations WHERE tenant_id = $1`,
	`DELETE FROM retrieval_rows WHERE tenant_id = $1`,
	`DELETE FROM dense_components WHERE tenant_id = $1`,
	`DELETE FROM term_stats WHERE tenant_id = $1`,
	`DELETE FROM corpus_stats WHERE tenant_id = $1`,
	`DELETE FROM items WHERE tenant_id = $1`,
	`DELETE FROM messages WHERE tenant_id = $1`,
	`DELETE FROM bindings WHERE tenant_id = $1`,
	`DELETE FROM conversations WHERE tenant_id = $1`,
	`DELETE FROM request_inspection_items WHERE tenant_id = $1`,
	`DELETE FROM request_inspections WHERE tenant_id = $1`,
	`DELETE FROM requests WHERE tenant_id = $1`,
	`DELETE FROM tenant_log WHERE tenant_id = $1`,
	`DELETE FROM key_user_creations WHERE tenant_id = $1`,
	`DELETE FROM key_lookup WHERE tenant_id = $1`,
	`DELETE FROM invite_lookup WHERE tenant_id = $1`,
	`DELETE FROM api_keys WHERE tenant_id = $1`,
	`DELETE FROM memory_users WHERE tenant_id = $1`,
	`DELETE FROM tenant_heads WHERE tenant_id = $1`,
	`DELETE FROM tenants WHERE id = $1`,
}

// DeleteTenant removes a tenant and everything it stored, in one transaction.
func (db *DB) DeleteTenant(ctx context.Context, tenantID int64) error {
	return db.InTenant(ctx, tenantID, func(tx pgx.Tx) error {
		// A fold running meanwhile would deadlock with the deletes below or
		// put term rows back after them: hold its lock (stats.go).
		if _, err := tx.Exec(ctx, foldLockSQL, tenantID); err != nil {
			return fmt.Errorf("delete tenant: fold lock: %w", err)
		}
		if err := dropSegments(ctx, tx, tenantID, 0); err != nil {
			return fmt.Errorf("delete tenant: %w", err)
		}
		for _, q := range deleteTenantSQL {
			if _, err := tx.Exec(ctx, q, tenantID); err != nil {
				return fmt.Errorf("delete tenant: %w", err)
			}
		}
		return nil
	})
}
