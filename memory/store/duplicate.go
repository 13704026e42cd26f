package store

import (
	"context"
	"fmt"
	"strconv"

	"github.com/jackc/pgx/v5"
)

// sentAfterLimit bounds the items a duplicate's read returns: a tool loop
// of hundreds of rounds with words in each stays under it; past it the
// oldest are kept, and the frame quotes the rest again.
const sentAfterLimit = 1024

// storedBeforeSQL reads the message a capture found stored ($3, its
// fingerprint) and, when the request sends messages after it, the items
// of the turns stored since from those positions ($5 < position < $6; $6
// 0: none): a reply of an earlier round of the same tool loop. Only the
// owner's items born since the message are looked at (items_born), so a
// long conversation is not walked; the message's own come first, by part.
// Each row also has the tenant's latest erasure (Captured.Erased).
const storedBeforeSQL = `WITH live AS (
		SELECT id, created_at FROM messages WHERE tenant_id = $1 AND conversation_id = $2 AND fingerprint = $3)
	SELECT i.id, i.message_id = live.id,
		(SELECT coalesce(max(seq), 0) FROM tenant_log WHERE tenant_id = $1 AND kind IN ('purge', 'redact'))
	FROM live, items i JOIN messages m ON m.tenant_id = i.tenant_id AND m.id = i.message_id
	WHERE i.tenant_id = $1 AND i.user_id = $4 AND i.born_at >= live.created_at AND i.conversation_id = $2
		AND (i.message_id = live.id OR (m.id > live.id AND m.position > $5 AND m.position < $6))
	ORDER BY i.message_id, i.part
	LIMIT $7`

// storedBefore is what a capture that stored nothing reports: the stored
// message's items, and those of the turns the request sends again after it.
// It is read in the capture's transaction when that is still open (its
// tenant setting); after a capture whose COMMIT went with its statements,
// in an implicit transaction of its own, the tenant set in the same batch.
// One round trip either way.
func storedBefore(ctx context.Context, conn *pgx.Conn, c Capture, open bool) (Captured, error) {
	out := Captured{Duplicate: true, Position: c.Position}
	b := &pgx.Batch{}
	if !open {
		b.Queue(setTenantGenericSQL, strconv.FormatInt(c.TenantID, 10))
	}
	b.Queue(storedBeforeSQL, c.TenantID, c.ConversationID, c.Fingerprint, c.UserID,
		c.Position, c.SentAfter, sentAfterLimit).Query(func(rows pgx.Rows) error {
		var id int64
		var own bool
		_, err := pgx.ForEachRow(rows, []any{&id, &own, &out.Erased}, func() error {
			if own {
				out.ItemIDs = append(out.ItemIDs, id)
			} else {
				out.SentAfter = append(out.SentAfter, id)
			}
			return nil
		})
		return err
	})
	if err := conn.SendBatch(ctx, b).Close(); err != nil {
		return out, fmt.Errorf("read stored message: %w", err)
	}
	return out, nil
}
