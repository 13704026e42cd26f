package store

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/perpetuity/perpetuity/memory/dict"
)

// The integrity check (DESIGN §8) recomputes the invariants from the rows
// themselves. The store reads; the judging is memory/ops's.

// IntegrityReader reads one tenant inside one repeatable-read snapshot, so
// every invariant is checked against the same state.
type IntegrityReader struct {
	tx       pgx.Tx
	tenantID int64
}

// ReadIntegrity runs fn with a reader over one snapshot of the tenant.
func (db *DB) ReadIntegrity(ctx context.Context, tenantID int64, fn func(r *IntegrityReader) error) error {
	return db.InTenantRead(ctx, tenantID, func(tx pgx.Tx) error {
		return fn(&IntegrityReader{tx: tx, tenantID: tenantID})
	})
}

// Head is the tenant's head in the snapshot.
func (r *IntegrityReader) Head(ctx context.Context) (Head, error) {
	var h Head
	err := r.tx.QueryRow(ctx, headSQL, r.tenantID).Scan(&h.Seq, &h.DictVersion)
	return h, notFound(err)
}

// Dictionary loads a dictionary version through the snapshot's own
// connection: a reader that asked the pool for a second one while holding
// the first could wait forever once concurrent checks hold every
// connection.
func (r *IntegrityReader) Dictionary(ctx context.Context, version int) (*dict.Dictionary, error) {
	return loadDictionary(ctx, r.tx, version)
}

// Rollouts are the versions the tenant keeps besides the active one.
func (r *IntegrityReader) Rollouts(ctx context.Context) ([]Rollout, error) {
	rows, err := r.tx.Query(ctx, listRolloutsSQL, r.tenantID)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []Rollout
	for rows.Next() {
		ro, err := scanRollout(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, ro)
	}
	return out, rows.Err()
}

// LogEvents are the purges and flips with after < seq <= upto.
func (r *IntegrityReader) LogEvents(ctx context.Context, after, upto int64) ([]LogEvent, error) {
	rows, err := r.tx.Query(ctx, logRangeSQL, r.tenantID, after, upto)
	if err != nil {
		return nil, fmt.Errorf("integrity log: %w", err)
	}
	return pgx.CollectRows(rows, pgx.RowToStructByPos[LogEvent])
}

// Birth is what an item was born with, as the database recorded it.
type Birth struct {
	BornClock int64
	Tau       float64
	Novelty   float32
}

// Activation is one viewer's activation state of an item.
type Activation struct {
	TLast int64
	Peak  float64
	// The item's copies the activation carries for the warm read (nil:
	// written before migration 8, the item's own are read instead).
	Tau    *float64
	Tokens *int32
}

// CheckItem is an item with everything its invariants involve.
type CheckItem struct {
	ID, Seq, UserID, ConvID, MessageID int64
	Tokens                             []string
	Birth                                          // the item's own columns now
	Recorded                           *Birth      // the birth record; nil when missing
	OwnerActivation                    *Activation // nil when the owner has none
	TokenCount                         int32       // the body's model tokens
	OwnerIsUser                        bool        // the owner is a memory user of the tenant
	ConvOwner                          *int64      // owner of the item's conversation; nil when there is none
	MessageUser, MessageConv           int64
	Interrupted, MessageInterrupted    bool                 // the item's copy of its message's flag, and the message's
	Rows                               map[int]RetrievalRow // by dictionary version, for the versions asked
}

