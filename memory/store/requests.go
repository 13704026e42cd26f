package store

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
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
}

const insertRequestSQL = `INSERT INTO requests (tenant_id, request_id, user_id, dialect, provider, model, status, streamed,
		tokens_in, tokens_out, frame_items, frame_tokens, duration_ms, key_id)
	VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, nullif($14::bigint, 0))`

// RecordRequest stores one request's figures.
func (db *DB) RecordRequest(ctx context.Context, r RequestRecord) error {
	return db.InTenant(ctx, r.TenantID, func(tx pgx.Tx) error {
		_, err := tx.Exec(ctx, insertRequestSQL, r.TenantID, r.RequestID, r.UserID, r.Dialect, r.Provider, r.Model,
			r.Status, r.Streamed, r.TokensIn, r.TokensOut, r.FrameItems, r.FrameTokens, r.DurationMS, r.KeyID)
		if err != nil {
			return fmt.Errorf("record request: %w", err)
		}
		return nil
	})
}
