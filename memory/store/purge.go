package store

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/jackc/pgx/v5"
)

// Actor is who performs an administrative operation, for the audit log.
type Actor struct {
	AccountID *int64
	Email     string // "cli" for the command line
	Address   string // the client address of a console action; empty from the command line
}

// PurgeReport says how much a purge removed (never what).
type PurgeReport struct {
	Items         int64 `json:"items"`
	Messages      int64 `json:"messages"`
	Conversations int64 `json:"conversations"`
	Bindings      int64 `json:"bindings"`
	Edges         int64 `json:"edges"` // the user's chain graph edges
	// Inspections are the request inspector's records of the user's
	// requests, and of others' requests whose frames held the user's items.
	Inspections int64 `json:"inspections"`
	Seq         int64 `json:"seq"`
}

const (
	lockUserSQL       = `SELECT id FROM memory_users WHERE tenant_id = $1 AND id = $2 FOR UPDATE`
	purgeTermStatsSQL = `WITH gone AS (
			SELECT r.dict_version, t.term_id, count(*) AS n
			FROM retrieval_rows r JOIN items i ON i.tenant_id = r.tenant_id AND i.id = r.item_id,
			     unnest(r.term_ids) AS t(term_id)
			WHERE r.tenant_id = $1 AND i.user_id = $2
			GROUP BY r.dict_version, t.term_id)
		UPDATE term_stats s SET df = s.df - gone.n FROM gone
		WHERE s.tenant_id = $1 AND s.dict_version = gone.dict_version AND s.term_id = gone.term_id`
	purgeZeroStatsSQL = `DELETE FROM term_stats WHERE tenant_id = $1 AND df = 0`
	purgeCorpusSQL    = `WITH gone AS (
			SELECT r.dict_version, count(*) AS n, sum(r.length) AS len
			FROM retrieval_rows r JOIN items i ON i.tenant_id = r.tenant_id AND i.id = r.item_id
			WHERE r.tenant_id = $1 AND i.user_id = $2 GROUP BY r.dict_version)
		UPDATE corpus_stats c SET items = c.items - gone.n, total_length = c.total_length - gone.len FROM gone
		WHERE c.tenant_id = $1 AND c.dict_version = gone.dict_version`
	purgeViewerSQL = `DELETE FROM activations WHERE tenant_id = $1 AND viewer_id = $2`
	purgeReheatSQL = `DELETE FROM reheats WHERE tenant_id = $1 AND viewer_id = $2`
	// The user's chain edges go explicitly, not only by the items' cascade:
	// the report counts them, and an edge of the user naming another
	// owner's item (a chain.owner fault) goes too. The cascade still takes
	// an edge a writer commits while the purge runs. Reply sources likewise
	// go before the messages.
	purgeEdgesSQL   = `DELETE FROM chain_edges WHERE tenant_id = $1 AND user_id = $2`
	purgeSourcesSQL = `DELETE FROM reply_sources s USING messages m
		WHERE s.tenant_id = $1 AND m.tenant_id = $1 AND m.id = s.message_id AND m.user_id = $2`
	// Before the items, whose owner the index names them by.
	purgeInspectionsSQL = `DELETE FROM request_inspections p WHERE p.tenant_id = $1 AND (p.user_id = $2 OR EXISTS (
			SELECT 1 FROM request_inspection_items x JOIN items i ON i.tenant_id = x.tenant_id AND i.id = x.item_id
			WHERE x.tenant_id = $1 AND x.request_id = p.request_id AND i.user_id = $2))`
	purgeItemsSQL    = `DELETE FROM items WHERE tenant_id = $1 AND user_id = $2`
	purgeMessagesSQL = `DELETE FROM messages WHERE tenant_id = $1 AND user_id = $2`
	purgeConvsSQL    = `DELETE FROM conversations WHERE tenant_id = $1 AND user_id = $2`
	purgeLogSQL      = `INSERT INTO tenant_log (tenant_id, seq, kind, user_id) VALUES ($1, $2, 'purge', $3)`
	purgeAuditSQL    = `INSERT INTO audit_log (tenant_id, actor_id, actor_email, action, target, detail, address)
		VALUES ($1, $2, $3, 'memory.purge', $4, $5, $6)`
)