const (
	checkItemsSQL = `SELECT i.id, i.seq, i.user_id, i.conversation_id, i.message_id, i.tokens, i.born_clock, i.tau, i.novelty,
			b.born_clock, b.tau, b.novelty, a.t_last, a.peak, a.tau, a.token_count, i.token_count, u.id IS NOT NULL, c.user_id, m.user_id, m.conversation_id,
			i.interrupted, m.interrupted
		FROM items i
		JOIN messages m ON m.tenant_id = i.tenant_id AND m.id = i.message_id
		LEFT JOIN item_births b ON b.tenant_id = i.tenant_id AND b.item_id = i.id
		LEFT JOIN activations a ON a.tenant_id = i.tenant_id AND a.viewer_id = i.user_id AND a.item_id = i.id
		LEFT JOIN memory_users u ON u.tenant_id = i.tenant_id AND u.id = i.user_id
		LEFT JOIN conversations c ON c.tenant_id = i.tenant_id AND c.id = i.conversation_id
		WHERE i.tenant_id = $1 AND i.id > $2 ORDER BY i.id LIMIT $3`
	checkRowsSQL = `SELECT item_id, dict_version, term_ids, term_freqs, length, dense FROM retrieval_rows
		WHERE tenant_id = $1 AND item_id = ANY($2) AND dict_version = ANY($3)`
	// The stored counts are the tables plus the deltas not folded yet
	// (stats.go).
	checkTermStatsSQL = `SELECT term_id, sum(df)::bigint FROM (
			SELECT term_id, df FROM term_stats WHERE tenant_id = $1 AND dict_version = $2
			UNION ALL
			SELECT t.term_id, t.df FROM stat_deltas d, unnest(d.term_ids, d.dfs) AS t(term_id, df)
			WHERE d.tenant_id = $1 AND d.dict_version = $2) s
		GROUP BY term_id`
	checkCorpusStatsSQL = `SELECT coalesce(sum(items), 0)::bigint, coalesce(sum(total_length), 0)::bigint, count(*) > 0 FROM (
			SELECT items, total_length FROM corpus_stats WHERE tenant_id = $1 AND dict_version = $2
			UNION ALL
			SELECT items, total_length FROM stat_deltas WHERE tenant_id = $1 AND dict_version = $2) s`
	foreignViewersSQL = `SELECT 'activations', a.viewer_id, a.item_id FROM activations a
			WHERE a.tenant_id = $1 AND NOT EXISTS (SELECT 1 FROM memory_users u WHERE u.tenant_id = $1 AND u.id = a.viewer_id)
		UNION ALL
		SELECT 'reheats', r.viewer_id, r.item_id FROM reheats r
			WHERE r.tenant_id = $1 AND NOT EXISTS (SELECT 1 FROM memory_users u WHERE u.tenant_id = $1 AND u.id = r.viewer_id)
		ORDER BY 1, 2, 3 LIMIT $2`
)

// Items reads up to limit items with id > after, by id, with their rows
// under versions.
func (r *IntegrityReader) Items(ctx context.Context, after int64, limit int, versions []int) ([]CheckItem, error) {
	rows, err := r.tx.Query(ctx, checkItemsSQL, r.tenantID, after, limit)
	if err != nil {
		return nil, fmt.Errorf("integrity items: %w", err)
	}
	var out []CheckItem
	for rows.Next() {
		var it CheckItem
		var bc *int64
		var bt *float64
		var bn *float32
		var tl *int64
		var pk *float64
		var at *float64
		var ac *int32
		if err := rows.Scan(&it.ID, &it.Seq, &it.UserID, &it.ConvID, &it.MessageID, &it.Tokens, &it.BornClock, &it.Tau, &it.Novelty,
			&bc, &bt, &bn, &tl, &pk, &at, &ac, &it.TokenCount, &it.OwnerIsUser, &it.ConvOwner, &it.MessageUser, &it.MessageConv,
			&it.Interrupted, &it.MessageInterrupted); err != nil {
			rows.Close()
			return nil, fmt.Errorf("integrity items: %w", err)
		}
		if bc != nil {
			it.Recorded = &Birth{BornClock: *bc, Tau: *bt, Novelty: *bn}
		}
		if tl != nil {
			it.OwnerActivation = &Activation{TLast: *tl, Peak: *pk, Tau: at, Tokens: ac}
		}
		out = append(out, it)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("integrity items: %w", err)
	}
	if len(out) == 0 || len(versions) == 0 {
		return out, nil
	}
	ids := make([]int64, len(out))
	at := make(map[int64]int, len(out))
	for i, it := range out {
		ids[i], at[it.ID] = it.ID, i
	}
	rr, err := r.tx.Query(ctx, checkRowsSQL, r.tenantID, ids, versions)
	if err != nil {
		return nil, fmt.Errorf("integrity rows: %w", err)
	}
	defer rr.Close()
	for rr.Next() {
		var id int64
		var row RetrievalRow
		if err := rr.Scan(&id, &row.DictVersion, &row.TermIDs, &row.Freqs, &row.Length, &row.Dense); err != nil {
			return nil, fmt.Errorf("integrity rows: %w", err)
		}
		it := &out[at[id]]
		if it.Rows == nil {
			it.Rows = map[int]RetrievalRow{}
		}
		it.Rows[row.DictVersion] = row
	}
	return out, rr.Err()
}

