package store

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
)

// SegmentCheck is one stored arena segment as the integrity check compares
// it: what its payload decodes to and the rows it stands for, both read in
// the check's snapshot.
type SegmentCheck struct {
	DictVersion       int
	FirstSeq, LastSeq int64
	Items             int // as the table says
	Decoded           []ArenaItem
	DecodeErr         error
	Rows              []ArenaItem
}

const (
	segmentKeysSQL = `SELECT dict_version, first_seq, last_seq, items FROM arena_segments
		WHERE tenant_id = $1 ORDER BY dict_version, first_seq`
	segmentPayloadSQL = `SELECT payload FROM arena_segments WHERE tenant_id = $1 AND dict_version = $2 AND first_seq = $3`
	segmentRangeSQL   = arenaRowSQL + `AND r.dict_version = $2
		WHERE i.tenant_id = $1 AND i.seq > $3 AND i.seq <= $4
		ORDER BY i.seq, i.id`
)

type segmentKey struct {
	DictVersion       int
	FirstSeq, LastSeq int64
	Items             int
}

// Segments calls fn with each of the tenant's arena segments, one at a
// time (a 1M-item tenant's segments are hundreds of megabytes).
func (r *IntegrityReader) Segments(ctx context.Context, fn func(SegmentCheck) error) error {
	rows, err := r.tx.Query(ctx, segmentKeysSQL, r.tenantID)
	if err != nil {
		return fmt.Errorf("arena segments: %w", err)
	}
	keys, err := pgx.CollectRows(rows, pgx.RowToStructByPos[segmentKey])
	if err != nil {
		return fmt.Errorf("arena segments: %w", err)
	}
	for _, k := range keys {
		c := SegmentCheck{DictVersion: k.DictVersion, FirstSeq: k.FirstSeq, LastSeq: k.LastSeq, Items: k.Items}
		var payload []byte
		if err := r.tx.QueryRow(ctx, segmentPayloadSQL, r.tenantID, k.DictVersion, k.FirstSeq).Scan(&payload); err != nil {
			return fmt.Errorf("arena segment payload: %w", err)
		}
		c.Decoded, c.DecodeErr = DecodeSegment(nil, payload)
		rows, err := r.tx.Query(ctx, segmentRangeSQL, r.tenantID, k.DictVersion, k.FirstSeq, k.LastSeq)
		if err != nil {
			return fmt.Errorf("arena segment rows: %w", err)
		}
		var d rowDecoder
		if c.Rows, err = pgx.CollectRows(rows, d.row); err != nil {
			return fmt.Errorf("arena segment rows: %w", err)
		}
		if err := fn(c); err != nil {
			return err
		}
	}
	return nil
}
