package store

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
)

// ErrUserQuota is returned when a key has created as many new memory users
// today (UTC) as it may.
var ErrUserQuota = errors.New("this key has created as many new memory users today as it may")

const (
	insertNewUserSQL = `INSERT INTO memory_users (tenant_id, name, display_name) VALUES ($1, $2, $2)
	ON CONFLICT (tenant_id, name) DO NOTHING RETURNING id`
	// The day's count goes up only while under the limit (0: none); no
	// row back means the limit is reached.
	countUserCreationSQL = `INSERT INTO key_user_creations (tenant_id, key_id, day, created)
	VALUES ($1, $2, (now() AT TIME ZONE 'UTC')::date, 1)
	ON CONFLICT (tenant_id, key_id, day) DO UPDATE SET created = key_user_creations.created + 1
	WHERE $3::integer = 0 OR key_user_creations.created < $3::integer
	RETURNING created`
	pruneUserCreationsSQL = `DELETE FROM key_user_creations
	WHERE tenant_id = $1 AND key_id = $2 AND day < (now() AT TIME ZONE 'UTC')::date`
)

// EnsureUserForKey is EnsureUser for a request made with key keyID: a user
// the key creates counts against its perDay new users of the UTC day (0:
// unlimited), and past them it is not created (ErrUserQuota). Existing
// users are found whatever the count. The user and its count commit
// together; a concurrent creation of the same name counts once.
func (db *DB) EnsureUserForKey(ctx context.Context, tenantID, keyID int64, name string, perDay int) (int64, error) {
	var id int64
	err := db.InTenant(ctx, tenantID, func(tx pgx.Tx) error {
		err := tx.QueryRow(ctx, userByNameSQL, tenantID, name).Scan(&id)
		if !errors.Is(err, pgx.ErrNoRows) {
			return err
		}
		err = tx.QueryRow(ctx, insertNewUserSQL, tenantID, name).Scan(&id)
		if errors.Is(err, pgx.ErrNoRows) {
			// Another request created it since the read: it is not ours to count.
			return tx.QueryRow(ctx, userByNameSQL, tenantID, name).Scan(&id)
		}
		if err != nil {
			return err
		}
		if err := bindNewUser(ctx, tx, tenantID, id, name, "created"); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, pruneUserCreationsSQL, tenantID, keyID); err != nil {
			return err
		}
		var n int
		err = tx.QueryRow(ctx, countUserCreationSQL, tenantID, keyID, perDay).Scan(&n)
		if errors.Is(err, pgx.ErrNoRows) {
			return ErrUserQuota // rolls the new user back
		}
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("memory user %q: %w", name, err)
	}
	return id, nil
}

// FindConversation finds the user's conversation with this key without
// creating it (EnsureConversation would): for requests that store nothing,
// and EnsureConversation's first look. One round trip.
func (db *DB) FindConversation(ctx context.Context, tenantID, userID int64, extKey string) (int64, error) {
	var id int64
	err := db.hotPipeline(ctx, tenantID, func(b *pgx.Batch) {
		b.Queue(findConversationSQL, tenantID, userID, extKey).QueryRow(func(r pgx.Row) error { return r.Scan(&id) })
	})
	if err != nil {
		return 0, fmt.Errorf("conversation: %w", notFound(err))
	}
	return id, nil
}