// TermStats reads the version's document frequencies.
func (r *IntegrityReader) TermStats(ctx context.Context, version int) (map[int32]int64, error) {
	rows, err := r.tx.Query(ctx, checkTermStatsSQL, r.tenantID, version)
	if err != nil {
		return nil, fmt.Errorf("integrity term stats: %w", err)
	}
	defer rows.Close()
	out := map[int32]int64{}
	for rows.Next() {
		var t int32
		var df int64
		if err := rows.Scan(&t, &df); err != nil {
			return nil, err
		}
		out[t] = df
	}
	return out, rows.Err()
}

// CorpusStats reads the version's item count and total length; ok is false
// when the tenant has no count for it.
func (r *IntegrityReader) CorpusStats(ctx context.Context, version int) (items, totalLength int64, ok bool, err error) {
	err = r.tx.QueryRow(ctx, checkCorpusStatsSQL, r.tenantID, version).Scan(&items, &totalLength, &ok)
	return items, totalLength, ok && err == nil, err
}

// ForeignViewer is an activation or reheat whose viewer is no memory user
// of the tenant.
type ForeignViewer struct {
	Table  string
	Viewer int64
	ItemID int64
}

// ForeignViewers lists up to limit activations and reheats whose viewer is
// not a memory user of the tenant.
func (r *IntegrityReader) ForeignViewers(ctx context.Context, limit int) ([]ForeignViewer, error) {
	rows, err := r.tx.Query(ctx, foreignViewersSQL, r.tenantID, limit)
	if err != nil {
		return nil, fmt.Errorf("integrity viewers: %w", err)
	}
	return pgx.CollectRows(rows, pgx.RowToStructByPos[ForeignViewer])
}

// IntegrityReport is one kept run of the check over one tenant.
type IntegrityReport struct {
	TenantID    int64
	ID          int64
	StartedAt   time.Time
	FinishedAt  *time.Time
	Actor       string
	DictVersion *int
	HeadSeq     *int64
	Items       int64
	Violations  int64
	Counts      map[string]int64 // violations per invariant
	Notes       string           // what was not checked, and why
	Error       string           // why the run stopped, if it did
}

// Violation is one broken invariant with the rows involved, as ids and
// numbers (never content).
type Violation struct {
	Invariant string
	ItemID    *int64
	Detail    string
	Rows      json.RawMessage
}

// MaxStoredViolations bounds what one report keeps row by row; the counts
// stay exact beyond it.
const MaxStoredViolations = 100_000

const (
	startReportSQL  = `INSERT INTO integrity_reports (tenant_id, actor_email) VALUES ($1, $2) RETURNING id`
	finishReportSQL = `UPDATE integrity_reports SET finished_at = now(), dict_version = $3, head_seq = $4, items = $5,
			violations = $6, counts = $7, notes = $8, error = $9
		WHERE tenant_id = $1 AND id = $2`
	reportCols = `tenant_id, id, started_at, finished_at, actor_email, dict_version, head_seq, items, violations,
		counts, notes, error`
	listReportsSQL    = `SELECT ` + reportCols + ` FROM integrity_reports WHERE tenant_id = $1 ORDER BY id DESC LIMIT $2`
	getReportSQL      = `SELECT ` + reportCols + ` FROM integrity_reports WHERE tenant_id = $1 AND id = $2`
	listViolationsSQL = `SELECT invariant, item_id, detail, rows FROM integrity_violations WHERE tenant_id = $1 AND report_id = $2 ORDER BY n LIMIT $3`
	auditIntegritySQL = `INSERT INTO audit_log (tenant_id, actor_id, actor_email, action, target, detail, address)
		VALUES ($1, $2, $3, 'integrity.check', $4, $5, $6)`
	// One INSERT from arrays, not COPY: PostgreSQL refuses COPY FROM into a
	// table under row-level security.
	insertViolationsSQL = `INSERT INTO integrity_violations (tenant_id, report_id, n, invariant, item_id, detail, rows)
		SELECT $1, $2, v.n, v.invariant, v.item_id, v.detail, v.rows::jsonb
		FROM unnest($3::int[], $4::text[], $5::bigint[], $6::text[], $7::text[]) AS v(n, invariant, item_id, detail, rows)`
)

// StartIntegrityReport records that a check began; the report stays
// unfinished if the process dies.
func (db *DB) StartIntegrityReport(ctx context.Context, tenantID int64, by Actor) (int64, error) {
	var id int64
	err := db.InTenant(ctx, tenantID, func(tx pgx.Tx) error {
		return tx.QueryRow(ctx, startReportSQL, tenantID, by.Email).Scan(&id)
	})
	if err != nil {
		return 0, fmt.Errorf("start integrity report: %w", err)
	}
	return id, nil
}

