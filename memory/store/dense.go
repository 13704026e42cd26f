package store

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
)

// Dense rows and the common component (issue 16, migration 000011).

// DenseRow is an item's raw dense vector under one version.
type DenseRow struct {
	ItemID int64
	Dense  []byte
}

const (
	readDenseSQL = `SELECT item_id, dense FROM retrieval_rows
		WHERE tenant_id = $1 AND dict_version = $2 AND item_id > $3 AND dense IS NOT NULL
		ORDER BY item_id LIMIT $4`
	// DO NOTHING: the component is frozen once written; a second derivation
	// worker finishing the same rollout agrees with the first by reading it.
	writeComponentSQL = `INSERT INTO dense_components (tenant_id, dict_version, component, rows_used)
		VALUES ($1, $2, $3, $4) ON CONFLICT (tenant_id, dict_version) DO NOTHING`
	readComponentSQL = `SELECT component FROM dense_components WHERE tenant_id = $1 AND dict_version = $2`
)

// ReadDenseRows reads a batch of the version's dense vectors after an item
// id, in id order: the order the component's sums are taken in.
func (db *DB) ReadDenseRows(ctx context.Context, tenantID int64, version int, after int64, limit int) ([]DenseRow, error) {
	var out []DenseRow
	err := db.InTenant(ctx, tenantID, func(tx pgx.Tx) error {
		rows, err := tx.Query(ctx, readDenseSQL, tenantID, version, after, limit)
		if err != nil {
			return err
		}
		out, err = pgx.CollectRows(rows, pgx.RowToStructByPos[DenseRow])
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("read dense rows v%d of tenant %d: %w", version, tenantID, err)
	}
	return out, nil
}

// WriteComponent freezes the tenant's common component of a version unless
// one is frozen already.
func (db *DB) WriteComponent(ctx context.Context, tenantID int64, version int, component []byte, rows int64) error {
	err := db.InTenant(ctx, tenantID, func(tx pgx.Tx) error {
		_, err := tx.Exec(ctx, writeComponentSQL, tenantID, version, component, rows)
		return err
	})
	if err != nil {
		return fmt.Errorf("write dense component v%d of tenant %d: %w", version, tenantID, err)
	}
	return nil
}

// ReadComponent reads the tenant's frozen component of a version; nil when
// it has none.
func (db *DB) ReadComponent(ctx context.Context, tenantID int64, version int) ([]byte, error) {
	var out []byte
	err := db.InTenant(ctx, tenantID, func(tx pgx.Tx) error {
		rows, err := tx.Query(ctx, readComponentSQL, tenantID, version)
		if err != nil {
			return err
		}
		got, err := pgx.CollectRows(rows, pgx.RowTo[[]byte])
		if len(got) > 0 {
			out = got[0]
		}
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("read dense component v%d of tenant %d: %w", version, tenantID, err)
	}
	return out, nil
}
