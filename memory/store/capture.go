package store

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"
)

// RetrievalRow is an item's representation under one dictionary version.
type RetrievalRow struct {
	DictVersion int
	TermIDs     []int32 // distinct, ascending
	Freqs       []int16
	Length      int
	// Dense is the row's raw SIF vector (dict.Vectors.RawDense) under a
	// version with word vectors; nil otherwise.
	Dense []byte
}

// CaptureItem is one chunk of a captured message.
type CaptureItem struct {
	Body       string
	Tokens     []string
	TokenCount int
	Tau        float64
	Novelty    float32
	Rows       []RetrievalRow
}

// Capture is one message to store whole or not at all.
type Capture struct {
	TenantID       int64
	UserID         int64
	ConversationID int64
	Role           string
	Speaker        string
	Position       int
	Fingerprint    []byte
	Interrupted    bool
	CreatedAt      time.Time
	// ClockAdvance is how many model tokens this message moves the user's clock.
	ClockAdvance int
	Items        []CaptureItem
	// Hints are the harness's identity hints, bound to the user and the
	// conversation in this transaction (bindings.go).
	Hints []Hint
	// Sources are the items a reply's request showed the model; kept in
	// reply_sources for the chain writer (only the user's own items).
	Sources []int64
}

// Captured reports what a capture stored.
type Captured struct {
	MessageID int64
	Duplicate bool // the same message was stored before; nothing was written
	Seq       int64
	Clock     int64 // the user's clock after the advance (the items' birth clock)
	ItemIDs   []int64
	// Items are the stored items as a frame renders them (ItemIDs' order).
	Items []ItemText
}

const (
	insertMessageSQL = `INSERT INTO messages
		(tenant_id, user_id, conversation_id, role, speaker, position, fingerprint, interrupted, created_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)
		ON CONFLICT (tenant_id, conversation_id, fingerprint) DO NOTHING
		RETURNING id`
	advanceClockSQL = `UPDATE memory_users SET clock = clock + $3, last_seen_at = now()
		WHERE tenant_id = $1 AND id = $2 RETURNING clock`
	// Taking the head row lock orders this transaction's commit against every
	// other capture, purge and flip of the tenant: the watermark is gap-free.
	bumpHeadSQL = `UPDATE tenant_heads SET seq = seq + 1 WHERE tenant_id = $1 RETURNING seq`
	// The items take the clock and head this transaction has just advanced
	// (and holds locked), read back in the same batch.
	insertItemsSQL = `INSERT INTO items
		(tenant_id, message_id, user_id, conversation_id, role, speaker, part, body, tokens, token_count,
		 born_clock, born_at, tau, novelty, seq)
		SELECT $1, $2, $3, $4, $5, $6, p.part, p.body, ARRAY(SELECT jsonb_array_elements_text(p.tokens)), p.token_count,
		       (SELECT clock FROM memory_users WHERE tenant_id = $1 AND id = $3), $7, p.tau, p.novelty,
		       (SELECT seq FROM tenant_heads WHERE tenant_id = $1)
		FROM unnest($8::int[], $9::text[], $10::jsonb[], $11::int[], $12::float8[], $13::real[])
		     AS p(part, body, tokens, token_count, tau, novelty)
		ORDER BY p.part
		RETURNING id, part, born_at`
	insertRetrievalRowSQL = `INSERT INTO retrieval_rows (tenant_id, dict_version, item_id, term_ids, term_freqs, length, dense)
		VALUES ($1, $2, $3, $4, $5, $6, $7)`
	bumpTermStatsSQL = `INSERT INTO term_stats (tenant_id, dict_version, term_id, df)
		SELECT $1, $2, t.term_id, t.n FROM unnest($3::int[], $4::int[]) AS t(term_id, n) ORDER BY t.term_id
		ON CONFLICT (tenant_id, dict_version, term_id) DO UPDATE SET df = term_stats.df + EXCLUDED.df`
	bumpCorpusSQL = `INSERT INTO corpus_stats (tenant_id, dict_version, items, total_length) VALUES ($1, $2, $3, $4)
		ON CONFLICT (tenant_id, dict_version) DO UPDATE
		SET items = corpus_stats.items + EXCLUDED.items, total_length = corpus_stats.total_length + EXCLUDED.total_length`
	bornHotSQL = `INSERT INTO activations (tenant_id, viewer_id, item_id, t_last, peak, tau, token_count)
		SELECT $1, $2, t.id, $4, $5, t.tau, t.tc FROM unnest($3::bigint[], $6::float8[], $7::int[]) AS t(id, tau, tc)`
)

