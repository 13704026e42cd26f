package ops_test

import (
	"slices"
	"testing"

	"github.com/perpetuity/perpetuity/memory/ops"
	"github.com/perpetuity/perpetuity/memory/store"
)

// TestEveryInvariantHasOneCheck: the report's lines cover every invariant
// once, so a violation is never counted twice nor left out.
func TestEveryInvariantHasOneCheck(t *testing.T) {
	t.Parallel()
	all := []string{ops.InvRowMissing, ops.InvRowMismatch, ops.InvTermStats, ops.InvCorpusStats, ops.InvBirthActivation,
		ops.InvBirthRecord, ops.InvBirthChanged, ops.InvTenantOwner, ops.InvTenantConversation, ops.InvTenantMessage,
		ops.InvTenantViewer, ops.InvArenaMissing, ops.InvArenaExtra, ops.InvArenaDiffers, ops.InvArenaVersion,
		ops.InvArenaDuplicate, ops.InvChainOwner, ops.InvChainDangling, ops.InvChainWatermark, ops.InvChainRebuild,
		ops.InvBindingUnbound, ops.InvBindingStale, ops.InvBindingOwner, ops.InvSegmentRows}
	seen := map[string]int{}
	for _, c := range ops.Checks() {
		if c.Name == "" || c.Means == "" {
			t.Errorf("check %+v has no name or description", c)
		}
		for _, inv := range c.Invariants {
			seen[inv]++
		}
	}
	for _, inv := range all {
		if seen[inv] != 1 {
			t.Errorf("invariant %s is in %d checks", inv, seen[inv])
		}
	}
	if len(seen) != len(all) {
		t.Errorf("checks name %d invariants, the package has %d", len(seen), len(all))
	}
}

func TestResults(t *testing.T) {
	t.Parallel()
	rep := store.IntegrityReport{
		Counts: map[string]int64{ops.InvCorpusStats: 1, ops.InvRowMissing: 2, ops.InvRowMismatch: 3, "future.thing": 4},
		Notes:  "arena not compared: no serving engine in this process; chain edges past the writer's watermark 4 (head 9) not compared: it has not caught up",
	}
	by := map[string]ops.CheckResult{}
	var names []string
	for _, r := range ops.Results(rep) {
		by[r.Name] = r
		names = append(names, r.Name)
	}
	if r := by["Retrieval rows"]; r.Violations != 5 || !r.Failed() || r.NotDone != "" {
		t.Errorf("retrieval rows %+v", r)
	}
	if r := by["Scoring counts"]; r.Violations != 1 {
		t.Errorf("scoring counts %+v", r)
	}
	if r := by["Serving memory"]; !r.Skipped || r.Failed() {
		t.Errorf("serving memory %+v", r)
	}
	if r := by["Chain graph"]; r.Skipped || r.NotDone == "" {
		t.Errorf("chain graph %+v", r)
	}
	if r := by["Other"]; r.Violations != 4 || !slices.Contains(r.Invariants, "future.thing") {
		t.Errorf("an unknown invariant is hidden: %v", names)
	}
	if r := by["Labels"]; r.Failed() || r.NotDone != "" {
		t.Errorf("labels %+v", r)
	}
}
