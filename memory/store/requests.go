package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
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
	// Inspection, when set with a positive InspectRetention, is kept for
	// the request inspector, in the same statement as the figures.
	Inspection       *Inspection
	InspectRetention time.Duration
	// PruneInspections also removes the tenant's records older than
	// InspectRetention (all of them with a retention of 0), in the same
	// statement: the proxy sets it once a minute per tenant, other writers
	// of figures leave records alone.
	PruneInspections bool
}

const insertRequestSQL = `INSERT INTO requests (tenant_id, request_id, user_id, dialect, provider, model, status, streamed,
		tokens_in, tokens_out, frame_items, frame_tokens, duration_ms, key_id)
	VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, nullif($14::bigint, 0))`

// insertInspectedSQL writes the figures, the inspection with its items
// ($16, $17), the index rows of its other users' items ($21, $22;
// migration 000025) and (when $19) prunes the tenant's expired records:
// one round trip, so that the inspector costs the path after the reply
// (already off the client's) no more than one row. The prune walks
// request_inspections_at from its oldest end and stops at the first
// record still kept.
const insertInspectedSQL = `WITH r AS (
		INSERT INTO requests (tenant_id, request_id, user_id, dialect, provider, model, status, streamed,
			tokens_in, tokens_out, frame_items, frame_tokens, duration_ms, key_id)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, nullif($14::bigint, 0))
		RETURNING id, at),
	ins AS (
		INSERT INTO request_inspections (tenant_id, request_id, user_id, at, record, question, item_ids, item_shown)
		SELECT $1, r.id, $3, r.at, $15::text, $20, $16::bigint[], $17::boolean[] FROM r
		RETURNING request_id),
	idx AS (
		INSERT INTO request_inspection_items (tenant_id, item_id, request_id, shown)
		SELECT $1, x.item_id, ins.request_id, x.shown FROM ins, unnest($21::bigint[], $22::boolean[]) AS x(item_id, shown))
	DELETE FROM request_inspections WHERE $19::boolean AND tenant_id = $1 AND at < now() - make_interval(secs => $18::double precision)`

// insertPrunedSQL writes the figures and prunes, keeping no record.
const insertPrunedSQL = `WITH r AS (
		INSERT INTO requests (tenant_id, request_id, user_id, dialect, provider, model, status, streamed,
			tokens_in, tokens_out, frame_items, frame_tokens, duration_ms, key_id)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, nullif($14::bigint, 0))
		RETURNING id)
	DELETE FROM request_inspections WHERE tenant_id = $1 AND at < now() - make_interval(secs => $15::double precision)`

// lz4SQL has the record's transaction compress what it moves out of line
// (an inspection: tens of kB of JSON) with lz4 rather than the default
// pglz. On a bench record of 45 kB, pglz took about 1.7 ms of the
// database's CPU and lz4 0.3, on every proxied request, beside the next
// request's work. Values keep the method they were written with; reads
// decompress either. A server built without lz4 refuses the setting, and
// the record is written with the default (recordBatch).
const lz4SQL = `SELECT set_config('default_toast_compression', 'lz4', true)`

// RecordRequest stores one request's figures, and its inspection when
// there is one to keep: one statement, sent with the tenant setting in
// one round trip (its implicit transaction commits with it).
func (db *DB) RecordRequest(ctx context.Context, r RequestRecord) error {
	args := []any{r.TenantID, r.RequestID, r.UserID, r.Dialect, r.Provider, r.Model,
		r.Status, r.Streamed, r.TokensIn, r.TokensOut, r.FrameItems, r.FrameTokens, r.DurationMS, r.KeyID}
	q, lz4 := insertRequestSQL, false
	if r.Inspection != nil && r.InspectRetention > 0 {
		doc, err := json.Marshal(r.Inspection)
		if err != nil {
			return fmt.Errorf("record request: inspection: %w", err)
		}
		ids, shown, others, othersShown := r.Inspection.index(r.UserID)
		q, lz4 = insertInspectedSQL, true
		args = append(args, doc, ids, shown, r.InspectRetention.Seconds(), r.PruneInspections, r.Inspection.Question,
			others, othersShown)
	} else if r.PruneInspections {
		q = insertPrunedSQL
		args = append(args, max(r.InspectRetention, 0).Seconds())
	}
	err := db.recordBatch(ctx, r.TenantID, lz4, q, args)
	var pe *pgconn.PgError
	if lz4 && errors.As(err, &pe) && pe.Code == pgerrcode.InvalidParameterValue {
		err = db.recordBatch(ctx, r.TenantID, false, q, args)
	}
	if err != nil {
		return fmt.Errorf("record request: %w", err)
	}
	return nil
}

func (db *DB) recordBatch(ctx context.Context, tenantID int64, lz4 bool, q string, args []any) error {
	return db.hotPipeline(ctx, tenantID, func(b *pgx.Batch) {
		if lz4 {
			b.Queue(lz4SQL)
		}
		b.Queue(q, args...)
	})
}
