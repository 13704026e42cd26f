package app

import (
	"strings"
	"testing"

	"github.com/perpetuity/perpetuity/memory"
)

// TestArenaBudgetAndShardConfig: sizes with binary and decimal suffixes,
// 0 for unlimited, and a bad value of either variable stops start-up with
// the variable named.
func TestArenaBudgetAndShardConfig(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		budget, shard string
		want          int64
		wantShard     memory.Shard
		bad           string // the variable the error names; "" for none
	}{
		{"", "", 0, memory.Shard{}, ""},
		{"0", "", 0, memory.Shard{}, ""},
		{"512MiB", "2/3", 512 << 20, memory.Shard{Index: 2, Count: 3}, ""},
		{"2GiB", "1/1", 2 << 30, memory.Shard{Index: 1, Count: 1}, ""},
		{"2gib", "", 2 << 30, memory.Shard{}, ""},
		{"1.5GiB", "", 3 << 29, memory.Shard{}, ""},
		{"4GB", "", 4e9, memory.Shard{}, ""},
		{"1048576", "", 1 << 20, memory.Shard{}, ""},
		{"100 MB", "", 100e6, memory.Shard{}, ""},
		{"512", "", 0, memory.Shard{}, "PERPETUITY_ARENA_BUDGET"}, // below 1MiB: MiB forgotten
		{"-1GiB", "", 0, memory.Shard{}, "PERPETUITY_ARENA_BUDGET"},
		{"lots", "", 0, memory.Shard{}, "PERPETUITY_ARENA_BUDGET"},
		{"2GiBs", "", 0, memory.Shard{}, "PERPETUITY_ARENA_BUDGET"},
		{"1e9", "", 0, memory.Shard{}, "PERPETUITY_ARENA_BUDGET"},
		{"MiB", "", 0, memory.Shard{}, "PERPETUITY_ARENA_BUDGET"},
		{"99999999999TiB", "", 0, memory.Shard{}, "PERPETUITY_ARENA_BUDGET"},
		{"", "0/3", 0, memory.Shard{}, "PERPETUITY_SHARD"},
		{"", "3/2", 0, memory.Shard{}, "PERPETUITY_SHARD"},
		{"", "two", 0, memory.Shard{}, "PERPETUITY_SHARD"},
	} {
		cfg, err := loadWith(map[string]string{"PERPETUITY_ARENA_BUDGET": tc.budget, "PERPETUITY_SHARD": tc.shard})
		if tc.bad != "" {
			if err == nil || !strings.HasPrefix(err.Error(), tc.bad+": ") {
				t.Errorf("%q, %q: error %v, want one naming %s", tc.budget, tc.shard, err, tc.bad)
			}
			continue
		}
		if err != nil || cfg.ArenaBudget != tc.want || cfg.Shard != tc.wantShard {
			t.Errorf("%q, %q: budget %d, shard %+v, %v; want %d, %+v", tc.budget, tc.shard, cfg.ArenaBudget, cfg.Shard, err, tc.want, tc.wantShard)
		}
	}
}
