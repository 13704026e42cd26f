package store

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"github.com/jackc/pgx/v5"
)

// FlipReport says what a flip changed for one tenant.
type FlipReport struct {
	TenantID int64
	From, To int
	Seq      int64 // the log position of the flip; 0 when the tenant was on To already
}

const (
	flipHeadSQL   = `UPDATE tenant_heads SET seq = seq + 1, dict_version = $2 WHERE tenant_id = $1 RETURNING seq`
	flipLogSQL    = `INSERT INTO tenant_log (tenant_id, seq, kind, dict_version) VALUES ($1, $2, 'flip', $3)`
	dropTargetSQL = `DELETE FROM dict_rollouts WHERE tenant_id = $1 AND dict_version = $2`
	// The version flipped away from stays kept, rows and all, so a flip back
	// needs no derivation; captures go on writing its rows until it is retired.
	keepPreviousSQL = `INSERT INTO dict_rollouts (tenant_id, dict_version, state, derived_upto, target, total, derived, finished_at)
		SELECT $1, $2, 'ready', s.maxid, s.maxid, 0, 0, now()
		FROM (SELECT coalesce(max(id), 0) AS maxid FROM items WHERE tenant_id = $1) s
		WHERE EXISTS (SELECT 1 FROM dictionaries WHERE version = $2)
		ON CONFLICT (tenant_id, dict_version) DO UPDATE SET state = 'ready', lease_owner = NULL, lease_until = NULL,
			finished_at = now(), updated_at = now()`
)

// Flip makes version the tenant's active dictionary in one transaction:
// the head's version and seq change together, so every serving process's
// next catch-up sees the flip and reloads its arena under the new version,
// never a mix. It refuses (ErrNotDerived) unless the rollout is ready and
// every item has its row. Flipping to the active version changes nothing.
func (db *DB) Flip(ctx context.Context, tenantID int64, version int, by Actor) (FlipReport, error) {
	var rep FlipReport
	err := db.InTenant(ctx, tenantID, func(tx pgx.Tx) error {
		var err error
		rep, err = flipTx(ctx, tx, tenantID, version, by)
		return err
	})
	if err != nil {
		return FlipReport{}, fmt.Errorf("flip tenant %d to v%d: %w", tenantID, version, err)
	}
	return rep, nil
}

