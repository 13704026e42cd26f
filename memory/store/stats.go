package store

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
)

// A tenant's frequency counts are term_stats and corpus_stats plus the
// rows of stat_deltas: a capture appends its message's counts there (one
// row per dictionary version, in its transaction) instead of adding one to
// each of its terms' rows, which cost two fifths of the capture at the
// server (migration 000022). A fold moves rows into the two tables, one
// addition per term for many messages at once.
//
// Whoever changes the tables for what a message contributed (a purge, a
// redaction, a retired version) folds or drops the message's rows first,
// holding the fold lock, so that no fold moves a row into the tables
// between its reading where the counts are and its subtracting them.
// Captures never wait for it: appending a row takes no lock a fold holds.
const (
	foldLockSQL = `SELECT pg_advisory_xact_lock(hashtextextended('perpetuity stat_deltas', $1))`
	deltaCols   = `RETURNING dict_version, items, total_length, term_ids, dfs`
	// The oldest rows first, so that successive batches drain them in
	// capture order.
	foldOldestSQL = `DELETE FROM stat_deltas WHERE tenant_id = $1 AND (message_id, dict_version) IN (
			SELECT message_id, dict_version FROM stat_deltas WHERE tenant_id = $1
			ORDER BY message_id, dict_version LIMIT $2) ` + deltaCols
	foldUserSQL = `DELETE FROM stat_deltas d USING messages m
		WHERE d.tenant_id = $1 AND m.tenant_id = $1 AND m.id = d.message_id AND m.user_id = $2 ` + deltaCols
	foldMessageSQL  = `DELETE FROM stat_deltas WHERE tenant_id = $1 AND message_id = $2 ` + deltaCols
	retireDeltasSQL = `DELETE FROM stat_deltas WHERE tenant_id = $1 AND dict_version = $2`
)

// foldBatch is how many rows one fold transaction moves at most: a few
// thousand term rows, briefly locked.
const foldBatch = 256

// FoldStats moves the tenant's pending frequency counts into term_stats and
// corpus_stats, foldBatch rows per transaction, and returns how many rows
// it moved. The counts read the same before and after.
func (db *DB) FoldStats(ctx context.Context, tenantID int64) (int, error) {
	total := 0
	for {
		var n int
		err := db.InTenant(ctx, tenantID, func(tx pgx.Tx) error {
			var err error
			n, err = foldDeltas(ctx, tx, tenantID, foldOldestSQL, foldBatch)
			return err
		})
		if err != nil {
			return total, fmt.Errorf("fold frequency counts of tenant %d: %w", tenantID, err)
		}
		total += n
		if n < foldBatch {
			return total, nil
		}
	}
}

// foldDeltas takes the fold lock and moves the rows q deletes (q's first
// argument is the tenant, arg its second) into the tables.
func foldDeltas(ctx context.Context, tx pgx.Tx, tenantID int64, q string, arg any) (int, error) {
	if _, err := tx.Exec(ctx, foldLockSQL, tenantID); err != nil {
		return 0, fmt.Errorf("fold lock: %w", err)
	}
	rows, err := tx.Query(ctx, q, tenantID, arg)
	if err != nil {
		return 0, err
	}
	type corpus struct{ items, length int64 }
	dfs := map[int]map[int32]int32{}
	corpora := map[int]*corpus{}
	var (
		v, items     int32
		length       int64
		terms, count []int32
	)
	tag, err := pgx.ForEachRow(rows, []any{&v, &items, &length, &terms, &count}, func() error {
		if len(terms) != len(count) {
			return fmt.Errorf("delta of v%d: %d terms, %d counts", v, len(terms), len(count))
		}
		if dfs[int(v)] == nil {
			dfs[int(v)], corpora[int(v)] = map[int32]int32{}, &corpus{}
		}
		for i, t := range terms {
			dfs[int(v)][t] += count[i]
		}
		corpora[int(v)].items += int64(items)
		corpora[int(v)].length += length
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("read deltas: %w", err)
	}
	// Terms in order, as the derivation adds them (rollout.go bumpStats),
	// so that the two never wait for each other in a cycle.
	for _, v := range sortedKeys(dfs) {
		terms, counts := sortedCounts(dfs[v])
		if _, err := tx.Exec(ctx, bumpTermStatsSQL, tenantID, v, terms, counts); err != nil {
			return 0, fmt.Errorf("fold term stats: %w", err)
		}
		if _, err := tx.Exec(ctx, bumpCorpusSQL, tenantID, v, corpora[v].items, corpora[v].length); err != nil {
			return 0, fmt.Errorf("fold corpus stats: %w", err)
		}
	}
	return int(tag.RowsAffected()), nil
}
