// Package store is the PostgreSQL edge of Perpetuity. Every tenant query runs
// through InTenant, which opens a transaction and sets app.tenant_id
// transaction-locally; every statement also names tenant_id itself. The
// pool's connections act as perpetuity_app, a role row-level security binds
// (migration 000005), so a statement sees only the rows of the tenant its
// transaction set, and none outside one. pgx.ErrNoRows is turned into
// ErrNotFound here and nowhere else.
package store

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"strconv"
	"strings"

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

// AppRole is the role every pooled connection acts as. DATABASE_URL names
// the owner, which migrations run as (on their own connection, never this
// pool); the owner must be able to SET ROLE to it (000005 grants that).
const AppRole = "perpetuity_app"

const (
	setRoleSQL = `SET ROLE ` + AppRole
	// Every statement of the serving path reads a handful of rows by index.
	// A misestimate (the catch-up's "seq > watermark" near the top of the
	// histogram is guessed at a thousand rows) made PostgreSQL plan a
	// parallel worker, and starting one took 30-60 ms of a turn that needs
	// 0.1 ms (the memory path at 250k items went from 80 ms to a few).
	noParallelSQL = `SET max_parallel_workers_per_gather = 0`
	// A role that may bypass row-level security would see every tenant.
	bypassSQL = `SELECT current_user, rolsuper OR rolbypassrls FROM pg_roles WHERE rolname = current_user`
)

// ErrBypassesRLS is returned by Open when the pool's role is not bound by
// row-level security.
var ErrBypassesRLS = errors.New("the database role bypasses row-level security")

// Open connects a pool to databaseURL, switches its connections to AppRole
// and refuses to go on unless that role is bound by row-level security.
func Open(ctx context.Context, databaseURL string) (*DB, error) {
	return open(ctx, databaseURL, true, nil)
}

// OpenTraced is Open with every statement reported to tracer (benchmarks
// break a turn's database time down with it).
func OpenTraced(ctx context.Context, databaseURL string, tracer pgx.QueryTracer) (*DB, error) {
	return open(ctx, databaseURL, true, tracer)
}

// defaultMaxConns is the pool's size unless DATABASE_URL sets
// pool_max_conns. A proxied request with memory holds two connections at
// once (its capture and, beside it, its frame's read) while the previous
// request's reply capture, request record and reheat may hold three more:
// with pgxpool's default (4 on two cores), 57 of about 2200 acquires in the
// 10k pipeline bench waited for a connection, 58 ms in all over 270
// requests; with 8, one did. Connections open only as they are needed.
func defaultMaxConns() int32 { return int32(max(8, 2*runtime.NumCPU())) }

// open is Open; tests leave out the role switch to see the refusal.
func open(ctx context.Context, databaseURL string, setRole bool, tracer pgx.QueryTracer) (*DB, error) {
	cfg, err := pgxpool.ParseConfig(databaseURL)
	if err != nil {
		return nil, fmt.Errorf("parse DATABASE_URL: %w", err)
	}
	cfg.ConnConfig.Tracer = tracer
	if !strings.Contains(databaseURL, "pool_max_conns") {
		cfg.MaxConns = max(cfg.MaxConns, defaultMaxConns())
	}
	// Session-level, once per connection: nothing in the application resets
	// it, and the tenant stays transaction-local (InTenant).
	cfg.AfterConnect = func(ctx context.Context, c *pgx.Conn) error {
		if _, err := c.Exec(ctx, noParallelSQL); err != nil {
			return fmt.Errorf("%s: %w", noParallelSQL, err)
		}
		if !setRole {
			return nil
		}
		if _, err := c.Exec(ctx, setRoleSQL); err != nil {
			return fmt.Errorf("%s (is the database migrated? `perpetuity migrate`): %w", setRoleSQL, err)
		}
		return nil
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("connect database: %w", err)
	}
	var role string
	var bypass bool
	if err := pool.QueryRow(ctx, bypassSQL).Scan(&role, &bypass); err != nil {
		pool.Close()
		return nil, fmt.Errorf("check database role: %w", err)
	}
	if bypass {
		pool.Close()
		return nil, fmt.Errorf("connections act as role %q, which is a superuser or has BYPASSRLS; refusing to serve without tenant isolation: %w", role, ErrBypassesRLS)
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

// inTenantDerived is InTenant for a transaction that writes only derived
// state (setTenantDerivedSQL): its commit does not wait for the disk.
func (db *DB) inTenantDerived(ctx context.Context, tenantID int64, fn func(tx pgx.Tx) error) error {
	return pgx.BeginFunc(ctx, db.Pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, setTenantDerivedSQL, strconv.FormatInt(tenantID, 10)); err != nil {
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
