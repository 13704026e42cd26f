package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
)

// Kinds of tenant log events (migrations 000001, 000019).
const (
	LogPurge  = "purge"
	LogFlip   = "flip"
	LogRedact = "redact"
)

// RedactReport says what a redaction removed: counts and ids, never content.
type RedactReport struct {
	ItemID         int64 `json:"item_id"`
	UserID         int64 `json:"user_id"`
	ConversationID int64 `json:"conversation_id"`
	MessageID      int64 `json:"message_id"`
	// MessageRemoved: the item was its message's last part, so the message
	// (and its reply sources) went too.
	MessageRemoved bool `json:"message_removed"`
	// TitleCleared: the conversation's title held the item's text.
	TitleCleared bool  `json:"title_cleared"`
	Rows         int64 `json:"retrieval_rows"`
	Activations  int64 `json:"activations"`
	Reheats      int64 `json:"reheats"`
	Edges        int64 `json:"edges"`       // chain edges that named the item
	Sources      int64 `json:"sources"`     // replies' sources that listed it
	Inspections  int64 `json:"inspections"` // request inspector records that could quote it
	Seq          int64 `json:"seq"`
}

// OwnerEdges derives an owner's whole chain graph from their items in log
// order (memory/chain's rules; the store cannot apply them itself).
type OwnerEdges func(items []ChainItem) []ChainEdge

const (
	redactLockSQL      = `SELECT user_id, conversation_id, message_id FROM items WHERE tenant_id = $1 AND id = $2 FOR UPDATE`
	redactTermStatsSQL = `WITH gone AS (
			SELECT r.dict_version, t.term_id, count(*) AS n
			FROM retrieval_rows r, unnest(r.term_ids) AS t(term_id)
			WHERE r.tenant_id = $1 AND r.item_id = $2
			GROUP BY r.dict_version, t.term_id)
		UPDATE term_stats s SET df = s.df - gone.n FROM gone
		WHERE s.tenant_id = $1 AND s.dict_version = gone.dict_version AND s.term_id = gone.term_id`
	redactCorpusSQL = `WITH gone AS (
			SELECT dict_version, count(*) AS n, sum(length) AS len FROM retrieval_rows
			WHERE tenant_id = $1 AND item_id = $2 GROUP BY dict_version)
		UPDATE corpus_stats c SET items = c.items - gone.n, total_length = c.total_length - gone.len FROM gone
		WHERE c.tenant_id = $1 AND c.dict_version = gone.dict_version`
	redactSourcesSQL = `UPDATE reply_sources SET item_ids = array_remove(item_ids, $2::bigint)
		WHERE tenant_id = $1 AND $2::bigint = ANY(item_ids)`
	redactItemEdgesSQL  = `SELECT count(*) FROM chain_edges WHERE tenant_id = $1 AND (src_id = $2 OR dst_id = $2)`
	redactOwnerEdgesSQL = `DELETE FROM chain_edges WHERE tenant_id = $1 AND user_id = $2`
	redactRowsSQL       = `DELETE FROM retrieval_rows WHERE tenant_id = $1 AND item_id = $2`
	redactActivationSQL = `DELETE FROM activations WHERE tenant_id = $1 AND item_id = $2`
	redactReheatsSQL    = `DELETE FROM reheats WHERE tenant_id = $1 AND item_id = $2`
	redactItemSQL       = `DELETE FROM items WHERE tenant_id = $1 AND id = $2`
	// The inspector's records quote frames, tool results, questions and
	// replies as sent: every record that could quote the item goes, its
	// owner's own requests (which hold their frames' items in arrays) and
	// another user's frame that named it (an index row: migration 000025).
	redactInspectionsSQL = `DELETE FROM request_inspections p WHERE p.tenant_id = $1 AND (p.user_id = $3 OR EXISTS (
			SELECT 1 FROM request_inspection_items x WHERE x.tenant_id = $1 AND x.request_id = p.request_id AND x.item_id = $2))`
	redactMessageSQL = `DELETE FROM messages m WHERE m.tenant_id = $1 AND m.id = $2
		AND NOT EXISTS (SELECT 1 FROM items i WHERE i.tenant_id = $1 AND i.message_id = $2)`
	// The owner's surviving items up to the chain watermark, as a rebuild
	// replays them (chainItemsSQL, one owner).
	redactOwnerItemsSQL = `SELECT i.id, i.seq, i.user_id, i.conversation_id, i.role, i.token_count, i.tokens,
			COALESCE(s.item_ids, '{}')
		FROM items i LEFT JOIN reply_sources s ON s.tenant_id = i.tenant_id AND s.message_id = i.message_id
		WHERE i.tenant_id = $1 AND i.user_id = $2 AND i.seq <= $3
		ORDER BY i.seq, i.id`
	// A conversation is titled by its first message (the proxy's
	// default): a title that holds the item's text, or is held by it,
	// would show the secret on every console page, so it is cleared and
	// its bindings with that text go; a new empty binding keeps the log
	// complete.
	redactTitleSQL = `UPDATE conversations c SET title = '' FROM items i
		WHERE c.tenant_id = $1 AND i.tenant_id = $1 AND i.id = $2 AND c.id = i.conversation_id
		  AND c.title <> '' AND (strpos(i.body, c.title) > 0 OR strpos(c.title, i.body) > 0)`
	redactTitleBindingsSQL = `DELETE FROM bindings b USING items i
		WHERE b.tenant_id = $1 AND i.tenant_id = $1 AND i.id = $2 AND b.conversation_id = i.conversation_id
		  AND b.kind = 'title' AND b.value <> '' AND (strpos(i.body, b.value) > 0 OR strpos(b.value, i.body) > 0)`
	redactLogSQL   = `INSERT INTO tenant_log (tenant_id, seq, kind, user_id, item_id) VALUES ($1, $2, 'redact', $3, $4)`
	redactAuditSQL = `INSERT INTO audit_log (tenant_id, actor_id, actor_email, action, target, detail, address)
		VALUES ($1, $2, $3, 'memory.redact', $4, $5, $6)`
)

