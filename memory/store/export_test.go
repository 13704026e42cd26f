package store

// SetAfterMessageHook lets tests pause a capture between its message row
// and its head lock.
func (db *DB) SetAfterMessageHook(f func()) { db.afterMessage = f }
