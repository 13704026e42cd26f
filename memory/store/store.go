// Package store is the PostgreSQL edge of Perpetuity. Every tenant query runs
// through InTenant, which opens a transaction and sets app.tenant_id
// transaction-locally, so row-level security can be forced without touching
// call sites; every statement also names tenant_id itself. pgx.ErrNoRows is
// turned into ErrNotFound here and nowhere else.
package store

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// ErrNotFound is returned when a looked-up row does not exist (for this tenant).
var ErrNotFound = errors.New("not found")

// DB wraps the connection pool.
type DB struct {
	Pool *pgxpool.Pool
	// afterMessage, when set (tests only), runs inside a capture transaction
	// after the message row and before the head lock, to force commits out
	// of id order.
	afterMessage func()
}

// Open connects a pool to databaseURL and checks it answers.
func Open(ctx context.Context, databaseURL string) (*DB, error) {
	cfg, err := pgxpool.ParseConfig(databaseURL)
	if err != nil {
		return nil, fmt.Errorf("parse DATABASE_URL: %w", err)
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("connect database: %w", err)
	}
	if err := pool.Ping(ctx); err != nil {
		pool.Close()
		return nil, fmt.Errorf("ping database: %w", err)
	}
	return &DB{Pool: pool}, nil
}

// Close releases the pool.
func (db *DB) Close() { db.Pool.Close() }

const setTenantSQL = `SELECT set_config('app.tenant_id', $1, true)`

// InTenant runs fn in one transaction with the tenant set transaction-locally.
// The transaction commits when fn returns nil and rolls back otherwise.
func (db *DB) InTenant(ctx context.Context, tenantID int64, fn func(tx pgx.Tx) error) error {
	return pgx.BeginFunc(ctx, db.Pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, setTenantSQL, strconv.FormatInt(tenantID, 10)); err != nil {
			return fmt.Errorf("set tenant: %w", err)
		}
		return fn(tx)
	})
}

// InTenantRead is InTenant with a read-only repeatable-read snapshot, for
// reads that must see one consistent state (arena catch-up, integrity).
func (db *DB) InTenantRead(ctx context.Context, tenantID int64, fn func(tx pgx.Tx) error) error {
	opts := pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly}
	return pgx.BeginTxFunc(ctx, db.Pool, opts, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, setTenantSQL, strconv.FormatInt(tenantID, 10)); err != nil {
			return fmt.Errorf("set tenant: %w", err)
		}
		return fn(tx)
	})
}

// notFound converts pgx.ErrNoRows at the store edge.
func notFound(err error) error {
	if errors.Is(err, pgx.ErrNoRows) {
		return ErrNotFound
	}
	return err
}
