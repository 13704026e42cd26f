package store

import "context"

// SetAfterMessageHook lets tests pause a capture between its message row
// and its head lock.
func (db *DB) SetAfterMessageHook(f func()) { db.afterMessage = f }

// OpenWithoutRole is Open without the switch to AppRole: the pool acts as
// the role the URL names.
func OpenWithoutRole(ctx context.Context, databaseURL string) (*DB, error) {
	return open(ctx, databaseURL, false, nil)
}

// ErasureLockSQL is the lock a purge or redaction takes first.
const ErasureLockSQL = erasureLockSQL

// QuoteRecord is what RecordRequests sends for a record quoting memory:
// the erasure lock it holds shared, then its statement and arguments.
func QuoteRecord(r RequestRecord) (lock, stmt string, args []any, err error) {
	stmt, args, err = recordStatement(r)
	return quoteLockSQL, stmt, args, err
}
