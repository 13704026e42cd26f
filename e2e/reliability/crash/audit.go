package crash

import (
	"context"
	"fmt"
	"regexp"
	"strconv"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/perpetuity/perpetuity/e2e/rig"
)

// Ledger collects the turns of a run from concurrent clients.
type Ledger struct {
	mu    sync.Mutex
	turns []*Turn
}

// Add records a finished turn.
func (l *Ledger) Add(t *Turn) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.turns = append(l.turns, t)
}

// Turns is every turn recorded so far.
func (l *Ledger) Turns() []*Turn {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]*Turn(nil), l.turns...)
}

// Audit is what the clients were told, held against what the database
// stores.
type Audit struct {
	Sent, Acked int
	// Missing are acknowledged turns whose user message is not stored: a
	// lost acknowledged turn.
	Missing []*Turn
	// StoredUnacked: the user message is stored but the client got no
	// acknowledgement (the process or the database died after the capture
	// committed).
	StoredUnacked int
	// LostUnacked: neither stored nor acknowledged (died before the
	// capture committed, or the request never got in).
	LostUnacked int
	// RepliesStored counts acknowledged turns whose whole reply is stored;
	// RepliesPartial those whose reply is stored cut short (interrupted).
	RepliesStored, RepliesPartial int
	// CutReplies describes a few of the RepliesPartial, as stored.
	CutReplies []string
	// Duplicates: a turn's user message stored more than once. Unknown:
	// stored user messages no client sent. Misanswered: complete replies to
	// another turn's question. All must be 0.
	Duplicates, Unknown, Misanswered int
}

// AuditTurns reads the tenant's stored messages and classifies turns.
func AuditTurns(ctx context.Context, dbURL string, tenantID int64, turns []*Turn) (Audit, error) {
	msgs, err := rig.Stored(ctx, dbURL, tenantID)
	if err != nil {
		return Audit{}, fmt.Errorf("stored messages: %w", err)
	}
	users := map[string]int{}
	replies := map[string]bool{}    // marker -> stored whole
	cut := map[string]rig.Message{} // marker -> a stored reply that is not whole
	for _, m := range msgs {
		switch m.Role {
		case "user":
			users[m.Text]++
		case "assistant":
			if ms := markerRE.FindString(m.Text); ms != "" {
				whole := m.Text == ReplyText(ms) && !m.Interrupted
				replies[ms] = replies[ms] || whole
				if !whole {
					cut[ms] = m
				}
			}
		}
	}
	var a Audit
	sent := map[string]bool{}
	for _, t := range turns {
		a.Sent++
		sent[t.Text] = true
		if t.Misanswered {
			a.Misanswered++
		}
		n := users[t.Text]
		if n > 1 {
			a.Duplicates++
		}
		switch {
		case t.Acked && n == 0:
			a.Missing = append(a.Missing, t)
		case t.Acked:
		case n > 0:
			a.StoredUnacked++
		default:
			a.LostUnacked++
		}
		if !t.Acked {
			continue
		}
		a.Acked++
		if complete, ok := replies[t.Marker]; ok && complete {
			a.RepliesStored++
		} else if ok {
			a.RepliesPartial++
			if m := cut[t.Marker]; len(a.CutReplies) < 5 {
				a.CutReplies = append(a.CutReplies, fmt.Sprintf("%s turn: stored %q interrupted=%v", t.Kind, m.Text, m.Interrupted))
			}
		}
	}
	for text := range users {
		if !sent[text] {
			a.Unknown++
		}
	}
	return a, nil
}

// Partial counts half-stored state of one tenant, straight from the rows,
// in one snapshot: a message is stored whole (items with contiguous parts,
// each with its retrieval row for every dictionary version the tenant
// serves, its owner's birth activation and its birth record) and the
// frequency counts equal a recount of the rows.
type Partial struct {
	Messages, Items int64
	Versions        []int
	NoItems         int64 // messages without items
	GappedParts     int64 // messages whose parts are not 0..n-1
	NoRow           int64 // (item, served version) pairs without a retrieval row
	NoActivation    int64 // items without their owner's activation
	NoBirth         int64 // items without an item_births row
	TermStats       int64 // (version, term) whose df differs from a recount
	CorpusStats     int64 // versions whose corpus_stats differ from a recount
}

// Total is the number of violations.
func (p Partial) Total() int64 {
	return p.NoItems + p.GappedParts + p.NoRow + p.NoActivation + p.NoBirth + p.TermStats + p.CorpusStats
}

func (p Partial) String() string {
	return fmt.Sprintf("%d messages, %d items, versions %v: %d without items, %d with gapped parts, %d missing rows, "+
		"%d missing activations, %d missing birth records, %d term counts and %d corpus counts off",
		p.Messages, p.Items, p.Versions, p.NoItems, p.GappedParts, p.NoRow, p.NoActivation, p.NoBirth, p.TermStats, p.CorpusStats)
}