// RedactItem removes one item for good, in one transaction that holds the
// tenant's head (ordered with captures, purges and flips) and the chain
// writer's head: the item with its retrieval rows (dense vectors with
// them), every viewer's activation and reheats, its birth record, the
// chain edges and reply sources that name it, and its message when it was
// the last part. The frequency counts lose what its rows contributed, so
// they stay what a recount gives. The owner's chain edges up to the
// writer's watermark are replaced by ownerEdges' rebuild without the item:
// the rules count the owner's earlier items, so edges that never touched
// the item can change too, and integrity compares with a rebuild. A
// 'redact' event in the tenant log makes every serving process drop the
// item from its arena and item cache before its next scan, and every chain
// writer reload. The audit entry names the item and its owner, never
// what it said. The tenant's dense common component stays frozen (it is
// never recomputed, by design: every process must score alike).
func (db *DB) RedactItem(ctx context.Context, tenantID, itemID int64, by Actor, ownerEdges OwnerEdges) (RedactReport, error) {
	var rep RedactReport
	err := db.InTenant(ctx, tenantID, func(tx pgx.Tx) error {
		rep = RedactReport{ItemID: itemID}
		if err := lockErasure(ctx, tx, tenantID); err != nil { // first, as purge's (erasure.go)
			return err
		}
		if err := tx.QueryRow(ctx, bumpHeadSQL, tenantID).Scan(&rep.Seq); err != nil {
			return fmt.Errorf("bump tenant head: %w", notFound(err))
		}
		// After the head, as purge does: the chain writer holds this row
		// while its edges' foreign keys lock items.
		if _, err := tx.Exec(ctx, chainEnsureHeadSQL, tenantID); err != nil {
			return fmt.Errorf("lock chain head: %w", err)
		}
		var mark int64
		if err := tx.QueryRow(ctx, chainLockHeadSQL, tenantID).Scan(&mark); err != nil {
			return fmt.Errorf("lock chain head: %w", err)
		}
		if err := tx.QueryRow(ctx, redactLockSQL, tenantID, itemID).Scan(&rep.UserID, &rep.ConversationID, &rep.MessageID); err != nil {
			return notFound(err)
		}
		// The message's counts still held as deltas join the tables
		// first (stats.go), so that they lose what the item contributed.
		if _, err := foldDeltas(ctx, tx, tenantID, foldMessageSQL, rep.MessageID); err != nil {
			return fmt.Errorf("redact statistics: %w", err)
		}
		// After the fold lock, as everywhere: the arena segments hold the
		// item's row (segment.go).
		if err := dropSegments(ctx, tx, tenantID, 0); err != nil {
			return err
		}
		for _, q := range []string{redactTermStatsSQL, purgeZeroStatsSQL, redactCorpusSQL} {
			args := []any{tenantID, itemID}
			if q == purgeZeroStatsSQL {
				args = args[:1]
			}
			if _, err := tx.Exec(ctx, q, args...); err != nil {
				return fmt.Errorf("redact statistics: %w", err)
			}
		}
		tag, err := tx.Exec(ctx, redactTitleSQL, tenantID, itemID)
		if err != nil {
			return fmt.Errorf("redact title: %w", err)
		}
		rep.TitleCleared = tag.RowsAffected() == 1
		if _, err := tx.Exec(ctx, redactTitleBindingsSQL, tenantID, itemID); err != nil {
			return fmt.Errorf("redact title: %w", err)
		}
		if rep.TitleCleared {
			if err := bindNewConversation(ctx, tx, tenantID, rep.UserID, rep.ConversationID, "", "redact"); err != nil {
				return err
			}
		}
		if err := tx.QueryRow(ctx, redactItemEdgesSQL, tenantID, itemID).Scan(&rep.Edges); err != nil {
			return fmt.Errorf("redact edges: %w", err)
		}
		tag, err = tx.Exec(ctx, redactSourcesSQL, tenantID, itemID)
		if err != nil {
			return fmt.Errorf("redact sources: %w", err)
		}
		rep.Sources = tag.RowsAffected()
		tag, err = tx.Exec(ctx, redactInspectionsSQL, tenantID, itemID, rep.UserID)
		if err != nil {
			return fmt.Errorf("redact inspections: %w", err)
		}
		rep.Inspections = tag.RowsAffected()
		if _, err := tx.Exec(ctx, redactOwnerEdgesSQL, tenantID, rep.UserID); err != nil {
			return fmt.Errorf("redact edges: %w", err)
		}
		counts := []*int64{&rep.Rows, &rep.Activations, &rep.Reheats, nil}
		for i, q := range []string{redactRowsSQL, redactActivationSQL, redactReheatsSQL, redactItemSQL} {
			tag, err := tx.Exec(ctx, q, tenantID, itemID)
			if err != nil {
				return fmt.Errorf("redact rows: %w", err)
			}
			if counts[i] != nil {
				*counts[i] = tag.RowsAffected()
			}
		}
		if tag, err = tx.Exec(ctx, redactMessageSQL, tenantID, rep.MessageID); err != nil {
			return fmt.Errorf("redact message: %w", err)
		}
		rep.MessageRemoved = tag.RowsAffected() == 1
		if err := rewriteOwnerEdges(ctx, tx, tenantID, rep.UserID, mark, ownerEdges); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, redactLogSQL, tenantID, rep.Seq, rep.UserID, itemID); err != nil {
			return fmt.Errorf("redact log: %w", err)
		}
		detail, _ := json.Marshal(rep)
		if _, err := tx.Exec(ctx, redactAuditSQL, tenantID, by.AccountID, by.Email, fmt.Sprintf("memory_user:%d", rep.UserID), detail, by.Address); err != nil {
			return fmt.Errorf("redact audit: %w", err)
		}
		return nil
	})
	if err != nil {
		return RedactReport{}, fmt.Errorf("redact item %d: %w", itemID, err)
	}
	return rep, nil
}

// rewriteOwnerEdges stores the owner's graph up to the chain watermark as
// derived from their items now.
func rewriteOwnerEdges(ctx context.Context, tx pgx.Tx, tenantID, userID, mark int64, ownerEdges OwnerEdges) error {
	if mark == 0 {
		return nil
	}
	if ownerEdges == nil {
		return errors.New("redact: the owner's chain edges need the chain rules to be rebuilt")
	}
	rows, err := tx.Query(ctx, redactOwnerItemsSQL, tenantID, userID, mark)
	if err != nil {
		return fmt.Errorf("redact chain replay: %w", err)
	}
	items, err := pgx.CollectRows(rows, pgx.RowToStructByPos[ChainItem])
	if err != nil {
		return fmt.Errorf("redact chain replay: %w", err)
	}
	if err := insertEdges(ctx, tx, tenantID, ownerEdges(items)); err != nil {
		return fmt.Errorf("redact chain edges: %w", err)
	}
	return nil
}
