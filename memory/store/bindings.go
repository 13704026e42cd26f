package store

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// The binding log (issue 17, migration 12) is written here and nowhere
// else: every row of bindings, and every later change of the labels it
// keeps current in memory_users.display_name and conversations.title (the
// console's lists read those), comes from this file, inside the
// transaction that makes the change. Creation binds a user's name and a
// conversation's title in the creating transaction, capture binds a new
// speaker and the harness's identity hints in the capture transaction, so
// a crash can lose no binding of anything stored. Labels resolve through
// the latest row of their subject when rendered (renderSQL; a frame reads
// them with its other inputs, itemtext.go).

// Binding kinds, as the table's check names them.
const (
	BindUser    = "user"    // a memory user's display name
	BindSpeaker = "speaker" // the label of a stored speaker in a user's memory
	BindTitle   = "title"   // a conversation's title
	BindHint    = "hint"    // a harness identity hint seen with a user and conversation
)

// Binding is one row of the log.
type Binding struct {
	ID             int64
	Kind           string
	UserID         int64
	ConversationID *int64
	Subject        string
	Value          string
	Source         string
	BoundAt        time.Time
}

// Hint is an identity hint a harness sent: where it was found (the OpenAI
// "user" field, Anthropic "metadata.user_id", a session header) and its
// value.
type Hint struct {
	Subject string
	Value   string
}

const (
	bindUserSQL  = `INSERT INTO bindings (tenant_id, kind, user_id, value, source) VALUES ($1, 'user', $2, $3, $4)`
	bindTitleSQL = `INSERT INTO bindings (tenant_id, kind, user_id, conversation_id, value, source)
		VALUES ($1, 'title', $2, $3, $4, $5)`
	// A speaker is bound the first time the user's memory stores it; in
	// the capture's batch, only when it stored the message (capturedSQL).
	bindSpeakerSQL = `INSERT INTO bindings (tenant_id, kind, user_id, subject, value, source)
		SELECT $1, 'speaker', $2, $3, $3, 'capture'
		WHERE ` + capturedSQL + ` IS NOT NULL AND NOT EXISTS (SELECT 1 FROM bindings
			WHERE tenant_id = $1 AND user_id = $2 AND kind = 'speaker' AND subject = $3)`
	// A hint is bound the first time it is seen with this user and
	// conversation: the log says when each pairing began, not every request.
	bindHintsSQL = `INSERT INTO bindings (tenant_id, kind, user_id, conversation_id, subject, value, source)
		SELECT $1, 'hint', $2, $3, h.subject, h.value, 'capture'
		FROM unnest($4::text[], $5::text[]) AS h(subject, value)
		WHERE ` + capturedSQL + ` IS NOT NULL AND NOT EXISTS (SELECT 1 FROM bindings b
			WHERE b.tenant_id = $1 AND b.user_id = $2 AND b.kind = 'hint' AND b.conversation_id = $3
				AND b.subject = h.subject AND b.value = h.value)`
	renameUserSQL    = `UPDATE memory_users SET display_name = $3 WHERE tenant_id = $1 AND id = $2`
	renameTitleSQL   = `UPDATE conversations SET title = $3 WHERE tenant_id = $1 AND id = $2 RETURNING user_id`
	purgeBindingsSQL = `DELETE FROM bindings WHERE tenant_id = $1 AND user_id = $2`
	// After a purge the user remains, and so must its name's binding.
	rebindUserSQL = `INSERT INTO bindings (tenant_id, kind, user_id, value, source)
		SELECT tenant_id, 'user', id, display_name, 'purge' FROM memory_users WHERE tenant_id = $1 AND id = $2`

	userBindingsSQL = `SELECT id, kind, user_id, conversation_id, subject, value, source, bound_at
		FROM bindings WHERE tenant_id = $1 AND user_id = $2 AND kind <> 'title' ORDER BY id DESC LIMIT $3`
	conversationBindingsSQL = `SELECT id, kind, user_id, conversation_id, subject, value, source, bound_at
		FROM bindings WHERE tenant_id = $1 AND conversation_id = $2 ORDER BY id DESC LIMIT $3`
)

// bindNewUser records a new user's display name, in its creating transaction.
func bindNewUser(ctx context.Context, tx pgx.Tx, tenantID, userID int64, display, source string) error {
	if _, err := tx.Exec(ctx, bindUserSQL, tenantID, userID, display, source); err != nil {
		return fmt.Errorf("bind user name: %w", err)
	}
	return nil
}

