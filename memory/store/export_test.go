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