// FinishIntegrityReport stores the outcome and the violations (the first
// MaxStoredViolations of them) of a report, with an audit entry.
func (db *DB) FinishIntegrityReport(ctx context.Context, rep IntegrityReport, vs []Violation, by Actor) error {
	counts, err := json.Marshal(rep.Counts)
	if err != nil {
		return fmt.Errorf("integrity counts: %w", err)
	}
	if len(vs) > MaxStoredViolations {
		vs = vs[:MaxStoredViolations]
	}
	err = db.InTenant(ctx, rep.TenantID, func(tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, finishReportSQL, rep.TenantID, rep.ID, rep.DictVersion, rep.HeadSeq, rep.Items,
			rep.Violations, counts, rep.Notes, rep.Error)
		if err != nil {
			return err
		}
		if tag.RowsAffected() != 1 {
			return ErrNotFound
		}
		if len(vs) > 0 {
			ns := make([]int32, len(vs))
			invs, details, rowsJSON := make([]string, len(vs)), make([]string, len(vs)), make([]string, len(vs))
			items := make([]*int64, len(vs))
			for i, v := range vs {
				r := v.Rows
				if len(r) == 0 {
					r = json.RawMessage("[]")
				}
				ns[i], invs[i], items[i], details[i], rowsJSON[i] = int32(i+1), v.Invariant, v.ItemID, v.Detail, string(r)
			}
			if _, err := tx.Exec(ctx, insertViolationsSQL, rep.TenantID, rep.ID, ns, invs, items, details, rowsJSON); err != nil {
				return fmt.Errorf("store violations: %w", err)
			}
		}
		detail, _ := json.Marshal(map[string]any{"report": rep.ID, "items": rep.Items, "violations": rep.Violations})
		_, err = tx.Exec(ctx, auditIntegritySQL, rep.TenantID, by.AccountID, by.Email, fmt.Sprintf("integrity_report:%d", rep.ID), detail, by.Address)
		return err
	})
	if err != nil {
		return fmt.Errorf("finish integrity report %d: %w", rep.ID, err)
	}
	return nil
}

func scanReport(row pgx.Row) (IntegrityReport, error) {
	var r IntegrityReport
	var counts []byte
	err := row.Scan(&r.TenantID, &r.ID, &r.StartedAt, &r.FinishedAt, &r.Actor, &r.DictVersion, &r.HeadSeq,
		&r.Items, &r.Violations, &counts, &r.Notes, &r.Error)
	if err != nil {
		return r, notFound(err)
	}
	if err := json.Unmarshal(counts, &r.Counts); err != nil {
		return r, fmt.Errorf("integrity counts: %w", err)
	}
	return r, nil
}

// IntegrityReports lists the tenant's latest reports, newest first.
func (db *DB) IntegrityReports(ctx context.Context, tenantID int64, limit int) ([]IntegrityReport, error) {
	var out []IntegrityReport
	err := db.InTenant(ctx, tenantID, func(tx pgx.Tx) error {
		rows, err := tx.Query(ctx, listReportsSQL, tenantID, limit)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			r, err := scanReport(rows)
			if err != nil {
				return err
			}
			out = append(out, r)
		}
		return rows.Err()
	})
	if err != nil {
		return nil, fmt.Errorf("integrity reports: %w", err)
	}
	return out, nil
}

// IntegrityReportByID reads one report of the tenant and up to limit of its
// violations; another tenant's report is ErrNotFound.
func (db *DB) IntegrityReportByID(ctx context.Context, tenantID, id int64, limit int) (IntegrityReport, []Violation, error) {
	var rep IntegrityReport
	var vs []Violation
	err := db.InTenant(ctx, tenantID, func(tx pgx.Tx) error {
		var err error
		if rep, err = scanReport(tx.QueryRow(ctx, getReportSQL, tenantID, id)); err != nil {
			return err
		}
		rows, err := tx.Query(ctx, listViolationsSQL, tenantID, id, limit)
		if err != nil {
			return err
		}
		vs, err = pgx.CollectRows(rows, pgx.RowToStructByPos[Violation])
		return err
	})
	if err != nil {
		return IntegrityReport{}, nil, fmt.Errorf("integrity report %d: %w", id, err)
	}
	return rep, vs, nil
}
