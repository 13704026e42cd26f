package store

import (
	"context"
	"fmt"
	"slices"
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
	// Fingerprint is memory.Fingerprint of the role, Position and text; for
	// an Appended message, memory.AppendedDigest of the role and text.
	Fingerprint []byte
	// Appended places the message after the conversation's newest one
	// instead of at Position: the request sent no history before it (a
	// client sending only its newest message, a Responses request on a
	// stored conversation), so every message of such a client would
	// stand at one index and a repeated "yes" would be taken for a retry.
	// It is one only when it repeats one of the conversation's newest
	// messages of its role (insertAppendedMessageSQL) and no complete
	// answer was stored after that (the first attempt's reply did not come
	// back), or when the request sends an exchange after it (a tool loop's
	// next round). SentAfter moves with the position chosen.
	Appended    bool
	Interrupted bool
	CreatedAt   time.Time
	// ClockAdvance is how many model tokens this message moves the user's clock.
	ClockAdvance int
	Items        []CaptureItem
	// Hints are the harness's identity hints, bound to the user and the
	// conversation in this transaction (bindings.go).
	Hints []Hint
	// Sources are the items a reply's request showed the model; kept in
	// reply_sources for the chain writer (only the user's own items).
	Sources []int64
	// SentAfter is where the request's messages after this one end
	// (exclusive; 0: none follow): a harness's tool loop sends the
	// question again with the exchange so far after it. A capture that
	// finds the message stored reports the turns stored from those
	// positions since (Captured.SentAfter).
	SentAfter int
	// Stored, when set, is called once every statement has succeeded,
	// before COMMIT is sent, with what Capture returns if the commit
	// succeeds: work that needs the stored ids, not their durability (a
	// frame built beside the capture), goes on while the commit flushes.
	// Nothing may leave the process on it alone: the commit can still fail.
	// It must return at once: the transaction, and its locks, wait on it.
	// A capture with Stored set commits apart, as CommitApart says.
	Stored func(Captured)
	// Sending, when set, is called once, just before the capture's
	// statements are sent, from the goroutine that sends them: a frame
	// built beside the capture holds its scan until then, as the scan's
	// workers take every core and would keep the capture from starting.
	Sending func()
	// CommitApart sends COMMIT as a round trip of its own, once every
	// statement was seen to succeed, for a capture whose failure refuses
	// its request (the live question: a 503, nothing forwarded), or whose
	// count is charged (an import line): a process killed, or a context
	// ended, while it waits for a lock leaves nothing behind the caller's
	// back (only one whose COMMIT was already sent may commit unseen).
	// Other captures (a reply already answered) queue COMMIT with their
	// statements: one round trip less while the tenant's head is locked,
	// and a capture whose batch reached the database is stored even if the
	// process dies before the answer (unless the statements' results,
	// hundreds of items' ids, fill the server's output buffer first: it
	// then finds the client gone and rolls back).
	CommitApart bool
}

// Captured reports what a capture stored.
type Captured struct {
	MessageID int64
	Duplicate bool // the same message was stored before; nothing was written
	// Position is where the message stands in its conversation: the
	// capture's, or for an appended one the place chosen (or found, for a
	// duplicate).
	Position int
	Seq      int64
	Clock    int64 // the user's clock after the advance (the items' birth clock)
	// ItemIDs are the message's items: stored now, or by the capture
	// that stored it first (a duplicate).
	ItemIDs []int64
	// Items are the stored items as a frame renders them (ItemIDs' order);
	// none for a duplicate.
	Items []ItemText
	// SentAfter are, for a duplicate, the items of the turns stored since
	// from the positions the request sends after the message
	// (Capture.SentAfter): the request holds them verbatim, so the frame
	// does not quote them.
	SentAfter []int64
	// Erased is, for a duplicate, the tenant log position of its latest
	// purge or redaction, whichever process made it: what was read of
	// memory at an earlier position may hold what it removed.
	Erased int64
}

// capturedSQL is the message this transaction's capture inserted, NULL
// when the conversation held it already (a retry). A capture is one
// pipelined batch, so the statements after the message cannot wait for its
// id: they read it here, and write nothing when it is NULL.
const capturedSQL = `NULLIF(current_setting('app.captured_message', true), '')::bigint`

