package store

import (
	"context"
	"fmt"
	"iter"

	"github.com/jackc/pgx/v5"
)

const (
	dictExistsSQL = `SELECT entries FROM dictionaries WHERE version = $1`
	insertDictSQL = `INSERT INTO dictionaries (version, name, entries) VALUES ($1, $2, $3)`
)

// EnsureDictionary loads a dictionary version into the database unless it
// is there already. Dictionaries are shared data, not tenant data: the
// tables carry no tenant_id and hold nothing any tenant wrote.
func (db *DB) EnsureDictionary(ctx context.Context, version int, name string, entries iter.Seq2[string, uint32]) (loaded bool, err error) {
	var n int
	err = db.Pool.QueryRow(ctx, dictExistsSQL, version).Scan(&n)
	if err == nil {
		return false, nil
	}
	if err != pgx.ErrNoRows {
		return false, fmt.Errorf("dictionary v%d: %w", version, err)
	}
	var rows [][]any
	for w, id := range entries {
		rows = append(rows, []any{int32(version), w, int32(id)})
	}
	err = pgx.BeginFunc(ctx, db.Pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, insertDictSQL, version, name, len(rows)); err != nil {
			return err
		}
		_, err := tx.CopyFrom(ctx, pgx.Identifier{"dictionary_entries"}, []string{"version", "word", "term_id"}, pgx.CopyFromRows(rows))
		return err
	})
	if err != nil {
		// Another process loading the same version at the same time is fine.
		var m int
		if db.Pool.QueryRow(ctx, dictExistsSQL, version).Scan(&m) == nil {
			return false, nil
		}
		return false, fmt.Errorf("load dictionary v%d: %w", version, err)
	}
	return true, nil
}