const (
	servedVersionsSQL = `SELECT dict_version FROM tenant_heads WHERE tenant_id = $1
		UNION SELECT dict_version FROM dict_rollouts WHERE tenant_id = $1 ORDER BY 1`
	countMessagesSQL = `SELECT count(*) FROM messages WHERE tenant_id = $1`
	countItemsSQL    = `SELECT count(*) FROM items WHERE tenant_id = $1`
	noItemsSQL       = `SELECT count(*) FROM messages m WHERE m.tenant_id = $1
		AND NOT EXISTS (SELECT 1 FROM items i WHERE i.tenant_id = m.tenant_id AND i.message_id = m.id)`
	gappedPartsSQL = `SELECT count(*) FROM (SELECT message_id FROM items WHERE tenant_id = $1
		GROUP BY message_id HAVING min(part) <> 0 OR max(part) <> count(*) - 1) g`
	noRowSQL = `SELECT count(*) FROM items i CROSS JOIN unnest($2::int[]) AS v(version)
		WHERE i.tenant_id = $1 AND NOT EXISTS (SELECT 1 FROM retrieval_rows r
			WHERE r.tenant_id = i.tenant_id AND r.dict_version = v.version AND r.item_id = i.id)`
	noActivationSQL = `SELECT count(*) FROM items i WHERE i.tenant_id = $1
		AND NOT EXISTS (SELECT 1 FROM activations a WHERE a.tenant_id = i.tenant_id AND a.viewer_id = i.user_id AND a.item_id = i.id)`
	noBirthSQL = `SELECT count(*) FROM items i WHERE i.tenant_id = $1
		AND NOT EXISTS (SELECT 1 FROM item_births b WHERE b.tenant_id = i.tenant_id AND b.item_id = i.id)`
	termStatsSQL = `WITH rc AS (SELECT r.dict_version, t.term_id, count(*) AS n
			FROM retrieval_rows r, unnest(r.term_ids) AS t(term_id) WHERE r.tenant_id = $1 GROUP BY 1, 2),
		st AS (SELECT dict_version, term_id, sum(df) AS df FROM (
			SELECT dict_version, term_id, df FROM term_stats WHERE tenant_id = $1
			UNION ALL
			SELECT d.dict_version, t.term_id, t.df FROM stat_deltas d, unnest(d.term_ids, d.dfs) AS t(term_id, df)
			WHERE d.tenant_id = $1) s GROUP BY 1, 2)
		SELECT count(*) FROM rc FULL JOIN st USING (dict_version, term_id) WHERE coalesce(rc.n, 0) <> coalesce(st.df, 0)`
	corpusStatsSQL = `WITH rc AS (SELECT dict_version, count(*) AS n, sum(length) AS len
			FROM retrieval_rows WHERE tenant_id = $1 GROUP BY 1),
		st AS (SELECT dict_version, sum(items) AS items, sum(total_length) AS total_length FROM (
			SELECT dict_version, items, total_length FROM corpus_stats WHERE tenant_id = $1
			UNION ALL
			SELECT dict_version, items, total_length FROM stat_deltas WHERE tenant_id = $1) s GROUP BY 1)
		SELECT count(*) FROM rc FULL JOIN st USING (dict_version)
		WHERE coalesce(rc.n, 0) <> coalesce(st.items, 0) OR coalesce(rc.len, 0) <> coalesce(st.total_length, 0)`
)

// CheckPartial counts half-stored state of the tenant. It connects as the
// test's (owner) role, outside the application's.
func CheckPartial(ctx context.Context, dbURL string, tenantID int64) (Partial, error) {
	conn, err := pgx.Connect(ctx, dbURL)
	if err != nil {
		return Partial{}, err
	}
	defer conn.Close(ctx)
	var p Partial
	err = pgx.BeginTxFunc(ctx, conn, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly}, func(tx pgx.Tx) error {
		rows, err := tx.Query(ctx, servedVersionsSQL, tenantID)
		if err != nil {
			return err
		}
		if p.Versions, err = pgx.CollectRows(rows, pgx.RowTo[int]); err != nil {
			return err
		}
		for _, q := range []struct {
			name string
			sql  string
			dst  *int64
			args []any
		}{
			{"messages", countMessagesSQL, &p.Messages, nil},
			{"items", countItemsSQL, &p.Items, nil},
			{"messages without items", noItemsSQL, &p.NoItems, nil},
			{"gapped parts", gappedPartsSQL, &p.GappedParts, nil},
			{"missing rows", noRowSQL, &p.NoRow, []any{p.Versions}},
			{"missing activations", noActivationSQL, &p.NoActivation, nil},
			{"missing births", noBirthSQL, &p.NoBirth, nil},
			{"term stats", termStatsSQL, &p.TermStats, nil},
			{"corpus stats", corpusStatsSQL, &p.CorpusStats, nil},
		} {
			if err := tx.QueryRow(ctx, q.sql, append([]any{tenantID}, q.args...)...).Scan(q.dst); err != nil {
				return fmt.Errorf("partial check, %s: %w", q.name, err)
			}
		}
		return nil
	})
	return p, err
}

var integrityLine = regexp.MustCompile(`(?m)^tenant (\d+) .*: (\d+) items.*: (OK|(\d+) violations)`)

// Integrity runs `perpetuity integrity --tenant ID` (every invariant of
// DESIGN §8, against a freshly loaded arena) and returns the items it
// checked and the violations it found; out is its whole output.
func Integrity(t testing.TB, env []string, tenantID int64) (items, violations int64, out string, err error) {
	t.Helper()
	out, runErr := rig.CLI(t, env, "integrity", "--tenant", strconv.FormatInt(tenantID, 10))
	m := integrityLine.FindStringSubmatch(out)
	if m == nil || m[1] != strconv.FormatInt(tenantID, 10) {
		return 0, 0, out, fmt.Errorf("integrity: unexpected output (%v):\n%s", runErr, out)
	}
	items, _ = strconv.ParseInt(m[2], 10, 64)
	if m[3] != "OK" {
		violations, _ = strconv.ParseInt(m[4], 10, 64)
	}
	if (violations == 0) != (runErr == nil) {
		return items, violations, out, fmt.Errorf("integrity: exit %v disagrees with %d violations:\n%s", runErr, violations, out)
	}
	return items, violations, out, nil
}
