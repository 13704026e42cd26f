package ops

import (
	"context"
	"fmt"

	"github.com/perpetuity/perpetuity/memory/store"
)

// InvSegmentRows: an arena segment decodes to exactly the rows of its
// range and version (store/segment.go). A cold load trusts segments in
// place of the rows, so one that differs would load a wrong arena; purges,
// redactions and retirements delete them, so none may hold a row that is
// gone.
const InvSegmentRows = "segment.rows"

func (k *checkRun) checkSegments(ctx context.Context, r *store.IntegrityReader) error {
	n := 0
	err := r.Segments(ctx, func(s store.SegmentCheck) error {
		n++
		what := fmt.Sprintf("arena segment of v%d, seq (%d, %d]", s.DictVersion, s.FirstSeq, s.LastSeq)
		switch {
		case s.DecodeErr != nil:
			k.add(InvSegmentRows, nil, fmt.Sprintf("%s does not decode: %v", what, s.DecodeErr), nil)
		case len(s.Decoded) != s.Items:
			k.add(InvSegmentRows, nil, fmt.Sprintf("%s holds %d rows, its row says %d", what, len(s.Decoded), s.Items), nil)
		case !store.SameRows(s.Decoded, s.Rows):
			k.add(InvSegmentRows, nil, fmt.Sprintf("%s holds %d rows that differ from the %d stored rows of its range", what, len(s.Decoded), len(s.Rows)),
				map[string]any{"segment_ids": ids(s.Decoded), "row_ids": ids(s.Rows)})
		}
		return nil
	})
	if err == nil && n > 0 {
		k.note("%d arena segments compared with their rows", n)
	}
	return err
}

func ids(rows []store.ArenaItem) []int64 {
	out := make([]int64, 0, min(len(rows), 50))
	for _, r := range rows[:min(len(rows), 50)] {
		out = append(out, r.ID)
	}
	return out
}