// FlipAll flips every tenant to version in one transaction: either all
// serve it after the commit or, if any tenant is not ready, none changes.
// Heads are locked in tenant id order, so concurrent FlipAlls cannot
// deadlock.
func (db *DB) FlipAll(ctx context.Context, version int, by Actor) ([]FlipReport, error) {
	tenants, err := db.Tenants(ctx)
	if err != nil {
		return nil, err
	}
	var out []FlipReport
	err = pgx.BeginFunc(ctx, db.Pool, func(tx pgx.Tx) error {
		out = out[:0]
		for _, t := range tenants {
			if _, err := tx.Exec(ctx, setTenantSQL, strconv.FormatInt(t.ID, 10)); err != nil {
				return fmt.Errorf("set tenant: %w", err)
			}
			rep, err := flipTx(ctx, tx, t.ID, version, by)
			if errors.Is(err, ErrNotFound) {
				continue // deleted since listed
			}
			if err != nil {
				return fmt.Errorf("tenant %d: %w", t.ID, err)
			}
			out = append(out, rep)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("flip every tenant to v%d: %w", version, err)
	}
	return out, nil
}

func flipTx(ctx context.Context, tx pgx.Tx, tenantID int64, version int, by Actor) (FlipReport, error) {
	rep := FlipReport{TenantID: tenantID, To: version}
	var seq int64
	if err := tx.QueryRow(ctx, lockHeadSQL, tenantID).Scan(&seq, &rep.From); err != nil {
		return rep, notFound(err)
	}
	if rep.From == version {
		return rep, nil
	}
	r, err := scanRollout(tx.QueryRow(ctx, getRolloutSQL, tenantID, version))
	if errors.Is(err, ErrNotFound) {
		return rep, fmt.Errorf("no rollout of v%d (dict derive %d first): %w", version, version, ErrNotDerived)
	}
	if err != nil {
		return rep, err
	}
	if r.State != RolloutReady {
		return rep, fmt.Errorf("derivation at %.0f%%: %w", 100*r.Fraction(), ErrNotDerived)
	}
	var missing int64
	if err := tx.QueryRow(ctx, countUnderivedSQL, tenantID, version).Scan(&missing); err != nil {
		return rep, err
	}
	if missing > 0 {
		return rep, fmt.Errorf("%d items have no row for v%d (run dict derive %d again): %w", missing, version, version, ErrNotDerived)
	}
	if err := tx.QueryRow(ctx, flipHeadSQL, tenantID, version).Scan(&rep.Seq); err != nil {
		return rep, fmt.Errorf("flip head: %w", err)
	}
	if _, err := tx.Exec(ctx, flipLogSQL, tenantID, rep.Seq, version); err != nil {
		return rep, fmt.Errorf("flip log: %w", err)
	}
	if _, err := tx.Exec(ctx, dropTargetSQL, tenantID, version); err != nil {
		return rep, fmt.Errorf("flip rollout: %w", err)
	}
	if _, err := tx.Exec(ctx, keepPreviousSQL, tenantID, rep.From); err != nil {
		return rep, fmt.Errorf("keep v%d: %w", rep.From, err)
	}
	return rep, audit(ctx, tx, tenantID, by, "dict.flip", version, map[string]any{"from": rep.From, "to": version, "seq": rep.Seq})
}

// RetireReport says how much retiring a version removed.
type RetireReport struct {
	Rows int64 `json:"rows"`
}

const (
	retireRowsSQL   = `DELETE FROM retrieval_rows WHERE tenant_id = $1 AND dict_version = $2`
	retireTermsSQL  = `DELETE FROM term_stats WHERE tenant_id = $1 AND dict_version = $2`
	retireCorpusSQL = `DELETE FROM corpus_stats WHERE tenant_id = $1 AND dict_version = $2`
	retireDenseSQL  = `DELETE FROM dense_components WHERE tenant_id = $1 AND dict_version = $2`
)

// Retire stops keeping a version that is not active: its rollout, rows and
// counts go, and a flip to it needs a new derivation. A capture that still
// believed the version kept may add a row for it afterwards; such rows are
// counted like any other and a later derivation skips them.
func (db *DB) Retire(ctx context.Context, tenantID int64, version int, by Actor) (RetireReport, error) {
	var rep RetireReport
	err := db.InTenant(ctx, tenantID, func(tx pgx.Tx) error {
		var seq int64
		var active int
		if err := tx.QueryRow(ctx, lockHeadSQL, tenantID).Scan(&seq, &active); err != nil {
			return notFound(err)
		}
		if active == version {
			return ErrActiveVersion
		}
		if _, err := tx.Exec(ctx, dropTargetSQL, tenantID, version); err != nil {
			return err
		}
		tag, err := tx.Exec(ctx, retireRowsSQL, tenantID, version)
		if err != nil {
			return err
		}
		rep.Rows = tag.RowsAffected()
		// Under the fold lock, so that no fold adds the version's pending
		// counts back once its rows are gone (stats.go).
		if _, err := tx.Exec(ctx, foldLockSQL, tenantID); err != nil {
			return err
		}
		if err := dropSegments(ctx, tx, tenantID, version); err != nil {
			return err
		}
		for _, q := range []string{retireDeltasSQL, retireTermsSQL, retireCorpusSQL, retireDenseSQL} {
			if _, err := tx.Exec(ctx, q, tenantID, version); err != nil {
				return err
			}
		}
		return audit(ctx, tx, tenantID, by, "dict.retire", version, map[string]any{"version": version, "rows": rep.Rows})
	})
	if err != nil {
		return RetireReport{}, fmt.Errorf("retire v%d of tenant %d: %w", version, tenantID, err)
	}
	return rep, nil
}
