package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/jackc/pgerrcode"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// RequestRecord is one proxied request, for the console's charts.
type RequestRecord struct {
	TenantID    int64
	RequestID   string
	UserID      int64
	KeyID       int64 // the Perpetuity key it came in with; 0 for none
	Dialect     string
	Provider    string
	Model       string
	Status      int
	Streamed    bool
	TokensIn    int
	TokensOut   int
	FrameItems  int
	FrameTokens int
	DurationMS  float64
	// At is when the request ended; zero is when the record is written.
	// The proxy writes its records in batches, a transaction's now()
	// for several requests, so it sets it.
	At time.Time
	// Inspection, when set with a positive InspectRetention, is kept for
	// the request inspector, in the same statement as the figures, unless
	// a purge or redaction was logged past Seen, the tenant log position
	// the request read memory at (its frame's, or its question's capture
	// when earlier): the record may quote what that erased (erasure.go).
	Inspection       *Inspection
	InspectRetention time.Duration
	Seen             int64
	// PruneInspections also removes the tenant's records older than
	// InspectRetention (all of them with a retention of 0), in the same
	// statement: the proxy sets it once a minute per tenant, other writers
	// of figures leave records alone.
	PruneInspections bool
}

// insertRequestSQL writes the figures; every record statement starts with
// the same fourteen arguments and the time ($15, NULL for now()).
const insertRequestSQL = `INSERT INTO requests (tenant_id, request_id, user_id, dialect, provider, model, status, streamed,
		tokens_in, tokens_out, frame_items, frame_tokens, duration_ms, key_id, at)
	VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, nullif($14::bigint, 0), coalesce($15::timestamptz, now()))`

// insertInspectedSQL writes the figures, the inspection with its items
// ($17, $18), the index rows of its other users' items ($22, $23;
// migration 000025) and (when $20) prunes the tenant's expired records;
// the inspection not when an erasure was logged past $24 (erasure.go):
// one round trip, so that the inspector costs the path after the reply
// (already off the client's) no more than one row. The prune walks
// request_inspections_at from its oldest end and stops at the first
// record still kept.
const insertInspectedSQL = `WITH r AS (
		INSERT INTO requests (tenant_id, request_id, user_id, dialect, provider, model, status, streamed,
			tokens_in, tokens_out, frame_items, frame_tokens, duration_ms, key_id, at)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, nullif($14::bigint, 0), coalesce($15::timestamptz, now()))
		RETURNING id, at),
	ins AS (
		INSERT INTO request_inspections (tenant_id, request_id, user_id, at, record, question, item_ids, item_shown)
		SELECT $1, r.id, $3, r.at, $16::text, $21, $17::bigint[], $18::boolean[] FROM r
		WHERE NOT EXISTS (SELECT 1 FROM tenant_log
			WHERE tenant_id = $1 AND kind IN ('purge', 'redact') AND seq > $24::bigint)
		RETURNING request_id),
	idx AS (
		INSERT INTO request_inspection_items (tenant_id, item_id, request_id, shown)
		SELECT $1, x.item_id, ins.request_id, x.shown FROM ins, unnest($22::bigint[], $23::boolean[]) AS x(item_id, shown))
	DELETE FROM request_inspections WHERE $20::boolean AND tenant_id = $1 AND at < now() - make_interval(secs => $19::double precision)`

// insertPrunedSQL writes the figures and prunes, keeping no record.
const insertPrunedSQL = `WITH r AS (
		INSERT INTO requests (tenant_id, request_id, user_id, dialect, provider, model, status, streamed,
			tokens_in, tokens_out, frame_items, frame_tokens, duration_ms, key_id, at)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, nullif($14::bigint, 0), coalesce($15::timestamptz, now()))
		RETURNING id)
	DELETE FROM request_inspections WHERE tenant_id = $1 AND at < now() - make_interval(secs => $16::double precision)`

