package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// Dictionary rollouts (DESIGN §8). A version is uploaded dark (shared data,
// no tenant serves it); per tenant its rows are derived from the stored
// tokens (dict_rollouts tracks the derivation) while captures write rows for
// every version the tenant keeps; one flip then makes it active. Everything
// that changes which versions a tenant keeps or serves takes the tenant's
// head row lock, the lock captures and purges take too, so each capture sees
// one set of versions from its head lock to its commit.

var (
	// ErrDictionaryConflict: the version is loaded with other entries.
	// Shipped versions never change; a changed dictionary is a new version.
	ErrDictionaryConflict = errors.New("a different dictionary with this version is already loaded")
	// ErrNotDerived: a flip to a version whose rows are not all derived.
	ErrNotDerived = errors.New("dictionary version is not derived for every item")
	// ErrActiveVersion: the version is the tenant's active one.
	ErrActiveVersion = errors.New("dictionary version is the active one")
	// ErrLeaseHeld: another worker is deriving this rollout.
	ErrLeaseHeld = errors.New("another worker is deriving this version")
	// ErrLeaseLost: this worker's lease was taken over or the rollout retired.
	ErrLeaseLost = errors.New("derivation lease lost")
)

// versionsChangedCode is raised by dict_version_missing (migration
// 000022, called by capture.go checkVersionsSQL) when a capture lacks a
// row for a version the tenant keeps.
const versionsChangedCode = "PPDV1"

// IsDictVersionsChanged reports whether a capture failed because the
// tenant's dictionary versions changed since its rows were derived: derive
// rows for the current CaptureVersions and capture again.
func IsDictVersionsChanged(err error) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe) && pe.Code == versionsChangedCode
}

// Rollout is one version a tenant keeps besides its active one.
type Rollout struct {
	TenantID    int64
	Version     int
	State       string // "deriving" or "ready"
	DerivedUpto int64  // every item with id <= DerivedUpto has its row
	Target      int64  // largest item id when the derivation started
	Total       int64  // items when the derivation started
	Derived     int64  // rows the derivation wrote
	LeaseOwner  string
	LeaseUntil  *time.Time
	StartedAt   time.Time
	UpdatedAt   time.Time
	FinishedAt  *time.Time
}

// Rollout states.
const (
	RolloutDeriving = "deriving"
	RolloutReady    = "ready"
)

// Fraction is how far the derivation is, 0..1.
func (r Rollout) Fraction() float64 {
	switch {
	case r.State == RolloutReady:
		return 1
	case r.Target <= 0:
		return 0
	}
	return min(1, float64(r.DerivedUpto)/float64(r.Target))
}

// DictStatus is a tenant's active version and the versions it keeps.
type DictStatus struct {
	TenantID int64
	Active   int
	Seq      int64
	Rollouts []Rollout // by version
}

const (
	rolloutCols = `tenant_id, dict_version, state, derived_upto, target, total, derived,
		coalesce(lease_owner, ''), lease_until, started_at, updated_at, finished_at`
	listRolloutsSQL    = `SELECT ` + rolloutCols + ` FROM dict_rollouts WHERE tenant_id = $1 ORDER BY dict_version`
	getRolloutSQL      = `SELECT ` + rolloutCols + ` FROM dict_rollouts WHERE tenant_id = $1 AND dict_version = $2`
	captureVersionsSQL = `SELECT dict_version FROM tenant_heads WHERE tenant_id = $1
		UNION SELECT dict_version FROM dict_rollouts WHERE tenant_id = $1 ORDER BY 1`
	lockHeadSQL    = `SELECT seq, dict_version FROM tenant_heads WHERE tenant_id = $1 FOR UPDATE`
	dictExistsVSQL = `SELECT EXISTS (SELECT 1 FROM dictionaries WHERE version = $1)`
	itemSpanSQL    = `SELECT count(*), coalesce(max(id), 0) FROM items WHERE tenant_id = $1`
	startRollout   = `INSERT INTO dict_rollouts (tenant_id, dict_version, state, target, total)
		VALUES ($1, $2, 'deriving', $3, $4) RETURNING ` + rolloutCols
	opAuditSQL = `INSERT INTO audit_log (tenant_id, actor_id, actor_email, action, target, detail, address)
		VALUES ($1, $2, $3, $4, $5, $6, $7)`
)