const (
	insertMessageSQL = `WITH m AS (INSERT INTO messages
			(tenant_id, user_id, conversation_id, role, speaker, position, fingerprint, interrupted, created_at)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)
			ON CONFLICT (tenant_id, conversation_id, fingerprint) DO NOTHING
			RETURNING id)
		SELECT id, $6::int, $7::bytea, set_config('app.captured_message', id::text, true) FROM m`
	// An appended message (Capture.Appended) takes the position after the
	// conversation's newest message, its fingerprint made of that position
	// and the digest $6 as memory.Fingerprint makes one of its arguments,
	// unless it repeats one of the conversation's newest messages of its
	// role (u: the newest such, among as many as appendedRecent) and either
	// the request sends an exchange after it ($7: a tool loop's round,
	// while parallel sub-agents of one session add their own questions) or
	// no complete answer was stored after it: then it takes that one's
	// position, and the fingerprint finds it stored. The row comes back
	// either way, with the position and the fingerprint made there; its id
	// is NULL when nothing was inserted. A reply takes the position after its question's when it is
	// captured, after its response, so a question placed meanwhile may
	// share that position: only a reply at a later position answers a
	// question.
	insertAppendedMessageSQL = `WITH u AS (
			SELECT r.id, r.position FROM (
				SELECT id, position, fingerprint FROM messages
				WHERE tenant_id = $1 AND conversation_id = $3 AND role = $4
				ORDER BY position DESC, id DESC LIMIT ` + appendedRecent + `) AS r
			WHERE r.fingerprint = sha256($6 || int8send(r.position))
			ORDER BY r.position DESC, r.id DESC LIMIT 1),
		d AS (
			SELECT p.position, sha256($6 || int8send(p.position)) AS fingerprint FROM (
			SELECT CASE WHEN u.id IS NOT NULL AND ($7 OR NOT EXISTS (
					SELECT 1 FROM messages a
					WHERE a.tenant_id = $1 AND a.conversation_id = $3 AND a.role <> $4 AND NOT a.interrupted
						AND a.position > u.position))
				THEN u.position
				ELSE coalesce(greatest(
					(SELECT max(position) FROM messages WHERE tenant_id = $1 AND conversation_id = $3 AND role = 'user'),
					(SELECT max(position) FROM messages WHERE tenant_id = $1 AND conversation_id = $3 AND role = 'assistant')) + 1, 0)
				END AS position
			FROM (VALUES (1)) AS one LEFT JOIN u ON true) AS p),
		m AS (INSERT INTO messages
			(tenant_id, user_id, conversation_id, role, speaker, position, fingerprint, interrupted, created_at)
			SELECT $1, $2, $3, $4, $5, d.position, d.fingerprint, $8, $9 FROM d
			ON CONFLICT (tenant_id, conversation_id, fingerprint) DO NOTHING
			RETURNING id)
		SELECT m.id, d.position, d.fingerprint, set_config('app.captured_message', coalesce(m.id::text, ''), true) FROM d LEFT JOIN m ON true`
	// appendedRecent is how many of a conversation's newest questions an
	// appended one is matched against: more than the sub-agents a harness
	// runs at once in one session.
	appendedRecent  = "16"
	advanceClockSQL = `UPDATE memory_users SET clock = clock + $3, last_seen_at = now()
		WHERE tenant_id = $1 AND id = $2 AND ` + capturedSQL + ` IS NOT NULL RETURNING clock`
	// Taking the head row lock orders this transaction's commit against every
	// other capture, purge and flip of the tenant: the watermark is gap-free.
	bumpHeadSQL    = `UPDATE tenant_heads SET seq = seq + 1 WHERE tenant_id = $1 RETURNING seq`
	captureHeadSQL = `UPDATE tenant_heads SET seq = seq + 1 WHERE tenant_id = $1 AND ` + capturedSQL + ` IS NOT NULL RETURNING seq`
	// After the head: the statement reads the tenant's versions once the
	// capture holds the head row lock, under which alone they change (a
	// derivation's start, a flip, a retirement), so they stay so until
	// commit. A version the capture's rows miss fails the transaction
	// (dict_version_missing, migration 000022); $2 is the versions every
	// item with rows has one for.
	checkVersionsSQL = `SELECT dict_version_missing($1, k.v) FROM (
			SELECT dict_version FROM tenant_heads WHERE tenant_id = $1
			UNION SELECT dict_version FROM dict_rollouts WHERE tenant_id = $1) AS k(v)
		WHERE ` + capturedSQL + ` IS NOT NULL AND k.v <> ALL ($2::int[])
		ORDER BY k.v LIMIT 1`
	// The items take the clock and head this transaction has just advanced
	// (and holds locked), read back in the same batch. The tokens of the
	// statement's items come as one array, item i's ending at $11[i]: a
	// text[] needs no conversion, where one array per item would have to
	// travel as JSON.
	insertItemsSQL = `INSERT INTO items
		(tenant_id, message_id, user_id, conversation_id, role, speaker, part, body, tokens, token_count,
		 born_clock, born_at, tau, novelty, seq, interrupted)
		SELECT $1, ` + capturedSQL + `, $2, $3, $4, $5, p.part, p.body, ($9::text[])[p.tok_from + 1:p.tok_to], p.token_count,
		       (SELECT clock FROM memory_users WHERE tenant_id = $1 AND id = $2), $6, p.tau, p.novelty,
		       (SELECT seq FROM tenant_heads WHERE tenant_id = $1), $15
		FROM unnest($7::int[], $8::text[], $10::int[], $11::int[], $12::int[], $13::float8[], $14::real[])
		     AS p(part, body, tok_from, tok_to, token_count, tau, novelty)
		WHERE ` + capturedSQL + ` IS NOT NULL
		ORDER BY p.part
		RETURNING id, part, born_at`
	// A slice of a text[] walks the array from its start: a long message's
	// items go in statements of at most itemsPerStatement, each with its
	// own tokens, or their cost would grow as the square of the message's
	// length (5 MB of text, 2627 items: 5.5 s of a 5.5 s capture).
	itemsPerStatement = 16
	// The rest find the message's items by their part (its unique key).
	insertRetrievalRowSQL = `INSERT INTO retrieval_rows (tenant_id, dict_version, item_id, term_ids, term_freqs, length, dense)
		SELECT $1, $2, i.id, $4, $5, $6, $7 FROM items i
		WHERE i.tenant_id = $1 AND i.message_id = ` + capturedSQL + ` AND i.part = $3`
	bumpTermStatsSQL = `INSERT INTO term_stats (tenant_id, dict_version, term_id, df)
		SELECT $1, $2, t.term_id, t.n FROM unnest($3::int[], $4::int[]) AS t(term_id, n) ORDER BY t.term_id
		ON CONFLICT (tenant_id, dict_version, term_id) DO UPDATE SET df = term_stats.df + EXCLUDED.df`
	bumpCorpusSQL = `INSERT INTO corpus_stats (tenant_id, dict_version, items, total_length) VALUES ($1, $2, $3, $4)
		ON CONFLICT (tenant_id, dict_version) DO UPDATE
		SET items = corpus_stats.items + EXCLUDED.items, total_length = corpus_stats.total_length + EXCLUDED.total_length`
	// The message's frequency counts under one version, one row (stats.go).
	captureDeltaSQL = `INSERT INTO stat_deltas (tenant_id, message_id, dict_version, items, total_length, term_ids, dfs)
		SELECT $1, ` + capturedSQL + `, $2, $3, $4, $5, $6 WHERE ` + capturedSQL + ` IS NOT NULL`
	// Born hot: at the items' birth clock, with their decay and token count.
	bornHotSQL = `INSERT INTO activations (tenant_id, viewer_id, item_id, t_last, peak, tau, token_count)
		SELECT $1, $2, i.id, i.born_clock, $3, i.tau, i.token_count FROM items i
		WHERE i.tenant_id = $1 AND i.message_id = ` + capturedSQL + ` ORDER BY i.part`
)