// lz4SQL has the record's transaction compress what it moves out of line
// (an inspection: tens of kB of JSON) with lz4 rather than the default
// pglz. On a bench record of 45 kB, pglz took about 1.7 ms of the
// database's CPU and lz4 0.3, on every proxied request, beside the next
// request's work. Values keep the method they were written with; reads
// decompress either. A server built without lz4 refuses the setting, and
// the record is written with the default (recordBatch).
const lz4SQL = `SELECT set_config('default_toast_compression', 'lz4', true)`

// RecordRequest stores one request's figures, and its inspection when
// there is one to keep (RecordRequests).
func (db *DB) RecordRequest(ctx context.Context, r RequestRecord) error {
	return db.RecordRequests(ctx, []RequestRecord{r})
}

// RecordRequests stores requests' figures, and their inspections where
// there are any to keep: one statement each, every one after its tenant
// setting, all in one round trip and one implicit transaction, so a
// batch is kept whole or not at all. The proxy batches its records
// (proxy/records.go): each record on its own cost the database a
// transaction beside the next request's work.
func (db *DB) RecordRequests(ctx context.Context, recs []RequestRecord) error {
	if len(recs) == 0 {
		return nil
	}
	qs, args := make([]string, len(recs)), make([][]any, len(recs))
	lz4 := false
	for i, r := range recs {
		var err error
		if qs[i], args[i], err = recordStatement(r); err != nil {
			return fmt.Errorf("record request %s: %w", r.RequestID, err)
		}
		lz4 = lz4 || quotes(qs[i])
	}
	err := db.recordBatch(ctx, recs, lz4, qs, args)
	var pe *pgconn.PgError
	if lz4 && errors.As(err, &pe) && pe.Code == pgerrcode.InvalidParameterValue {
		err = db.recordBatch(ctx, recs, false, qs, args)
	}
	if err != nil {
		return fmt.Errorf("record request: %w", err)
	}
	return nil
}

// recordStatement is the statement that stores r and its arguments.
func recordStatement(r RequestRecord) (string, []any, error) {
	args := []any{r.TenantID, r.RequestID, r.UserID, r.Dialect, r.Provider, r.Model,
		r.Status, r.Streamed, r.TokensIn, r.TokensOut, r.FrameItems, r.FrameTokens, r.DurationMS, r.KeyID, nil}
	if !r.At.IsZero() {
		args[14] = r.At
	}
	switch {
	case r.Inspection != nil && r.InspectRetention > 0:
		doc, err := json.Marshal(r.Inspection)
		if err != nil {
			return "", nil, fmt.Errorf("inspection: %w", err)
		}
		ids, shown, others, othersShown := r.Inspection.index(r.UserID)
		return insertInspectedSQL, append(args, doc, ids, shown, r.InspectRetention.Seconds(), r.PruneInspections,
			r.Inspection.Question, others, othersShown, r.Seen), nil
	case r.PruneInspections:
		return insertPrunedSQL, append(args, max(r.InspectRetention, 0).Seconds()), nil
	}
	return insertRequestSQL, args, nil
}

// quotes says a record's statement keeps an inspection, which quotes
// memory: it is compressed with lz4 and written under the erasure lock.
func quotes(stmt string) bool { return stmt == insertInspectedSQL }

func (db *DB) recordBatch(ctx context.Context, recs []RequestRecord, lz4 bool, qs []string, args [][]any) error {
	b := &pgx.Batch{}
	if lz4 {
		b.Queue(lz4SQL)
	}
	for i, r := range recs {
		b.Queue(setTenantGenericSQL, strconv.FormatInt(r.TenantID, 10))
		if quotes(qs[i]) {
			// A record quoting memory: the lock before the statement,
			// whose snapshot then sees an erasure that held it (erasure.go).
			b.Queue(quoteLockSQL, r.TenantID)
		}
		b.Queue(qs[i], args[i]...)
	}
	return db.sendBatch(ctx, b)
}