func scanRollout(row pgx.Row) (Rollout, error) {
	var r Rollout
	err := row.Scan(&r.TenantID, &r.Version, &r.State, &r.DerivedUpto, &r.Target, &r.Total, &r.Derived,
		&r.LeaseOwner, &r.LeaseUntil, &r.StartedAt, &r.UpdatedAt, &r.FinishedAt)
	return r, notFound(err)
}

func audit(ctx context.Context, tx pgx.Tx, tenantID int64, by Actor, action string, version int, detail map[string]any) error {
	d, _ := json.Marshal(detail)
	if _, err := tx.Exec(ctx, opAuditSQL, tenantID, by.AccountID, by.Email, action, fmt.Sprintf("dictionary:%d", version), d, by.Address); err != nil {
		return fmt.Errorf("%s audit: %w", action, err)
	}
	return nil
}

// DictStatus reads the tenant's active version and its rollouts.
func (db *DB) DictStatus(ctx context.Context, tenantID int64) (DictStatus, error) {
	st := DictStatus{TenantID: tenantID}
	err := db.InTenantRead(ctx, tenantID, func(tx pgx.Tx) error {
		if err := tx.QueryRow(ctx, headSQL, tenantID).Scan(&st.Seq, &st.Active); err != nil {
			return notFound(err)
		}
		rows, err := tx.Query(ctx, listRolloutsSQL, tenantID)
		if err != nil {
			return err
		}
		for rows.Next() {
			r, err := scanRollout(rows)
			if err != nil {
				rows.Close()
				return err
			}
			st.Rollouts = append(st.Rollouts, r)
		}
		return rows.Err()
	})
	if err != nil {
		return DictStatus{}, fmt.Errorf("dictionary status of tenant %d: %w", tenantID, err)
	}
	return st, nil
}

// Rollout reads one rollout of the tenant.
func (db *DB) Rollout(ctx context.Context, tenantID int64, version int) (Rollout, error) {
	var r Rollout
	err := db.InTenant(ctx, tenantID, func(tx pgx.Tx) error {
		var err error
		r, err = scanRollout(tx.QueryRow(ctx, getRolloutSQL, tenantID, version))
		return err
	})
	return r, err
}