// PurgeUser removes a memory user's whole memory in one transaction: items
// (with their retrieval rows, activations and reheats), their chain graph
// edges and their replies' sources, the request inspector's records that
// show any of it, messages,
// conversations, the user's own activations of others' items, the
// frequency counts they contributed, and the user's binding history (its
// current name is bound again, as the user remains). A purge event in the tenant log makes
// every serving process drop the user's items before its next scan. The
// memory user and its keys remain.
func (db *DB) PurgeUser(ctx context.Context, tenantID, userID int64, by Actor) (PurgeReport, error) {
	var rep PurgeReport
	err := db.InTenant(ctx, tenantID, func(tx pgx.Tx) error {
		rep = PurgeReport{}
		// First: a record quoting the user's memory may be holding it
		// (erasure.go) and wait on the user's row.
		if err := lockErasure(ctx, tx, tenantID); err != nil {
			return err
		}
		var id int64
		if err := tx.QueryRow(ctx, lockUserSQL, tenantID, userID).Scan(&id); err != nil {
			return notFound(err)
		}
		if err := tx.QueryRow(ctx, bumpHeadSQL, tenantID).Scan(&rep.Seq); err != nil {
			return fmt.Errorf("bump tenant head: %w", err)
		}
		// The chain writer's transaction holds this row while its edges'
		// foreign keys lock items: taking it first orders the purge after
		// (or before) a whole write, never interleaved with one, which
		// could deadlock on the user's items.
		if _, err := tx.Exec(ctx, chainEnsureHeadSQL, tenantID); err != nil {
			return fmt.Errorf("lock chain head: %w", err)
		}
		var chainSeq int64
		if err := tx.QueryRow(ctx, chainLockHeadSQL, tenantID).Scan(&chainSeq); err != nil {
			return fmt.Errorf("lock chain head: %w", err)
		}
		// The counts its messages still hold as deltas join the tables
		// first (stats.go), so that they lose what a recount loses.
		if _, err := foldDeltas(ctx, tx, tenantID, foldUserSQL, userID); err != nil {
			return fmt.Errorf("purge statistics: %w", err)
		}
		// After the fold lock, as everywhere. The arena segments encode the
		// user's rows among others' (segment.go).
		if err := dropSegments(ctx, tx, tenantID, 0); err != nil {
			return err
		}
		for _, q := range []string{purgeTermStatsSQL, purgeZeroStatsSQL, purgeCorpusSQL} {
			args := []any{tenantID, userID}
			if q == purgeZeroStatsSQL {
				args = args[:1]
			}
			if _, err := tx.Exec(ctx, q, args...); err != nil {
				return fmt.Errorf("purge statistics: %w", err)
			}
		}
		for _, q := range []string{purgeViewerSQL, purgeReheatSQL} {
			if _, err := tx.Exec(ctx, q, tenantID, userID); err != nil {
				return fmt.Errorf("purge activations: %w", err)
			}
		}
		// Before the conversations, whose removal would take their
		// bindings along uncounted.
		n, err := purgeBindings(ctx, tx, tenantID, userID)
		if err != nil {
			return err
		}
		rep.Bindings = n
		// Edges before the items, so the cascade takes none of them uncounted.
		counts := []*int64{&rep.Edges, nil, &rep.Inspections, &rep.Items, &rep.Messages, &rep.Conversations}
		for i, q := range []string{purgeEdgesSQL, purgeSourcesSQL, purgeInspectionsSQL, purgeItemsSQL, purgeMessagesSQL, purgeConvsSQL} {
			tag, err := tx.Exec(ctx, q, tenantID, userID)
			if err != nil {
				return fmt.Errorf("purge rows: %w", err)
			}
			if counts[i] != nil {
				*counts[i] = tag.RowsAffected()
			}
		}
		if _, err := tx.Exec(ctx, purgeLogSQL, tenantID, rep.Seq, userID); err != nil {
			return fmt.Errorf("purge log: %w", err)
		}
		detail, _ := json.Marshal(rep)
		if _, err := tx.Exec(ctx, purgeAuditSQL, tenantID, by.AccountID, by.Email, fmt.Sprintf("memory_user:%d", userID), detail, by.Address); err != nil {
			return fmt.Errorf("purge audit: %w", err)
		}
		return nil
	})
	if err != nil {
		return PurgeReport{}, fmt.Errorf("purge user %d: %w", userID, err)
	}
	return rep, nil
}