// BornPeak is the activation every item is born with.
const BornPeak = 1.0

// Capture stores a message in one transaction: its row, its items, their
// retrieval rows, the frequency counts, the born-hot activation and the clock
// advance. A message whose fingerprint the conversation already holds is a
// retry: nothing is written and Duplicate is set.
//
// Capture sits on every turn's path, so the transaction is sent as three
// pipelined batches (message; clock, head and items; rows, counts,
// activation and COMMIT) rather than a round trip per statement: each batch
// needs ids the previous one returned.
func (db *DB) Capture(ctx context.Context, c Capture) (Captured, error) {
	if len(c.Items) == 0 {
		return Captured{}, fmt.Errorf("capture: message has no items")
	}
	conn, err := db.Pool.Acquire(ctx)
	if err != nil {
		return Captured{}, fmt.Errorf("capture: acquire connection: %w", err)
	}
	defer conn.Release()
	out, err := db.capture(ctx, conn.Conn(), c)
	if err != nil {
		if conn.Conn().PgConn().TxStatus() != 'I' {
			if _, rerr := conn.Exec(context.WithoutCancel(ctx), `ROLLBACK`); rerr != nil {
				conn.Conn().PgConn().Close(context.WithoutCancel(ctx)) //nolint:errcheck // the pool drops a closed connection
			}
		}
		return Captured{}, fmt.Errorf("capture: %w", err)
	}
	return out, nil
}

func (db *DB) capture(ctx context.Context, conn *pgx.Conn, c Capture) (Captured, error) {
	var out Captured
	inserted := false
	b := &pgx.Batch{}
	b.Queue(`BEGIN`)
	b.Queue(setTenantSQL, strconv.FormatInt(c.TenantID, 10))
	b.Queue(insertMessageSQL, c.TenantID, c.UserID, c.ConversationID, c.Role, c.Speaker,
		c.Position, c.Fingerprint, c.Interrupted, c.CreatedAt).Query(func(rows pgx.Rows) error {
		_, err := pgx.ForEachRow(rows, []any{&out.MessageID}, func() error { inserted = true; return nil })
		return err
	})
	if err := conn.SendBatch(ctx, b).Close(); err != nil {
		return out, fmt.Errorf("insert message: %w", err)
	}
	if !inserted {
		if _, err := conn.Exec(ctx, `ROLLBACK`); err != nil {
			return out, err
		}
		return Captured{Duplicate: true}, nil
	}
	if db.afterMessage != nil {
		db.afterMessage()
	}

	n := len(c.Items)
	parts, tcs := make([]int32, n), make([]int32, n)
	bodies, toks := make([]string, n), make([][]string, n)
	taus, novs := make([]float64, n), make([]float32, n)
	for i, it := range c.Items {
		parts[i], bodies[i], toks[i], tcs[i], taus[i], novs[i] = int32(i), it.Body, it.Tokens, int32(it.TokenCount), it.Tau, it.Novelty
	}
	b = &pgx.Batch{}
	b.Queue(advanceClockSQL, c.TenantID, c.UserID, c.ClockAdvance).QueryRow(func(r pgx.Row) error {
		if err := r.Scan(&out.Clock); err != nil {
			return fmt.Errorf("advance clock: %w", notFound(err))
		}
		return nil
	})
	b.Queue(bumpHeadSQL, c.TenantID).QueryRow(func(r pgx.Row) error {
		if err := r.Scan(&out.Seq); err != nil {
			return fmt.Errorf("bump tenant head: %w", notFound(err))
		}
		return nil
	})
	// born_at comes back as stored (to the microsecond), as a frame reads it.
	var bornAt time.Time
	b.Queue(insertItemsSQL, c.TenantID, out.MessageID, c.UserID, c.ConversationID, c.Role, c.Speaker,
		c.CreatedAt, parts, bodies, toks, tcs, taus, novs).Query(func(rows pgx.Rows) error {
		var id int64
		var part int32
		if _, err := pgx.ForEachRow(rows, []any{&id, &part, &bornAt}, func() error {
			if int(part) != len(out.ItemIDs) {
				return fmt.Errorf("item of part %d returned in place %d", part, len(out.ItemIDs))
			}
			out.ItemIDs = append(out.ItemIDs, id)
			return nil
		}); err != nil {
			return fmt.Errorf("insert items: %w", err)
		}
		return nil
	})
	if err := conn.SendBatch(ctx, b).Close(); err != nil {
		return out, err
	}

	b = &pgx.Batch{}
	stats := map[int]map[int32]int32{}
	lengths := map[int]int64{}
	for i, it := range c.Items {
		for _, r := range it.Rows {
			b.Queue(insertRetrievalRowSQL, c.TenantID, r.DictVersion, out.ItemIDs[i], r.TermIDs, r.Freqs, r.Length, r.Dense)
			if stats[r.DictVersion] == nil {
				stats[r.DictVersion] = map[int32]int32{}
			}
			for _, t := range r.TermIDs {
				stats[r.DictVersion][t]++
			}
			lengths[r.DictVersion] += int64(r.Length)
		}
	}
	for _, v := range sortedKeys(stats) {
		terms, counts := sortedCounts(stats[v])
		b.Queue(bumpTermStatsSQL, c.TenantID, v, terms, counts)
		b.Queue(bumpCorpusSQL, c.TenantID, v, n, lengths[v])
	}
	b.Queue(bornHotSQL, c.TenantID, c.UserID, out.ItemIDs, out.Clock, BornPeak, taus, tcs)
	queueCaptureBindings(b, c)
	if len(c.Sources) > 0 {
		b.Queue(insertReplySourcesSQL, c.TenantID, out.MessageID, c.Sources, c.UserID)
	}
	b.Queue(`COMMIT`)
	if err := conn.SendBatch(ctx, b).Close(); err != nil {
		return out, fmt.Errorf("store retrieval rows and activation: %w", err)
	}
	out.Items = make([]ItemText, len(out.ItemIDs))
	for i, id := range out.ItemIDs {
		out.Items[i] = ItemText{ID: id, MessageID: out.MessageID, UserID: c.UserID, ConvID: c.ConversationID, Role: c.Role,
			Speaker: c.Speaker, Part: i, Body: c.Items[i].Body, TokenCount: c.Items[i].TokenCount, BornAt: bornAt, Interrupted: c.Interrupted}
	}
	return out, nil
}