// CaptureVersions is every version a capture of the tenant must write rows
// for: the active one and every version the tenant keeps, ascending.
func (db *DB) CaptureVersions(ctx context.Context, tenantID int64) ([]int, error) {
	var vs []int
	err := db.InTenant(ctx, tenantID, func(tx pgx.Tx) error {
		rows, err := tx.Query(ctx, captureVersionsSQL, tenantID)
		if err != nil {
			return err
		}
		vs, err = pgx.CollectRows(rows, pgx.RowTo[int])
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("capture versions of tenant %d: %w", tenantID, err)
	}
	if len(vs) == 0 {
		return nil, fmt.Errorf("capture versions of tenant %d: %w", tenantID, ErrNotFound)
	}
	return vs, nil
}

// StartDerive begins keeping version for the tenant: from its commit on,
// every capture writes rows for it, and a worker derives the rows of the
// items stored before. Starting a rollout that exists returns it unchanged.
func (db *DB) StartDerive(ctx context.Context, tenantID int64, version int, by Actor) (Rollout, error) {
	var r Rollout
	err := db.InTenant(ctx, tenantID, func(tx pgx.Tx) error {
		// Counted before the head lock, not to hold captures up: the
		// figures are for showing progress only.
		var total, target int64
		if err := tx.QueryRow(ctx, itemSpanSQL, tenantID).Scan(&total, &target); err != nil {
			return err
		}
		var seq int64
		var active int
		if err := tx.QueryRow(ctx, lockHeadSQL, tenantID).Scan(&seq, &active); err != nil {
			return notFound(err)
		}
		if active == version {
			return ErrActiveVersion
		}
		var err error
		if r, err = scanRollout(tx.QueryRow(ctx, getRolloutSQL, tenantID, version)); err == nil {
			return nil
		} else if !errors.Is(err, ErrNotFound) {
			return err
		}
		var ok bool
		if err := tx.QueryRow(ctx, dictExistsVSQL, version).Scan(&ok); err != nil {
			return err
		}
		if !ok {
			return fmt.Errorf("dictionary v%d is not loaded (dict upload FILE): %w", version, ErrNotFound)
		}
		if r, err = scanRollout(tx.QueryRow(ctx, startRollout, tenantID, version, target, total)); err != nil {
			return err
		}
		return audit(ctx, tx, tenantID, by, "dict.derive", version, map[string]any{"version": version, "items": total})
	})
	if err != nil {
		return Rollout{}, fmt.Errorf("derive v%d for tenant %d: %w", version, tenantID, err)
	}
	return r, nil
}

// Lease is a derivation worker's claim on a rollout: one worker writes at a
// time, and a crashed worker's claim lapses after TTL.
type Lease struct {
	Owner string
	TTL   time.Duration
}

const (
	claimSQL = `UPDATE dict_rollouts SET lease_owner = $3, lease_until = now() + make_interval(secs => $4), updated_at = now()
		WHERE tenant_id = $1 AND dict_version = $2 AND state = 'deriving'
		  AND (lease_owner IS NULL OR lease_owner = $3 OR lease_until < now())
		RETURNING ` + rolloutCols
	releaseSQL = `UPDATE dict_rollouts SET lease_owner = NULL, lease_until = NULL
		WHERE tenant_id = $1 AND dict_version = $2 AND lease_owner = $3`
)

// ClaimDerive takes the lease of a deriving rollout. A ready rollout comes
// back as it is; one whose lease another live worker holds gives
// ErrLeaseHeld with the rollout (LeaseUntil says when to try again).
func (db *DB) ClaimDerive(ctx context.Context, tenantID int64, version int, l Lease) (Rollout, error) {
	var r Rollout
	err := db.InTenant(ctx, tenantID, func(tx pgx.Tx) error {
		var err error
		r, err = scanRollout(tx.QueryRow(ctx, claimSQL, tenantID, version, l.Owner, l.TTL.Seconds()))
		if !errors.Is(err, ErrNotFound) {
			return err
		}
		if r, err = scanRollout(tx.QueryRow(ctx, getRolloutSQL, tenantID, version)); err != nil {
			return err
		}
		if r.State == RolloutDeriving {
			return ErrLeaseHeld
		}
		return nil
	})
	if err != nil && !errors.Is(err, ErrLeaseHeld) {
		return Rollout{}, fmt.Errorf("claim derivation v%d of tenant %d: %w", version, tenantID, err)
	}
	return r, err
}

// ReleaseDerive gives the lease up (a worker stopping on purpose), so the
// next worker need not wait for it to lapse.
func (db *DB) ReleaseDerive(ctx context.Context, tenantID int64, version int, l Lease) error {
	return db.InTenant(ctx, tenantID, func(tx pgx.Tx) error {
		_, err := tx.Exec(ctx, releaseSQL, tenantID, version, l.Owner)
		return err
	})
}

// TokenItem is an item's id and stored tokens, what derivation reads.
type TokenItem struct {
	ID     int64
	Tokens []string
}

const (
	deriveBatchSQL = `SELECT id, tokens FROM items WHERE tenant_id = $1 AND id > $2 ORDER BY id LIMIT $3`
	underivedSQL   = `SELECT i.id, i.tokens FROM items i WHERE i.tenant_id = $1 AND i.id > $3
		AND NOT EXISTS (SELECT 1 FROM retrieval_rows r WHERE r.tenant_id = $1 AND r.dict_version = $2 AND r.item_id = i.id)
		ORDER BY i.id LIMIT $4`
	countUnderivedSQL = `SELECT count(*) FROM items i WHERE i.tenant_id = $1
		AND NOT EXISTS (SELECT 1 FROM retrieval_rows r WHERE r.tenant_id = $1 AND r.dict_version = $2 AND r.item_id = i.id)`
)

// ReadDeriveBatch reads up to limit items with id > after, by id.
func (db *DB) ReadDeriveBatch(ctx context.Context, tenantID, after int64, limit int) ([]TokenItem, error) {
	return db.readTokens(ctx, tenantID, deriveBatchSQL, tenantID, after, limit)
}

// ReadUnderived reads up to limit items with id > after that have no row
// for version: the sweep that ends a derivation.
func (db *DB) ReadUnderived(ctx context.Context, tenantID int64, version int, after int64, limit int) ([]TokenItem, error) {
	return db.readTokens(ctx, tenantID, underivedSQL, tenantID, version, after, limit)
}

func (db *DB) readTokens(ctx context.Context, tenantID int64, sql string, args ...any) ([]TokenItem, error) {
	var out []TokenItem
	err := db.InTenant(ctx, tenantID, func(tx pgx.Tx) error {
		rows, err := tx.Query(ctx, sql, args...)
		if err != nil {
			return err
		}
		out, err = pgx.CollectRows(rows, pgx.RowToStructByPos[TokenItem])
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("read items to derive: %w", err)
	}
	return out, nil
}

// DerivedRow is one item's row under the version being derived.
type DerivedRow struct {
	ItemID int64
	Row    RetrievalRow
}

const (
	// The join skips items purged since they were read; ON CONFLICT skips
	// rows a capture or an earlier attempt wrote. RETURNING tells which rows
	// are new, so the counts grow by exactly those.
	insertDerivedSQL = `INSERT INTO retrieval_rows (tenant_id, dict_version, item_id, term_ids, term_freqs, length, dense)
		SELECT $1, $2, p.item_id,
			ARRAY(SELECT t.v::int FROM jsonb_array_elements_text(p.terms) WITH ORDINALITY AS t(v, n) ORDER BY t.n),
			ARRAY(SELECT f.v::smallint FROM jsonb_array_elements_text(p.freqs) WITH ORDINALITY AS f(v, n) ORDER BY f.n),
			p.length, p.dense
		FROM unnest($3::bigint[], $4::jsonb[], $5::jsonb[], $6::int[], $7::bytea[]) AS p(item_id, terms, freqs, length, dense)
		JOIN items i ON i.tenant_id = $1 AND i.id = p.item_id
		ORDER BY p.item_id
		ON CONFLICT (tenant_id, dict_version, item_id) DO NOTHING
		RETURNING item_id`
	advanceRolloutSQL = `UPDATE dict_rollouts SET derived_upto = GREATEST(derived_upto, $3), derived = derived + $4,
			lease_until = now() + make_interval(secs => $6), updated_at = now()
		WHERE tenant_id = $1 AND dict_version = $2 AND state = 'deriving' AND lease_owner = $5
		RETURNING ` + rolloutCols
	finishRolloutSQL = `UPDATE dict_rollouts SET state = 'ready', derived_upto = GREATEST(derived_upto, target),
			lease_owner = NULL, lease_until = NULL, finished_at = now(), updated_at = now()
		WHERE tenant_id = $1 AND dict_version = $2 AND state = 'deriving' AND lease_owner = $3
		RETURNING ` + rolloutCols
)

// WriteDerived stores a batch of derived rows with their frequency counts
// and moves the rollout's cursor to upto, in one transaction under the
// tenant's head lock (so a purge never counts half a batch). Rows of items
// purged meanwhile, or written already, are skipped.
func (db *DB) WriteDerived(ctx context.Context, tenantID int64, version int, l Lease, rows []DerivedRow, upto int64) (Rollout, error) {
	var r Rollout
	err := db.InTenant(ctx, tenantID, func(tx pgx.Tx) error {
		var seq int64
		var active int
		if err := tx.QueryRow(ctx, lockHeadSQL, tenantID).Scan(&seq, &active); err != nil {
			return notFound(err)
		}
		n := len(rows)
		ids := make([]int64, n)
		terms, freqs := make([][]int32, n), make([][]int16, n)
		lengths := make([]int32, n)
		dense := make([][]byte, n)
		for i, d := range rows {
			ids[i], terms[i], freqs[i], lengths[i] = d.ItemID, nonNil(d.Row.TermIDs), nonNil(d.Row.Freqs), int32(d.Row.Length)
			dense[i] = d.Row.Dense
		}
		inserted := 0
		if n > 0 {
			res, err := tx.Query(ctx, insertDerivedSQL, tenantID, version, ids, terms, freqs, lengths, dense)
			if err != nil {
				return fmt.Errorf("insert rows: %w", err)
			}
			got, err := pgx.CollectRows(res, pgx.RowTo[int64])
			if err != nil {
				return fmt.Errorf("insert rows: %w", err)
			}
			if err := bumpStats(ctx, tx, tenantID, version, rows, got); err != nil {
				return err
			}
			inserted = len(got)
		}
		var err error
		r, err = scanRollout(tx.QueryRow(ctx, advanceRolloutSQL, tenantID, version, upto, inserted, l.Owner, l.TTL.Seconds()))
		if errors.Is(err, ErrNotFound) {
			return ErrLeaseLost
		}
		return err
	})
	if err != nil {
		return Rollout{}, fmt.Errorf("write derived rows v%d of tenant %d: %w", version, tenantID, err)
	}
	return r, nil
}

func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

// bumpStats adds the inserted rows to the version's frequency counts.
func bumpStats(ctx context.Context, tx pgx.Tx, tenantID int64, version int, rows []DerivedRow, inserted []int64) error {
	if len(inserted) == 0 {
		return nil
	}
	in := make(map[int64]bool, len(inserted))
	for _, id := range inserted {
		in[id] = true
	}
	df := map[int32]int32{}
	var length int64
	for _, d := range rows {
		if !in[d.ItemID] {
			continue
		}
		in[d.ItemID] = false // an id listed twice counts once, as it was inserted once
		for _, t := range d.Row.TermIDs {
			df[t]++
		}
		length += int64(d.Row.Length)
	}
	terms, counts := sortedCounts(df)
	if _, err := tx.Exec(ctx, bumpTermStatsSQL, tenantID, version, terms, counts); err != nil {
		return fmt.Errorf("bump term stats: %w", err)
	}
	if _, err := tx.Exec(ctx, bumpCorpusSQL, tenantID, version, len(inserted), length); err != nil {
		return fmt.Errorf("bump corpus stats: %w", err)
	}
	return nil
}

// FinishDerive marks the rollout ready once no item lacks its row; if some
// still do (an item stored without rows meanwhile), it returns how many and
// the rollout stays deriving for another sweep.
func (db *DB) FinishDerive(ctx context.Context, tenantID int64, version int, l Lease) (r Rollout, missing int64, err error) {
	err = db.InTenant(ctx, tenantID, func(tx pgx.Tx) error {
		var seq int64
		var active int
		if err := tx.QueryRow(ctx, lockHeadSQL, tenantID).Scan(&seq, &active); err != nil {
			return notFound(err)
		}
		if err := tx.QueryRow(ctx, countUnderivedSQL, tenantID, version).Scan(&missing); err != nil {
			return err
		}
		if missing > 0 {
			r, err = scanRollout(tx.QueryRow(ctx, getRolloutSQL, tenantID, version))
			return err
		}
		r, err = scanRollout(tx.QueryRow(ctx, finishRolloutSQL, tenantID, version, l.Owner))
		if errors.Is(err, ErrNotFound) {
			return ErrLeaseLost
		}
		return err
	})
	if err != nil {
		return Rollout{}, 0, fmt.Errorf("finish derivation v%d of tenant %d: %w", version, tenantID, err)
	}
	return r, missing, nil
}
