package memory_test

import (
	"testing"

	"github.com/perpetuity/perpetuity/memory"
)

// TestShardOwnership: every tenant falls in exactly one share, the same
// one in every process and release (golden values: a change of hash would
// move every replica's tenants), the shares are roughly even over 60
// tenants, and a fourth share takes tenants only from the others, never
// moving one between the first three.
func TestShardOwnership(t *testing.T) {
	t.Parallel()
	golden := map[int64]int{1: 0, 2: 0, 3: 0, 4: 0, 5: 0, 1000: 0}
	for id := range golden {
		golden[id] = memory.ShardOf(id, 3)
	}
	for _, tc := range []struct {
		n        int
		min, max int // tenants per share over ids 1..60
	}{{2, 22, 38}, {3, 12, 28}, {4, 8, 22}} {
		count := make([]int, tc.n+1)
		for id := int64(1); id <= 60; id++ {
			owners := 0
			for i := 1; i <= tc.n; i++ {
				if (memory.Shard{Index: i, Count: tc.n}).Owns(id) {
					owners++
					count[i]++
				}
			}
			if owners != 1 {
				t.Fatalf("n=%d: tenant %d owned by %d shares", tc.n, id, owners)
			}
			if memory.ShardOf(id, tc.n) != memory.ShardOf(id, tc.n) {
				t.Fatalf("n=%d: tenant %d's share changes", tc.n, id)
			}
		}
		for i := 1; i <= tc.n; i++ {
			if count[i] < tc.min || count[i] > tc.max {
				t.Errorf("n=%d: share %d owns %d of 60 tenants, want %d..%d (%v)", tc.n, i, count[i], tc.min, tc.max, count[1:])
			}
		}
	}
	for id := int64(1); id <= 60; id++ {
		if was, now := memory.ShardOf(id, 3), memory.ShardOf(id, 4); now != was && now != 4 {
			t.Errorf("tenant %d moved from share %d to %d when a fourth share came", id, was, now)
		}
	}
	want := map[int64]int{1: 1, 2: 3, 3: 1, 4: 2, 5: 1, 1000: 2}
	for id, s := range golden {
		if s != want[id] {
			t.Errorf("tenant %d is in share %d of 3, was %d: the hash changed", id, s, want[id])
		}
	}
	if !(memory.Shard{}).Owns(42) || !(memory.Shard{Index: 1, Count: 1}).Owns(42) {
		t.Error("no shard (or 1/1) must own every tenant")
	}
}

func TestParseShard(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		in   string
		want memory.Shard
		ok   bool
	}{
		{"", memory.Shard{}, true}, {"2/3", memory.Shard{Index: 2, Count: 3}, true}, {" 1 / 1 ", memory.Shard{Index: 1, Count: 1}, true},
		{"0/3", memory.Shard{}, false}, {"4/3", memory.Shard{}, false}, {"3", memory.Shard{}, false},
		{"a/b", memory.Shard{}, false}, {"1/0", memory.Shard{}, false}, {"-1/3", memory.Shard{}, false}, {"1/3/4", memory.Shard{}, false},
	} {
		got, err := memory.ParseShard(tc.in)
		if (err == nil) != tc.ok || got != tc.want {
			t.Errorf("%q: %+v, %v; want %+v, ok %v", tc.in, got, err, tc.want, tc.ok)
		}
	}
}
