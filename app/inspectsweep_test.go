package app

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/perpetuity/perpetuity/memory"
	"github.com/perpetuity/perpetuity/memory/store"
)

type fakePruner struct {
	tenants []store.TenantRef
	fail    map[int64]bool
	pruned  []int64
}

func (f *fakePruner) Tenants(context.Context) ([]store.TenantRef, error) { return f.tenants, nil }

func (f *fakePruner) PruneInspections(_ context.Context, id int64, retention time.Duration) (int64, error) {
	if retention != time.Hour {
		return 0, errors.New("wrong retention")
	}
	f.pruned = append(f.pruned, id)
	if f.fail[id] {
		return 0, errors.New("tenant failed")
	}
	return 2, nil
}

// TestSweepOnce: a sweep prunes every tenant its replica owns, goes on past
// a failing one and reports the failure.
func TestSweepOnce(t *testing.T) {
	t.Parallel()
	var refs []store.TenantRef
	for id := range int64(12) {
		refs = append(refs, store.TenantRef{ID: id + 1})
	}
	for _, tc := range []struct {
		name  string
		shard memory.Shard
		fail  int64
	}{{"one replica", memory.Shard{}, 0}, {"first of three", memory.Shard{Index: 1, Count: 3}, 0}, {"a tenant fails", memory.Shard{}, 4}} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f := &fakePruner{tenants: refs, fail: map[int64]bool{tc.fail: true}}
			n, err := sweepOnce(context.Background(), f, tc.shard, time.Hour)
			var want []int64
			for _, r := range refs {
				if tc.shard.Owns(r.ID) {
					want = append(want, r.ID)
				}
			}
			if !slices.Equal(f.pruned, want) {
				t.Errorf("pruned tenants %v, want %v", f.pruned, want)
			}
			failed := 0
			if tc.fail != 0 {
				failed = 1
			}
			if n != int64(2*(len(want)-failed)) {
				t.Errorf("pruned %d records, want %d", n, 2*(len(want)-failed))
			}
			if (err != nil) != (tc.fail != 0) {
				t.Errorf("error %v", err)
			}
			if tc.shard.Count == 3 && len(want) == len(refs) {
				t.Error("a third of the tenants should be another replica's")
			}
		})
	}
}
