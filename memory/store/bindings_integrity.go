package store

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
)

// BindingFault is a label a frame could render that the binding log does
// not resolve, or a binding that disagrees with what it binds. Ids only,
// never the names themselves.
type BindingFault struct {
	Problem        string // unbound, stale or owner
	Kind           string // user, speaker, title or hint
	UserID         int64
	ConversationID *int64
}

// bindingFaultsSQL: every memory user has a name binding; every stored
// speaker of a user's messages a speaker binding; every conversation a
// title binding (unbound). The labels the console lists equal the latest
// binding (stale). A binding of a conversation names its owner (owner).
const bindingFaultsSQL = `(
	SELECT 'unbound', 'user', u.id, NULL::bigint FROM memory_users u
	WHERE u.tenant_id = $1 AND NOT EXISTS (SELECT 1 FROM bindings b
		WHERE b.tenant_id = $1 AND b.user_id = u.id AND b.kind = 'user' AND b.subject = '')
	UNION ALL
	SELECT DISTINCT 'unbound', 'speaker', m.user_id, NULL::bigint FROM messages m
	WHERE m.tenant_id = $1 AND m.speaker <> '' AND NOT EXISTS (SELECT 1 FROM bindings b
		WHERE b.tenant_id = $1 AND b.user_id = m.user_id AND b.kind = 'speaker' AND b.subject = m.speaker)
	UNION ALL
	SELECT 'unbound', 'title', c.user_id, c.id FROM conversations c
	WHERE c.tenant_id = $1 AND NOT EXISTS (SELECT 1 FROM bindings b
		WHERE b.tenant_id = $1 AND b.conversation_id = c.id AND b.kind = 'title')
	UNION ALL
	SELECT 'stale', 'user', u.id, NULL::bigint FROM memory_users u
	WHERE u.tenant_id = $1 AND u.display_name <> (SELECT b.value FROM bindings b
		WHERE b.tenant_id = $1 AND b.user_id = u.id AND b.kind = 'user' AND b.subject = '' ORDER BY b.id DESC LIMIT 1)
	UNION ALL
	SELECT 'stale', 'title', c.user_id, c.id FROM conversations c
	WHERE c.tenant_id = $1 AND c.title <> (SELECT b.value FROM bindings b
		WHERE b.tenant_id = $1 AND b.conversation_id = c.id AND b.kind = 'title' ORDER BY b.id DESC LIMIT 1)
	UNION ALL
	SELECT 'owner', b.kind, b.user_id, b.conversation_id FROM bindings b
	JOIN conversations c ON c.tenant_id = b.tenant_id AND c.id = b.conversation_id
	WHERE b.tenant_id = $1 AND c.user_id <> b.user_id
) LIMIT $2`

// BindingFaults lists up to limit faults of the binding log in the snapshot.
func (r *IntegrityReader) BindingFaults(ctx context.Context, limit int) ([]BindingFault, error) {
	rows, err := r.tx.Query(ctx, bindingFaultsSQL, r.tenantID, limit)
	if err != nil {
		return nil, fmt.Errorf("integrity bindings: %w", err)
	}
	return pgx.CollectRows(rows, pgx.RowToStructByPos[BindingFault])
}
