package store

import (
	"context"
	"fmt"
	"sort"

	"github.com/jackc/pgx/v5"
)

// Arena segments (migration 000023): runs of catch-up rows stored as one
// value each, which a cold load reads instead of joining every item with
// its retrieval row. A cold load uses the chain of segments contiguous
// from seq 0 (each segment's first_seq is the previous one's last_seq) and
// reads the items past its end as rows, all in its one snapshot; a segment
// not on the chain is ignored.
//
// Correctness rests on three rules, each kept in one place:
//   - a segment encodes exactly the rows of its range as of its as_of head
//     (CutSegments, from a cold load's complete read);
//   - a purge, a redaction, a version's retirement and the tenant's
//     removal delete the segments they would make stale, in their own
//     transaction, after taking segmentLockSQL;
//   - WriteSegments takes the same lock and writes only when no purge or
//     redaction is logged after as_of, the tenant is still on the version,
//     and the segments continue the chain: a purge either finishes before
//     (the write sees its log event and gives up) or waits for the write
//     (and deletes what it wrote).

// SegmentItems is how many rows a segment holds, at least (a seq's rows are
// never split).
const SegmentItems = 8192

// segmentBatch is how many segments one write transaction inserts: a purge
// waits for at most one batch.
const segmentBatch = 8

// Segment is one segment as written.
type Segment struct {
	FirstSeq, LastSeq int64 // the rows with FirstSeq < seq <= LastSeq
	Items             int
	Payload           []byte
}

const (
	segmentLockSQL = `SELECT pg_advisory_xact_lock(hashtextextended('perpetuity arena_segments', $1))`
	// segmentChainCTE names the version read ($2, 0: the active one) and
	// the chain of segments contiguous from 0 that the load uses.
	segmentChainCTE = `WITH RECURSIVE v AS (
			SELECT COALESCE(NULLIF($2::int, 0), (SELECT dict_version FROM tenant_heads WHERE tenant_id = $1)) AS version,
			       (SELECT seq FROM tenant_heads WHERE tenant_id = $1) AS head),
		chain AS (
			SELECT s.first_seq, s.last_seq FROM arena_segments s, v
			WHERE s.tenant_id = $1 AND s.dict_version = v.version AND s.first_seq = 0 AND s.last_seq <= v.head
			UNION ALL
			SELECT s.first_seq, s.last_seq FROM chain c, arena_segments s, v
			WHERE s.tenant_id = $1 AND s.dict_version = v.version AND s.first_seq = c.last_seq AND s.last_seq <= v.head)
		`
	readSegmentsSQL = segmentChainCTE + `SELECT s.first_seq, s.last_seq, s.items, s.payload
		FROM chain c JOIN arena_segments s ON s.tenant_id = $1 AND s.first_seq = c.first_seq
			AND s.dict_version = (SELECT version FROM v)
		ORDER BY s.first_seq`
	// The cold load's rows: catchUpItemSQL past the chain's end.
	catchUpColdItemSQL = segmentChainCTE + arenaRowSQL + `AND r.dict_version = (SELECT version FROM v)
		WHERE i.tenant_id = $1 AND i.seq > (SELECT COALESCE(max(last_seq), 0) FROM chain)
			AND i.seq <= (SELECT head FROM v)
		ORDER BY i.seq, i.id`
	chainEndSQL      = segmentChainCTE + `SELECT COALESCE(max(last_seq), 0) FROM chain`
	erasedSinceSQL   = `SELECT EXISTS (SELECT 1 FROM tenant_log WHERE tenant_id = $1 AND seq > $2 AND kind IN ('purge', 'redact'))`
	insertSegmentSQL = `INSERT INTO arena_segments (tenant_id, dict_version, first_seq, last_seq, as_of, items, payload)
		VALUES ($1, $2, $3, $4, $5, $6, $7) ON CONFLICT DO NOTHING`
	dropSegmentsSQL        = `DELETE FROM arena_segments WHERE tenant_id = $1`
	dropVersionSegmentsSQL = `DELETE FROM arena_segments WHERE tenant_id = $1 AND dict_version = $2`
)

