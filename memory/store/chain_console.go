package store

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"
)

// ChainNeighbour is a neighbour of one item in the chain graph with what
// the console shows of it: a page lists many items' neighbours at once, so
// they are read together, never one query per item.
type ChainNeighbour struct {
	Of int64 // the item whose neighbour this is
	ChainLink
	// Total is how many neighbours Of has in this relation and direction,
	// listed or not.
	Total          int
	ConversationID int64
	Conversation   string // title, or the conversation key
	Role           string
	BornAt         time.Time
	Snippet        string // the start of the neighbour's text
}

// Both directions of every edge touching the items, ranked within each
// (item, relation, direction) so that a heavy thread cannot crowd out the
// evidence. The owner is in every condition: an edge never joins two users,
// and a console page names whose memory it shows.
const chainNeighboursSQL = `
WITH l AS (
	SELECT src_id AS of, dst_id AS nb, relation, false AS later, weight FROM chain_edges
	WHERE tenant_id = $1 AND user_id = $2 AND src_id = ANY($3)
	UNION ALL
	SELECT dst_id, src_id, relation, true, weight FROM chain_edges
	WHERE tenant_id = $1 AND user_id = $2 AND dst_id = ANY($3)
), r AS (
	SELECT l.*, row_number() OVER w AS n, count(*) OVER (PARTITION BY of, relation, later) AS total
	FROM l WINDOW w AS (PARTITION BY of, relation, later ORDER BY weight DESC, nb DESC)
)
SELECT r.of, r.nb, r.relation, r.later, r.weight, r.total, i.conversation_id,
	coalesce(nullif(c.title, ''), c.ext_key), i.role, i.born_at, left(i.body, $5)
FROM r
JOIN items i ON i.tenant_id = $1 AND i.id = r.nb AND i.user_id = $2
JOIN conversations c ON c.tenant_id = $1 AND c.id = i.conversation_id
WHERE r.n <= $4
ORDER BY r.of, r.relation DESC, r.later, r.weight DESC, r.nb DESC`

// ChainNeighboursOf reads the chain neighbours of several owners' items
// (owners: user id to that user's item ids) in one round trip, at most per
// of each relation and direction per item, heaviest first, each with the
// first snippet characters of its text. A statement per owner, since an
// edge never joins two users; items of another user or tenant have none.
func (db *DB) ChainNeighboursOf(ctx context.Context, tenantID int64, owners map[int64][]int64, per, snippet int) ([]ChainNeighbour, error) {
	users := make([]int64, 0, len(owners))
	for u, ids := range owners {
		if len(ids) > 0 {
			users = append(users, u)
		}
	}
	if len(users) == 0 {
		return nil, nil
	}
	slices.Sort(users)
	var out []ChainNeighbour
	err := db.pipelineRead(ctx, tenantID, false, func(b *pgx.Batch) {
		for _, u := range users {
			b.Queue(chainNeighboursSQL, tenantID, u, owners[u], per, snippet).Query(func(rows pgx.Rows) error {
				ns, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (ChainNeighbour, error) {
					var n ChainNeighbour
					err := r.Scan(&n.Of, &n.ItemID, &n.Relation, &n.Later, &n.Weight, &n.Total, &n.ConversationID,
						&n.Conversation, &n.Role, &n.BornAt, &n.Snippet)
					return n, err
				})
				out = append(out, ns...)
				return err
			})
		}
	})
	if err != nil {
		return nil, fmt.Errorf("chain neighbours of the items of %d users: %w", len(users), err)
	}
	return out, nil
}