// bindNewConversation records a new conversation's title, in its creating
// transaction.
func bindNewConversation(ctx context.Context, tx pgx.Tx, tenantID, userID, convID int64, title, source string) error {
	if _, err := tx.Exec(ctx, bindTitleSQL, tenantID, userID, convID, title, source); err != nil {
		return fmt.Errorf("bind conversation title: %w", err)
	}
	return nil
}

// queueCaptureBindings adds to a capture's batch, before its COMMIT,
// the speaker's first binding and the hints' first pairing with the user
// and conversation. Nothing is queued when there is nothing to bind.
func queueCaptureBindings(b *pgx.Batch, c Capture) {
	if c.Speaker != "" {
		b.Queue(bindSpeakerSQL, c.TenantID, c.UserID, c.Speaker)
	}
	if len(c.Hints) > 0 {
		subjects, values := make([]string, len(c.Hints)), make([]string, len(c.Hints))
		for i, h := range c.Hints {
			subjects[i], values[i] = h.Subject, h.Value
		}
		b.Queue(bindHintsSQL, c.TenantID, c.UserID, c.ConversationID, subjects, values)
	}
}

// purgeBindings removes a user's whole binding history in the purge's
// transaction, and binds its current name again: the user remains.
func purgeBindings(ctx context.Context, tx pgx.Tx, tenantID, userID int64) (int64, error) {
	tag, err := tx.Exec(ctx, purgeBindingsSQL, tenantID, userID)
	if err != nil {
		return 0, fmt.Errorf("purge bindings: %w", err)
	}
	if _, err := tx.Exec(ctx, rebindUserSQL, tenantID, userID); err != nil {
		return 0, fmt.Errorf("rebind user name: %w", err)
	}
	return tag.RowsAffected(), nil
}

// RenameUser sets a memory user's display name: a new binding, which the
// next frame's labels show; earlier bindings stay in the log.
func (db *DB) RenameUser(ctx context.Context, tenantID, userID int64, display, source string) error {
	err := db.InTenant(ctx, tenantID, func(tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, renameUserSQL, tenantID, userID, display)
		if err != nil {
			return err
		}
		if tag.RowsAffected() == 0 {
			return ErrNotFound
		}
		return bindNewUser(ctx, tx, tenantID, userID, display, source)
	})
	if err != nil {
		return fmt.Errorf("rename user %d: %w", userID, err)
	}
	return nil
}

// RenameConversation sets a conversation's title, as RenameUser does a name.
func (db *DB) RenameConversation(ctx context.Context, tenantID, convID int64, title, source string) error {
	err := db.InTenant(ctx, tenantID, func(tx pgx.Tx) error {
		var userID int64
		if err := tx.QueryRow(ctx, renameTitleSQL, tenantID, convID, title).Scan(&userID); err != nil {
			return notFound(err)
		}
		return bindNewConversation(ctx, tx, tenantID, userID, convID, title, source)
	})
	if err != nil {
		return fmt.Errorf("rename conversation %d: %w", convID, err)
	}
	return nil
}

// UserBindings is the history of a user's bindings (its name, its
// speakers, the harness hints bound to it; titles are the conversations'),
// newest first, at most limit.
func (db *DB) UserBindings(ctx context.Context, tenantID, userID int64, limit int) ([]Binding, error) {
	return db.bindings(ctx, tenantID, userBindingsSQL, userID, limit)
}

// ConversationBindings is the history of a conversation's bindings (its
// title and the hints seen with it), newest first, at most limit.
func (db *DB) ConversationBindings(ctx context.Context, tenantID, convID int64, limit int) ([]Binding, error) {
	return db.bindings(ctx, tenantID, conversationBindingsSQL, convID, limit)
}

func (db *DB) bindings(ctx context.Context, tenantID int64, sql string, id int64, limit int) ([]Binding, error) {
	var out []Binding
	err := db.InTenant(ctx, tenantID, func(tx pgx.Tx) error {
		rows, err := tx.Query(ctx, sql, tenantID, id, limit)
		if err != nil {
			return err
		}
		out, err = pgx.CollectRows(rows, pgx.RowToStructByPos[Binding])
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("bindings: %w", err)
	}
	return out, nil
}