// BornPeak is the activation every item is born with.
const BornPeak = 1.0

// Capture stores a message in one transaction: its row, its items, their
// retrieval rows, the frequency counts, the born-hot activation and the clock
// advance. A message whose fingerprint the conversation already holds is a
// retry: nothing is written and Duplicate is set.
//
// Capture sits on every turn's path, so every statement of the
// transaction goes out as one pipelined batch, one round trip, with COMMIT
// queued after them: the statements take the ids they need from the ones
// before them in the database (capturedSQL, the items by part), not from
// the client, and a failing one skips the rest, COMMIT too. A capture that
// commits apart (Capture.CommitApart, Stored) sends COMMIT as a second
// round trip once they all succeeded: only a client that saw every
// statement succeed commits it, where a queued COMMIT commits once a lock
// the capture waits for comes free, whatever became of the client.
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
	// open: a transaction is left for the second round trip to commit.
	open := c.CommitApart || c.Stored != nil || db.afterMessage != nil
	b := &pgx.Batch{}
	b.Queue(`BEGIN`)
	b.Queue(setTenantGenericSQL, strconv.FormatInt(c.TenantID, 10))
	var msg *pgx.QueuedQuery
	if c.Appended {
		msg = b.Queue(insertAppendedMessageSQL, c.TenantID, c.UserID, c.ConversationID, c.Role, c.Speaker,
			c.Fingerprint, c.SentAfter > 0, c.Interrupted, c.CreatedAt)
	} else {
		msg = b.Queue(insertMessageSQL, c.TenantID, c.UserID, c.ConversationID, c.Role, c.Speaker,
			c.Position, c.Fingerprint, c.Interrupted, c.CreatedAt)
	}
	// A duplicate is read back by where the message was found, which an
	// appended one learns from the statement.
	at := c
	msg.Query(func(rows pgx.Rows) error {
		var id *int64
		var pos int32
		var set string
		_, err := pgx.ForEachRow(rows, []any{&id, &pos, &at.Fingerprint, &set}, func() error {
			inserted, at.Position = id != nil, int(pos)
			if id != nil {
				out.MessageID = *id
			}
			return nil
		})
		return err
	})
	if db.afterMessage != nil {
		// Tests pause here, holding a message id and no head position.
		sending(&c)
		if err := conn.SendBatch(ctx, b).Close(); err != nil {
			return out, fmt.Errorf("insert message: %w", err)
		}
		db.afterMessage()
		b = &pgx.Batch{}
	}

	n := len(c.Items)
	// A missing user or head leaves the items' clock or seq NULL, which
	// fails the transaction in the database too.
	b.Queue(advanceClockSQL, c.TenantID, c.UserID, c.ClockAdvance).Query(func(rows pgx.Rows) error {
		clocked := false
		_, err := pgx.ForEachRow(rows, []any{&out.Clock}, func() error { clocked = true; return nil })
		if err == nil && inserted && !clocked {
			err = fmt.Errorf("advance clock: %w", ErrNotFound)
		}
		return err
	})
	b.Queue(captureHeadSQL, c.TenantID).Query(func(rows pgx.Rows) error {
		headed := false
		_, err := pgx.ForEachRow(rows, []any{&out.Seq}, func() error { headed = true; return nil })
		if err == nil && inserted && !headed {
			err = fmt.Errorf("bump tenant head: %w", ErrNotFound)
		}
		return err
	})
	if vs := coveredVersions(c.Items); vs != nil {
		b.Queue(checkVersionsSQL, c.TenantID, vs)
	}
	// born_at comes back as stored (to the microsecond), as a frame reads it.
	var bornAt time.Time
	ids := make([]int64, n)
	for from := 0; from < n; from += itemsPerStatement {
		queueItems(b, c, from, min(n, from+itemsPerStatement), ids, &bornAt)
	}
	stats := map[int]map[int32]int32{}
	items, lengths := map[int]int{}, map[int]int64{}
	for i, it := range c.Items {
		for _, r := range it.Rows {
			b.Queue(insertRetrievalRowSQL, c.TenantID, r.DictVersion, i, r.TermIDs, r.Freqs, r.Length, r.Dense)
			if stats[r.DictVersion] == nil {
				stats[r.DictVersion] = map[int32]int32{}
			}
			for _, t := range r.TermIDs {
				stats[r.DictVersion][t]++
			}
			items[r.DictVersion]++
			lengths[r.DictVersion] += int64(r.Length)
		}
	}
	for _, v := range sortedKeys(stats) {
		terms, counts := sortedCounts(stats[v])
		b.Queue(captureDeltaSQL, c.TenantID, v, items[v], lengths[v], terms, counts)
	}
	b.Queue(bornHotSQL, c.TenantID, c.UserID, BornPeak)
	queueCaptureBindings(b, c)
	if len(c.Sources) > 0 {
		b.Queue(insertReplySourcesSQL, c.TenantID, c.Sources, c.UserID)
	}
	if !open {
		b.Queue(`COMMIT`)
	}
	sending(&c)
	if err := conn.SendBatch(ctx, b).Close(); err != nil {
		if !open && conn.PgConn().IsClosed() {
			// The connection went (a context ended, the database went
			// away) with the COMMIT sent: the database may have run it.
			err = fmt.Errorf("%w (the connection closed after its COMMIT was sent: the message may be stored)", err)
		}
		return out, err
	}
	out.Position = at.Position
	if !inserted {
		// Nothing was written; what was stored before is read under the
		// tenant setting (storedBefore).
		if c.Appended && at.SentAfter > 0 {
			// The exchange the request sends after the message moves
			// with it.
			at.SentAfter += at.Position - c.Position
		}
		var err error
		if out, err = storedBefore(ctx, conn, at, open); err != nil {
			return Captured{}, err
		}
	} else {
		out.ItemIDs = ids
		out.Items = make([]ItemText, len(out.ItemIDs))
		for i, id := range out.ItemIDs {
			out.Items[i] = ItemText{ID: id, MessageID: out.MessageID, UserID: c.UserID, ConvID: c.ConversationID, Role: c.Role,
				Speaker: c.Speaker, Part: i, Body: c.Items[i].Body, TokenCount: c.Items[i].TokenCount, BornAt: bornAt, Interrupted: c.Interrupted}
		}
	}
	if c.Stored != nil {
		c.Stored(out)
	}
	if open {
		if _, err := conn.Exec(ctx, `COMMIT`); err != nil {
			return Captured{}, fmt.Errorf("commit: %w", err)
		}
	}
	return out, nil
}