// queueSegments adds a cold load's segment read to its batch: the chain's
// rows decoded into cu.Items (allocated for the whole tenant, the head
// being read just before), cu.Segmented its end.
func queueSegments(b *pgx.Batch, tenantID int64, dictVersion int, cu *CatchUp) {
	b.Queue(readSegmentsSQL, tenantID, dictVersion).Query(func(rows pgx.Rows) error {
		cu.Items = make([]ArenaItem, 0, min(max(cu.Head.Seq, 0), maxItemsHint))
		for rows.Next() {
			var first, last int64
			var n int
			var payload []byte
			if err := rows.Scan(&first, &last, &n, &payload); err != nil {
				return err
			}
			if first != cu.Segmented {
				return fmt.Errorf("%w: (%d, %d] after a chain ending at %d", errSegment, first, last, cu.Segmented)
			}
			before := len(cu.Items)
			var err error
			if cu.Items, err = DecodeSegment(cu.Items, payload); err != nil {
				return fmt.Errorf("arena segment (%d, %d]: %w", first, last, err)
			}
			if got := len(cu.Items) - before; got != n {
				return fmt.Errorf("%w: (%d, %d] holds %d rows, the table says %d", errSegment, first, last, got, n)
			}
			cu.Segmented = last
		}
		return rows.Err()
	})
}

// RowsUpTo is how many of rows (in seq order) have seq <= seq.
func RowsUpTo(rows []ArenaItem, seq int64) int {
	return sort.Search(len(rows), func(i int) bool { return rows[i].Seq > seq })
}

// CutSegments cuts a cold load's rows (complete up to asOf, in seq order)
// into segments of size rows or a few more that continue a chain ending at
// from; the rows past the last whole segment are left for a later load.
func CutSegments(rows []ArenaItem, from, asOf int64, size int) []Segment {
	size = max(size, 1)
	i := RowsUpTo(rows, from)
	var out []Segment
	for len(rows)-i >= size {
		j := i + size
		for j < len(rows) && rows[j].Seq == rows[j-1].Seq {
			j++
		}
		last := rows[j-1].Seq
		if last > asOf {
			break
		}
		out = append(out, Segment{FirstSeq: from, LastSeq: last, Items: j - i, Payload: EncodeSegment(rows[i:j])})
		from, i = last, j
	}
	return out
}

// WriteSegments stores segs (contiguous, in order, cut from a read at head
// asOf under dictVersion) and reports how many it stored: none when the
// tenant has left the version, a purge or redaction came after asOf, or
// the chain no longer ends where segs begin (another process wrote them).
func (db *DB) WriteSegments(ctx context.Context, tenantID int64, dictVersion int, asOf int64, segs []Segment) (int, error) {
	written := 0
	for len(segs) > 0 {
		batch := segs[:min(len(segs), segmentBatch)]
		segs = segs[len(batch):]
		stop := false
		err := db.InTenant(ctx, tenantID, func(tx pgx.Tx) error {
			if _, err := tx.Exec(ctx, segmentLockSQL, tenantID); err != nil {
				return err
			}
			var head Head
			if err := tx.QueryRow(ctx, headSQL, tenantID).Scan(&head.Seq, &head.DictVersion); err != nil {
				return notFound(err)
			}
			var erased bool
			if err := tx.QueryRow(ctx, erasedSinceSQL, tenantID, asOf).Scan(&erased); err != nil {
				return err
			}
			var end int64
			if err := tx.QueryRow(ctx, chainEndSQL, tenantID, dictVersion).Scan(&end); err != nil {
				return err
			}
			if head.DictVersion != dictVersion || erased || end != batch[0].FirstSeq {
				stop = true
				return nil
			}
			for _, s := range batch {
				if _, err := tx.Exec(ctx, insertSegmentSQL, tenantID, dictVersion, s.FirstSeq, s.LastSeq, asOf, s.Items, s.Payload); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			return written, fmt.Errorf("write arena segments of tenant %d: %w", tenantID, err)
		}
		if stop {
			break
		}
		written += len(batch)
	}
	return written, nil
}

// dropSegments deletes the tenant's segments (of one version when version
// > 0) under the writers' lock, inside an erasing transaction.
func dropSegments(ctx context.Context, tx pgx.Tx, tenantID int64, version int) error {
	if _, err := tx.Exec(ctx, segmentLockSQL, tenantID); err != nil {
		return fmt.Errorf("lock arena segments: %w", err)
	}
	var err error
	if version > 0 {
		_, err = tx.Exec(ctx, dropVersionSegmentsSQL, tenantID, version)
	} else {
		_, err = tx.Exec(ctx, dropSegmentsSQL, tenantID)
	}
	if err != nil {
		return fmt.Errorf("drop arena segments: %w", err)
	}
	return nil
}

// DropSegments deletes every arena segment of the tenant: they are derived,
// and the next cold load reads rows (and writes them again).
func (db *DB) DropSegments(ctx context.Context, tenantID int64) error {
	return db.InTenant(ctx, tenantID, func(tx pgx.Tx) error { return dropSegments(ctx, tx, tenantID, 0) })
}
