package store

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
)

// ExportTurn is one stored message with its items joined back into the
// text that was captured (chunks concatenate to it exactly).
type ExportTurn struct {
	Role        string
	Speaker     string
	Text        string
	At          time.Time
	Interrupted bool
}

// ExportConversation is one conversation of a memory user with every
// stored message, in conversation order.
type ExportConversation struct {
	ID     int64
	ExtKey string
	Title  string
	Turns  []ExportTurn
}

const (
	exportUserSQL = `SELECT id FROM memory_users WHERE tenant_id = $1 AND id = $2`
	// One ordered pass over the user's items: conversations in creation
	// order, messages by their position (then capture order), items by part.
	// Conversations without a stored message have no row and are left out.
	exportItemsSQL = `SELECT c.id, c.ext_key, c.title, m.id, m.role, m.speaker, m.created_at, m.interrupted, i.body
	FROM conversations c
	JOIN messages m ON m.tenant_id = c.tenant_id AND m.conversation_id = c.id
	JOIN items i ON i.tenant_id = m.tenant_id AND i.message_id = m.id
	WHERE c.tenant_id = $1 AND c.user_id = $2 AND m.tenant_id = $1 AND i.tenant_id = $1
	ORDER BY c.id, m.position, m.id, i.part`
)

// ExportUser reads a memory user's whole memory from one consistent
// snapshot and calls fn with each conversation in order, one at a time, so
// a large memory is never held whole. It returns ErrNotFound when the
// tenant has no such user. fn runs while the snapshot is open: it should
// write its output and return, not call back into the store.
func (db *DB) ExportUser(ctx context.Context, tenantID, userID int64, fn func(ExportConversation) error) error {
	err := db.InTenantRead(ctx, tenantID, func(tx pgx.Tx) error {
		var id int64
		if err := tx.QueryRow(ctx, exportUserSQL, tenantID, userID).Scan(&id); err != nil {
			return notFound(err)
		}
		rows, err := tx.Query(ctx, exportItemsSQL, tenantID, userID)
		if err != nil {
			return err
		}
		defer rows.Close()
		var (
			cur      ExportConversation
			text     strings.Builder
			lastMsg  int64
			haveConv bool
		)
		endTurn := func() {
			if lastMsg != 0 {
				cur.Turns[len(cur.Turns)-1].Text = text.String()
				text.Reset()
			}
		}
		for rows.Next() {
			var (
				convID, msgID int64
				extKey, title string
				role, speaker string
				at            time.Time
				interrupted   bool
				body          string
			)
			if err := rows.Scan(&convID, &extKey, &title, &msgID, &role, &speaker, &at, &interrupted, &body); err != nil {
				return err
			}
			if !haveConv || convID != cur.ID {
				endTurn()
				if haveConv {
					if err := fn(cur); err != nil {
						return err
					}
				}
				cur = ExportConversation{ID: convID, ExtKey: extKey, Title: title}
				haveConv, lastMsg = true, 0
			}
			if msgID != lastMsg {
				endTurn()
				cur.Turns = append(cur.Turns, ExportTurn{Role: role, Speaker: speaker, At: at, Interrupted: interrupted})
				lastMsg = msgID
			}
			text.WriteString(body)
		}
		if err := rows.Err(); err != nil {
			return err
		}
		if !haveConv {
			return nil
		}
		endTurn()
		return fn(cur)
	})
	if err != nil {
		return fmt.Errorf("export user %d: %w", userID, err)
	}
	return nil
}