// sending calls c.Sending, once.
func sending(c *Capture) {
	if c.Sending != nil {
		c.Sending()
		c.Sending = nil
	}
}

// queueItems adds the statement storing items [from, to) of c, each with
// its own tokens, which put their ids in ids and their birth in bornAt.
func queueItems(b *pgx.Batch, c Capture, from, to int, ids []int64, bornAt *time.Time) {
	k := to - from
	parts, tcs := make([]int32, k), make([]int32, k)
	bodies, tokFrom, tokTo := make([]string, k), make([]int32, k), make([]int32, k)
	taus, novs := make([]float64, k), make([]float32, k)
	toks := []string{} // never NULL: an item without tokens stores {}
	for i, it := range c.Items[from:to] {
		tokFrom[i] = int32(len(toks))
		toks = append(toks, it.Tokens...)
		parts[i], bodies[i], tokTo[i], tcs[i], taus[i], novs[i] = int32(from+i), it.Body, int32(len(toks)), int32(it.TokenCount), it.Tau, it.Novelty
	}
	b.Queue(insertItemsSQL, c.TenantID, c.UserID, c.ConversationID, c.Role, c.Speaker,
		c.CreatedAt, parts, bodies, toks, tokFrom, tokTo, tcs, taus, novs, c.Interrupted).Query(func(rows pgx.Rows) error {
		var id int64
		var part int32
		if _, err := pgx.ForEachRow(rows, []any{&id, &part, bornAt}, func() error {
			if part < int32(from) || part >= int32(to) {
				return fmt.Errorf("item of part %d returned for parts %d to %d", part, from, to-1)
			}
			ids[part] = id
			return nil
		}); err != nil {
			return fmt.Errorf("insert items: %w", err)
		}
		return nil
	})
}

// coveredVersions are the versions every item with rows has a row for,
// ascending; nil when no item has one (left to the integrity check).
func coveredVersions(items []CaptureItem) []int32 {
	var out []int32
	seen := false
	for _, it := range items {
		if len(it.Rows) == 0 {
			continue
		}
		have := make([]int32, 0, len(it.Rows))
		for _, r := range it.Rows {
			if !seen || slices.Contains(out, int32(r.DictVersion)) {
				have = append(have, int32(r.DictVersion))
			}
		}
		out, seen = have, true
	}
	slices.Sort(out)
	return slices.Compact(out)
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
		i.token_count, i.interrupted, i.born_at, i.born_clock
	FROM items i
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