func sortedKeys(m map[int]map[int32]int32) []int {
	ks := make([]int, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	sort.Ints(ks)
	return ks
}

// sortedCounts orders term upserts by id so concurrent writers lock term_stats
// rows in one order.
func sortedCounts(m map[int32]int32) (terms, counts []int32) {
	terms = make([]int32, 0, len(m))
	for t := range m {
		terms = append(terms, t)
	}
	sort.Slice(terms, func(i, j int) bool { return terms[i] < terms[j] })
	counts = make([]int32, len(terms))
	for i, t := range terms {
		counts[i] = m[t]
	}
	return terms, counts
}

// Turn is a stored item read back for rendering.
type Turn struct {
	ItemID         int64
	MessageID      int64
	UserID         int64
	ConversationID int64
	Role           string
	Speaker        string
	Part           int
	Body           string
	TokenCount     int
	Interrupted    bool
	BornAt         time.Time
	BornClock      int64
}

const conversationTurnsSQL = `SELECT i.id, i.message_id, i.user_id, i.conversation_id, i.role, i.speaker, i.part, i.body,
		i.token_count, m.interrupted, i.born_at, i.born_clock
	FROM items i JOIN messages m ON m.tenant_id = i.tenant_id AND m.id = i.message_id
	WHERE i.tenant_id = $1 AND i.conversation_id = $2
	ORDER BY i.message_id, i.part`

// ConversationTurns reads every item of a conversation in capture order.
func (db *DB) ConversationTurns(ctx context.Context, tenantID, conversationID int64) ([]Turn, error) {
	var out []Turn
	err := db.InTenant(ctx, tenantID, func(tx pgx.Tx) error {
		rows, err := tx.Query(ctx, conversationTurnsSQL, tenantID, conversationID)
		if err != nil {
			return err
		}
		out, err = pgx.CollectRows(rows, pgx.RowToStructByPos[Turn])
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("conversation turns: %w", err)
	}
	return out, nil
}
