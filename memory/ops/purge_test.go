package ops_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/perpetuity/perpetuity/memory"
	"github.com/perpetuity/perpetuity/memory/ops"
	"github.com/perpetuity/perpetuity/memory/store"
)

// userState is every row that is about one memory user's memory, as text.
func (f *fixture) userState(t *testing.T, userID int64) string {
	t.Helper()
	var b strings.Builder
	for _, q := range []string{
		`SELECT id || ':' || tau || ':' || novelty || ':' || born_clock || ':' || seq || ':' || body FROM items WHERE tenant_id = $1 AND user_id = $2 ORDER BY id`,
		`SELECT r.item_id || ':' || r.dict_version || ':' || r.term_ids::text || ':' || r.length FROM retrieval_rows r
			JOIN items i ON i.tenant_id = r.tenant_id AND i.id = r.item_id WHERE r.tenant_id = $1 AND i.user_id = $2 ORDER BY 1`,
		`SELECT item_id || ':' || t_last || ':' || peak FROM activations WHERE tenant_id = $1 AND viewer_id = $2 ORDER BY 1`,
		`SELECT item_id || ':' || clock || ':' || peak FROM reheats WHERE tenant_id = $1 AND viewer_id = $2 ORDER BY 1`,
		`SELECT id || ':' || ext_key FROM conversations WHERE tenant_id = $1 AND user_id = $2 ORDER BY 1`,
		`SELECT id || ':' || position FROM messages WHERE tenant_id = $1 AND user_id = $2 ORDER BY 1`,
		`SELECT b.item_id || ':' || b.tau FROM item_births b JOIN items i ON i.tenant_id = b.tenant_id AND i.id = b.item_id
			WHERE b.tenant_id = $1 AND i.user_id = $2 ORDER BY 1`,
		`SELECT src_id || '>' || dst_id || ':' || relation || ':' || weight FROM chain_edges WHERE tenant_id = $1 AND user_id = $2 ORDER BY 1`,
		`SELECT s.message_id || ':' || s.item_ids::text FROM reply_sources s JOIN messages m ON m.tenant_id = s.tenant_id AND m.id = s.message_id
			WHERE s.tenant_id = $1 AND m.user_id = $2 ORDER BY 1`,
		`SELECT p.request_id || ':' || p.record::text || ':' || (SELECT string_agg(x.item_id || '/' || x.shown, ',' ORDER BY x.item_id)
			FROM request_inspection_items x WHERE x.tenant_id = p.tenant_id AND x.request_id = p.request_id)
			FROM request_inspections p WHERE p.tenant_id = $1 AND p.user_id = $2 ORDER BY 1`,
	} {
		rows, err := f.owner.Query(context.Background(), q, f.nt.TenantID, userID)
		if err != nil {
			t.Fatal(err)
		}
		for rows.Next() {
			var s string
			if err := rows.Scan(&s); err != nil {
				t.Fatal(err)
			}
			b.WriteString(s + "\n")
		}
		rows.Close()
		b.WriteString("--\n")
	}
	return b.String()
}

