package ops_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/perpetuity/perpetuity/memory"
	"github.com/perpetuity/perpetuity/memory/ops"
	"github.com/perpetuity/perpetuity/memory/store"
)

// pasted is a turn that should never have been stored: a secret pasted
// into a kayak thread, so the chain graph links it both ways.
const pasted = "kayak paddle lakeshore canoe: the deploy token is zqx7tokenvalue lifejacket rapids"

// TestRedactKeepsIntegrity: a redaction through the chain rules, while two
// serving processes hold warm arenas, a second version is kept derived, one
// chain writer is loaded from before it and another has not caught up,
// leaves the tenant exactly as a recomputation gives: integrity is clean
// from either process's arena, before and after both writers move on, and
// the rebuilt graph no longer names the item while bob's graph is intact.
func TestRedactKeepsIntegrity(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newFixture(t)
	other := f.engine()
	alice := f.who(t, "alice", "a1")
	bob := f.who(t, "bob", "b1")
	f.discuss(t, f.eng, alice, 0, 8)
	secret, err := f.eng.Capture(ctx, memory.Message{Who: alice, Role: "user", Text: pasted, Position: 8,
		At: time.Date(2026, 1, 2, 3, 4, 0, 0, time.UTC)})
	if err != nil {
		t.Fatal(err)
	}
	id := secret.ItemIDs[0]
	f.discuss(t, other, f.who(t, "alice", "a2"), 0, 8)
	f.discuss(t, other, bob, 0, 10)
	if _, err := (&ops.Deriver{St: f.db}).Derive(ctx, f.nt.TenantID, 2, admin); err != nil {
		t.Fatal(err)
	}
	stale := f.writer(t)
	f.catchUp(t, stale)
	naming := func() int64 {
		return f.int64(t, `SELECT count(*) FROM chain_edges WHERE tenant_id = $1 AND (src_id = $2 OR dst_id = $2)`, f.nt.TenantID, id)
	}
	if naming() == 0 {
		t.Fatal("the chain graph does not link the pasted turn: the scene shows nothing")
	}
	bobBefore := f.userState(t, bob.UserID)
	// Both arenas warm, then more turns the writers have not read.
	for _, e := range []*memory.Engine{f.eng, other} {
		if _, err := e.Frame(ctx, memory.FrameQuery{Who: alice, Live: "deploy token zqx7tokenvalue", Now: time.Now()}); err != nil {
			t.Fatal(err)
		}
		if _, ok := f.snapshot(t, e).Items[id]; !ok {
			t.Fatal("a warm arena does not hold the pasted turn")
		}
	}
	f.discuss(t, f.eng, alice, 20, 4)

	r := &ops.Redactor{St: f.db, Lexicon: lexicon(t)}
	rep, err := r.Redact(ctx, f.nt.TenantID, id, store.Actor{Email: "admin@example.com"})
	if err != nil {
		t.Fatal(err)
	}
	if rep.ItemID != id || rep.UserID != alice.UserID || rep.Rows != 2 || rep.Edges == 0 || !rep.MessageRemoved {
		t.Fatalf("report %+v: want both versions' rows, its edges and its one-part message", rep)
	}
	if naming() != 0 {
		t.Fatal("edges still name the redacted item")
	}
	for i, e := range []*memory.Engine{f.eng, other, f.engine()} {
		if _, ok := f.snapshot(t, e).Items[id]; ok {
			t.Fatalf("engine %d still holds the redacted item", i)
		}
	}
	f.mustBeClean(t, f.eng)
	f.mustBeClean(t, other)
	// The writer that loaded before the redaction reloads instead of
	// deriving from a graph that counted the item; a fresh one agrees.
	f.catchUp(t, stale)
	f.discuss(t, other, alice, 30, 4)
	f.catchUp(t, stale)
	f.catchUp(t, f.writer(t))
	rep2 := f.mustBeClean(t, other)
	if strings.Contains(rep2.Notes, "not caught up") {
		t.Fatalf("notes %q once the writers caught up", rep2.Notes)
	}
	for _, ls := range stale.Around(f.nt.TenantID, alice.UserID, []int64{id}, 0) {
		if len(ls) > 0 {
			t.Fatalf("the writer still links the redacted item: %v", ls)
		}
	}
	if got := f.userState(t, bob.UserID); got != bobBefore {
		t.Fatalf("bob's memory changed:\n%s\n---\n%s", bobBefore, got)
	}
	var detail string
	if err := f.owner.QueryRow(ctx, `SELECT detail::text FROM audit_log WHERE tenant_id = $1 AND action = 'memory.redact'`,
		f.nt.TenantID).Scan(&detail); err != nil {
		t.Fatal(err)
	}
	var d store.RedactReport
	if err := json.Unmarshal([]byte(detail), &d); err != nil || d.ItemID != id || d.UserID != alice.UserID {
		t.Fatalf("audit detail %s: %v", detail, err)
	}
	if strings.Contains(detail, "zqx7") || strings.Contains(detail, "kayak") {
		t.Fatalf("the audit carries content: %s", detail)
	}
}