// TestPurgeReachesEveryProcess: alice is purged through the store while two
// serving processes hold warm arenas (and a rollout keeps a second
// version) and the chain writer has linked both users' threads. Neither
// arena, nor the store, nor the chain graph keeps a trace of her; bob's
// memory is exactly what it was, his edges included; the counts equal a
// recount and the graph its rebuild; the audit entry says how much, never
// what.
func TestPurgeReachesEveryProcess(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newFixture(t)
	other := f.engine()
	alice := f.who(t, "alice", "a1")
	alice2 := f.who(t, "alice", "a2")
	bob := f.who(t, "bob", "b1")
	aliceItems := append(f.say(t, f.eng, alice, 8, 0, 8), f.say(t, other, alice2, 9, 0, 4)...)
	f.say(t, other, bob, 10, 0, 7)
	aliceItems = append(aliceItems, f.discuss(t, f.eng, f.who(t, "alice", "a3"), 0, 8)...)
	bobThread := append(f.discuss(t, other, bob, 7, 8), f.discuss(t, other, f.who(t, "bob", "b2"), 0, 8)...)
	graph := f.writer(t)
	f.catchUp(t, graph)
	edgesOf := func(user int64) int64 {
		return f.int64(t, `SELECT count(*) FROM chain_edges WHERE tenant_id = $1 AND user_id = $2`, f.nt.TenantID, user)
	}
	aliceEdges := edgesOf(alice.UserID)
	linked := func(user int64, ids []int64) int {
		n := 0
		for _, ls := range graph.Around(f.nt.TenantID, user, ids, 0) {
			n += len(ls)
		}
		return n
	}
	if aliceEdges == 0 || edgesOf(bob.UserID) == 0 || linked(alice.UserID, aliceItems) == 0 || linked(bob.UserID, bobThread) == 0 {
		t.Fatalf("alice has %d edges, bob %d: the chain graph shows nothing", aliceEdges, edgesOf(bob.UserID))
	}
	if _, err := (&ops.Deriver{St: f.db}).Derive(ctx, f.nt.TenantID, 2, admin); err != nil {
		t.Fatal(err)
	}
	for _, q := range []memory.FrameQuery{
		{Who: alice, Live: "garden tomatoes Zorblax", Now: time.Now()},
		{Who: bob, Live: "garden tomatoes Zorblax", Now: time.Now()},
	} {
		for _, e := range []*memory.Engine{f.eng, other} {
			if _, err := e.Frame(ctx, q); err != nil { // warm both arenas, leave reheats
				t.Fatal(err)
			}
		}
	}
	for _, e := range []*memory.Engine{f.eng, other} {
		if a := f.snapshot(t, e); a.Count != 43 {
			t.Fatalf("warm arena holds %d items, want 43", a.Count)
		}
	}
	// The request inspector's records: alice's, bob's own, and one of
	// bob's whose frame left out an item of alice's (a record naming her
	// memory goes with it, whoever asked).
	inspect := func(who memory.Who, rid string, shown, left int64) {
		t.Helper()
		in := &store.Inspection{Question: "garden tomatoes Zorblax", Reply: "the tomatoes",
			Items: []store.InspectItem{{ID: shown, Shown: true, Reasons: []string{"match"}}}}
		if left != 0 {
			in.Items = append(in.Items, store.InspectItem{ID: left, Reasons: []string{"neighbour"}})
		}
		if err := f.db.RecordRequest(ctx, store.RequestRecord{TenantID: f.nt.TenantID, RequestID: rid, UserID: who.UserID,
			Dialect: "openai", Provider: "openai", Status: 200, Inspection: in, InspectRetention: time.Hour}); err != nil {
			t.Fatal(err)
		}
	}
	inspect(alice, "r-alice", aliceItems[0], aliceItems[1])
	inspect(bob, "r-bob", bobThread[0], 0)
	bobBefore := f.userState(t, bob.UserID) // without the record that names alice's item
	inspect(bob, "r-bob-alice", bobThread[1], aliceItems[2])
	if err := f.db.RenameUser(ctx, f.nt.TenantID, alice.UserID, "Alice Martin", "console"); err != nil {
		t.Fatal(err)
	}
	bindingsOf := func(user int64) string {
		var s string
		if err := f.owner.QueryRow(ctx, `SELECT coalesce(string_agg(kind || ':' || value || '/' || source, ',' ORDER BY id), '')
			FROM bindings WHERE tenant_id = $1 AND user_id = $2`, f.nt.TenantID, user).Scan(&s); err != nil {
			t.Fatal(err)
		}
		return s
	}
	bobBindings := bindingsOf(bob.UserID)

	id, rep, err := ops.PurgeByName(ctx, f.db, f.nt.TenantID, "alice", store.Actor{Email: "admin@example.com"})
	if err != nil {
		t.Fatal(err)
	}
	if id != alice.UserID || rep.Items != 20 || rep.Messages != 20 || rep.Conversations != 3 || rep.Edges != aliceEdges || rep.Inspections != 2 {
		t.Fatalf("purge report %+v for user %d", rep, id)
	}
	for i, e := range []*memory.Engine{f.eng, other, f.engine()} {
		a := f.snapshot(t, e)
		for _, it := range aliceItems {
			if _, ok := a.Items[it]; ok {
				t.Fatalf("engine %d still holds alice's item %d", i, it)
			}
		}
		if a.Count != 23 {
			t.Fatalf("engine %d holds %d items after the purge, want bob's 23", i, a.Count)
		}
	}
	if s := f.userState(t, alice.UserID); strings.Trim(s, "-\n") != "" {
		t.Fatalf("alice's rows after the purge:\n%s", s)
	}
	if n := f.int64(t, `SELECT count(*) FROM retrieval_rows r WHERE r.tenant_id = $1 AND r.item_id = ANY($2)`, f.nt.TenantID, aliceItems); n != 0 {
		t.Fatalf("%d of alice's rows left", n)
	}
	// The binding history goes with the memory; the user remains, named.
	if got := bindingsOf(alice.UserID); got != "user:Alice Martin/purge" || rep.Bindings < 4 {
		t.Fatalf("alice's bindings after the purge %q (%d purged)", got, rep.Bindings)
	}
	if got := bindingsOf(bob.UserID); got != bobBindings || got == "" {
		t.Fatalf("bob's bindings changed: %q, were %q", got, bobBindings)
	}
	if n := f.int64(t, `SELECT count(*) FROM request_inspection_items WHERE tenant_id = $1 AND item_id = ANY($2)`, f.nt.TenantID, aliceItems); n != 0 {
		t.Fatalf("%d inspector rows still name alice's items", n)
	}
	if n := f.int64(t, `SELECT count(*) FROM request_inspections WHERE tenant_id = $1 AND user_id = $2`, f.nt.TenantID, bob.UserID); n != 1 {
		t.Fatalf("%d of bob's inspector records left, want his own 1 of 2", n)
	}
	if got := f.userState(t, bob.UserID); got != bobBefore {
		t.Fatalf("bob's memory changed:\n%s\n---\n%s", bobBefore, got)
	}
	// The writer follows the purge: alice's links go, bob's stay.
	f.catchUp(t, graph)
	if linked(alice.UserID, aliceItems) != 0 || linked(bob.UserID, bobThread) == 0 {
		t.Fatalf("after the purge the writer links %d of alice's items' neighbours, %d of bob's", linked(alice.UserID, aliceItems), linked(bob.UserID, bobThread))
	}
	f.mustBeClean(t, other) // counts of both versions equal their recount, the graph its rebuild
	f.mustBeClean(t, f.eng)

	var detail, target, actor string
	if err := f.owner.QueryRow(ctx, `SELECT detail::text, target, actor_email FROM audit_log
		WHERE tenant_id = $1 AND action = 'memory.purge'`, f.nt.TenantID).Scan(&detail, &target, &actor); err != nil {
		t.Fatal(err)
	}
	if actor != "admin@example.com" || !strings.Contains(detail, `"items": 20`) || strings.Contains(detail, "garden") {
		t.Fatalf("audit entry %s %s %s", actor, target, detail)
	}
	if _, _, err := ops.PurgeByName(ctx, f.db, f.nt.TenantID, "nobody", admin); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("purge of an unknown user: %v", err)
	}
	if n := f.int64(t, `SELECT count(*) FROM memory_users WHERE tenant_id = $1 AND name = 'nobody'`, f.nt.TenantID); n != 0 {
		t.Fatal("looking a user up created it")
	}
}
