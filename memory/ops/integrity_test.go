package ops_test

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/perpetuity/perpetuity/memory"
	"github.com/perpetuity/perpetuity/memory/guard"
	"github.com/perpetuity/perpetuity/memory/ops"
	"github.com/perpetuity/perpetuity/memory/store"
)

// lyingArena alters what an arena reports, for the invariants no SQL can
// break from outside a serving process.
type lyingArena struct {
	ops.Arenas
	alter func(*memory.ArenaState)
}

func (l lyingArena) ArenaSnapshot(ctx context.Context, tenantID int64) (memory.ArenaState, error) {
	a, err := l.Arenas.ArenaSnapshot(ctx, tenantID)
	l.alter(&a)
	return a, err
}

// scene is what a case breaks: alice's first item, bob's conversation.
type scene struct {
	tenant, item, alice, bobConv int64
}

// TestIntegrityFindsEachBrokenInvariant breaks one invariant at a time, on
// purpose, in a tenant whose serving arena is warm, and checks that the
// report names exactly the invariants the break violates: the broken one
// and those that follow from it (a deleted row also makes the counts
// wrong).
func TestIntegrityFindsEachBrokenInvariant(t *testing.T) {
	t.Parallel()
	base := newFixture(t)
	cases := []struct {
		name  string
		sql   []string // $1 tenant, $2 item, $3 alice, $4 bob's conversation
		arena func(*memory.ArenaState)
		want  []string
	}{
		{name: "clean"},
		{name: "row deleted", sql: []string{
			`DELETE FROM retrieval_rows WHERE tenant_id = $1 AND item_id = $2 AND dict_version = 1 AND $3::bigint + $4::bigint <> 0`},
			want: []string{ops.InvRowMissing, ops.InvTermStats, ops.InvCorpusStats, ops.InvArenaExtra}},
		{name: "row altered", sql: []string{
			`UPDATE retrieval_rows SET term_ids = term_ids[2:], term_freqs = term_freqs[2:] WHERE tenant_id = $1 AND item_id = $2 AND $3::bigint + $4::bigint <> 0`},
			want: []string{ops.InvRowMismatch, ops.InvTermStats, ops.InvArenaDiffers}},
		{name: "document frequency off", sql: []string{
			`UPDATE term_stats SET df = df + 1 WHERE tenant_id = $1 AND dict_version = 1 AND term_id = (SELECT min(term_id) FROM term_stats WHERE tenant_id = $1) AND $2::bigint + $3::bigint + $4::bigint <> 0`},
			want: []string{ops.InvTermStats}},
		{name: "count of a term no row has", sql: []string{
			`INSERT INTO term_stats (tenant_id, dict_version, term_id, df) SELECT $1, 1, 77777, 2 WHERE $2::bigint + $3::bigint + $4::bigint <> 0`},
			want: []string{ops.InvTermStats}},
		{name: "corpus length off", sql: []string{
			`UPDATE corpus_stats SET total_length = total_length + 3 WHERE tenant_id = $1 AND $2::bigint + $3::bigint + $4::bigint <> 0`},
			want: []string{ops.InvCorpusStats}},
		{name: "birth activation deleted", sql: []string{
			`DELETE FROM activations WHERE tenant_id = $1 AND item_id = $2 AND viewer_id = $3 AND $4::bigint <> 0`},
			want: []string{ops.InvBirthActivation}},
		{name: "born cold", sql: []string{
			`UPDATE activations a SET t_last = i.born_clock - 1 FROM items i
				WHERE a.tenant_id = $1 AND a.item_id = $2 AND a.viewer_id = $3 AND i.tenant_id = $1 AND i.id = $2 AND $4::bigint <> 0`},
			want: []string{ops.InvBirthActivation}},
		{name: "decay constant rewritten", sql: []string{
			`UPDATE items SET tau = tau * 2 WHERE tenant_id = $1 AND id = $2 AND $3::bigint + $4::bigint <> 0`},
			// The owner activation's copy no longer agrees either.
			want: []string{ops.InvBirthActivation, ops.InvBirthChanged, ops.InvArenaDiffers}},
		{name: "novelty rewritten", sql: []string{
			`UPDATE items SET novelty = novelty + 0.25 WHERE tenant_id = $1 AND id = $2 AND $3::bigint + $4::bigint <> 0`},
			want: []string{ops.InvBirthChanged}},
		{name: "birth record deleted", sql: []string{
			`DELETE FROM item_births WHERE tenant_id = $1 AND item_id = $2 AND $3::bigint + $4::bigint <> 0`},
			want: []string{ops.InvBirthRecord}},
		{name: "item moved into another user's conversation", sql: []string{
			`UPDATE items SET conversation_id = $4 WHERE tenant_id = $1 AND id = $2 AND $3::bigint <> 0`},
			want: []string{ops.InvTenantConversation, ops.InvTenantMessage, ops.InvArenaDiffers}},
		{name: "item's copy of its message's cut-short flag rewritten", sql: []string{
			`UPDATE items SET interrupted = NOT interrupted WHERE tenant_id = $1 AND id = $2 AND $3::bigint + $4::bigint <> 0`},
			want: []string{ops.InvTenantMessage}},
		{name: "item owned by no user", sql: []string{
			`UPDATE items SET user_id = 424242 WHERE tenant_id = $1 AND id = $2 AND $3::bigint + $4::bigint <> 0`},
			want: []string{ops.InvTenantOwner, ops.InvTenantConversation, ops.InvTenantMessage, ops.InvBirthActivation, ops.InvArenaDiffers}},
		{name: "owner activation carrying another decay constant", sql: []string{
			`UPDATE activations SET tau = tau * 2 WHERE tenant_id = $1 AND item_id = $2 AND viewer_id = $3 AND $4::bigint <> 0`},
			want: []string{ops.InvBirthActivation}},
		{name: "activation by a viewer of no tenant", sql: []string{
			`INSERT INTO activations (tenant_id, viewer_id, item_id, t_last, peak) SELECT $1, 424242, $2, 0, 1 WHERE $3::bigint + $4::bigint <> 0`},
			want: []string{ops.InvTenantViewer}},
		{name: "item committed behind the arena's watermark", sql: []string{
			// A copy of the item under its seq: catch-up, having read past
			// that seq, never loads it. Everything else about it is right.
			`INSERT INTO items (tenant_id, message_id, user_id, conversation_id, role, speaker, part, body, tokens, token_count,
				born_clock, born_at, tau, novelty, seq)
			 SELECT tenant_id, message_id, user_id, conversation_id, role, speaker, 99, body, tokens, token_count,
				born_clock, born_at, tau, novelty, seq FROM items WHERE tenant_id = $1 AND id = $2 AND $3::bigint + $4::bigint <> 0`,
			`INSERT INTO retrieval_rows (tenant_id, dict_version, item_id, term_ids, term_freqs, length)
			 SELECT r.tenant_id, r.dict_version, c.id, r.term_ids, r.term_freqs, r.length FROM retrieval_rows r,
				(SELECT id FROM items WHERE tenant_id = $1 AND part = 99) c
			 WHERE r.tenant_id = $1 AND r.item_id = $2 AND $3::bigint + $4::bigint <> 0`,
			`INSERT INTO activations (tenant_id, viewer_id, item_id, t_last, peak)
			 SELECT a.tenant_id, a.viewer_id, c.id, a.t_last, a.peak FROM activations a, (SELECT id FROM items WHERE tenant_id = $1 AND part = 99) c
			 WHERE a.tenant_id = $1 AND a.item_id = $2 AND a.viewer_id = $3 AND $4::bigint <> 0`,
			`UPDATE term_stats SET df = df + 1 WHERE tenant_id = $1 AND dict_version = 1
				AND term_id = ANY(SELECT unnest(term_ids) FROM retrieval_rows WHERE tenant_id = $1 AND item_id = $2 AND dict_version = 1)
				AND $3::bigint + $4::bigint <> 0`,
			`UPDATE corpus_stats SET items = items + 1, total_length = total_length +
				(SELECT length FROM retrieval_rows WHERE tenant_id = $1 AND item_id = $2 AND dict_version = 1)
			 WHERE tenant_id = $1 AND dict_version = 1 AND $3::bigint + $4::bigint <> 0`},
			want: []string{ops.InvArenaMissing}},
		{name: "item deleted without a purge event", sql: []string{
			`UPDATE term_stats SET df = df - 1 WHERE tenant_id = $1 AND dict_version = 1
				AND term_id = ANY(SELECT unnest(term_ids) FROM retrieval_rows WHERE tenant_id = $1 AND item_id = $2 AND dict_version = 1)
				AND $3::bigint + $4::bigint <> 0`,
			`DELETE FROM term_stats WHERE tenant_id = $1 AND df = 0 AND $2::bigint + $3::bigint + $4::bigint <> 0`,
			`UPDATE corpus_stats SET items = items - 1, total_length = total_length -
				(SELECT length FROM retrieval_rows WHERE tenant_id = $1 AND item_id = $2 AND dict_version = 1)
			 WHERE tenant_id = $1 AND dict_version = 1 AND $3::bigint + $4::bigint <> 0`,
			`DELETE FROM items WHERE tenant_id = $1 AND id = $2 AND $3::bigint + $4::bigint <> 0`},
			want: []string{ops.InvArenaExtra}},
		{name: "user name unbound", sql: []string{
			`DELETE FROM bindings WHERE tenant_id = $1 AND user_id = $3 AND kind = 'user' AND $2::bigint + $4::bigint <> 0`},
			want: []string{ops.InvBindingUnbound}},
		{name: "conversation title unbound", sql: []string{
			`DELETE FROM bindings WHERE tenant_id = $1 AND conversation_id = $4 AND kind = 'title' AND $2::bigint + $3::bigint <> 0`},
			want: []string{ops.InvBindingUnbound}},
		{name: "title changed outside the log", sql: []string{
			`UPDATE conversations SET title = title || ' (edited)' WHERE tenant_id = $1 AND id = $4 AND $2::bigint + $3::bigint <> 0`},
			want: []string{ops.InvBindingStale}},
		{name: "binding of a conversation naming another user", sql: []string{
			`INSERT INTO bindings (tenant_id, kind, user_id, conversation_id, subject, value, source)
			 SELECT $1, 'hint', $3, $4, 'user', 'session-1', 'capture' WHERE $2::bigint <> 0`},
			want: []string{ops.InvBindingOwner}},
		{name: "arena segment that does not decode", sql: []string{
			`INSERT INTO arena_segments (tenant_id, dict_version, first_seq, last_seq, as_of, items, payload)
			 SELECT $1, dict_version, 0, seq, seq, 1, '\x01'::bytea FROM tenant_heads
			 WHERE tenant_id = $1 AND seq > 0 AND $2::bigint + $3::bigint + $4::bigint <> 0`},
			want: []string{ops.InvSegmentRows}},
		{name: "arena segment holding fewer rows than it says", sql: []string{
			`INSERT INTO arena_segments (tenant_id, dict_version, first_seq, last_seq, as_of, items, payload)
			 SELECT $1, dict_version, 0, seq, seq, 1, '\x01000000'::bytea FROM tenant_heads
			 WHERE tenant_id = $1 AND seq > 0 AND $2::bigint + $3::bigint + $4::bigint <> 0`},
			want: []string{ops.InvSegmentRows}},
		{name: "arena serving another version",
			arena: func(a *memory.ArenaState) { a.DictVersion = 7 },
			want:  []string{ops.InvArenaVersion}},
		{name: "arena holding an item twice",
			arena: func(a *memory.ArenaState) { a.Count++ },
			want:  []string{ops.InvArenaDuplicate}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			f := base.sibling(t)
			a := f.who(t, "alice", "a1")
			b := f.who(t, "bob", "b1")
			items := f.say(t, f.eng, a, 5, 0, 6)
			f.say(t, f.eng, b, 6, 0, 4)
			if s := f.snapshot(t, f.eng); s.Count != 10 {
				t.Fatalf("warm arena holds %d items", s.Count)
			}
			// The breaks edit term_stats and corpus_stats: every count is
			// folded in first (captures leave theirs in stat_deltas).
			if _, err := f.db.FoldStats(ctx, f.nt.TenantID); err != nil {
				t.Fatal(err)
			}
			sc := scene{tenant: f.nt.TenantID, item: items[0], alice: a.UserID, bobConv: b.ConversationID}
			for i, q := range c.sql {
				if f.exec(t, q, sc.tenant, sc.item, sc.alice, sc.bobConv) == 0 && i == 0 {
					t.Fatalf("the break changed nothing: %s", q)
				}
			}
			var arenas ops.Arenas = f.eng
			if c.arena != nil {
				arenas = lyingArena{Arenas: f.eng, alter: c.arena}
			}
			rep, vs, err := (&ops.Checker{St: f.db, Arenas: arenas, Batch: 3}).Check(ctx, f.nt.TenantID, admin)
			if err != nil {
				t.Fatal(err)
			}
			got := slices.Sorted(maps.Keys(rep.Counts))
			want := slices.Sorted(slices.Values(c.want))
			if !slices.Equal(got, want) {
				for _, v := range vs {
					t.Logf("%s: %s %s", v.Invariant, v.Detail, v.Rows)
				}
				t.Fatalf("violated %v, want %v", got, want)
			}
			if rep.Violations != int64(len(vs)) || rep.Items < 9 || rep.Error != "" || !strings.Contains(rep.Notes, "chain edges") {
				t.Fatalf("report %+v", rep)
			}
			for _, v := range vs {
				if (strings.HasPrefix(v.Invariant, "row.") || strings.HasPrefix(v.Invariant, "birth.")) &&
					(v.ItemID == nil || *v.ItemID != sc.item) {
					t.Errorf("%s names item %v, want %d", v.Invariant, v.ItemID, sc.item)
				}
				if strings.Contains(string(v.Rows), "Zorblax") || strings.Contains(v.Detail, "garden") {
					t.Errorf("a violation carries content: %s %s", v.Detail, v.Rows)
				}
			}
			kept, kvs, err := f.db.IntegrityReportByID(ctx, f.nt.TenantID, rep.ID, 1000)
			if err != nil {
				t.Fatal(err)
			}
			if kept.FinishedAt == nil || kept.Violations != rep.Violations || len(kvs) != len(vs) || !maps.Equal(kept.Counts, rep.Counts) {
				t.Fatalf("kept report %+v with %d violations, ran %+v with %d", kept, len(kvs), rep, len(vs))
			}
			if _, _, err := f.db.IntegrityReportByID(ctx, base.nt.TenantID, rep.ID, 10); err == nil {
				t.Fatal("another tenant read this tenant's report")
			}
		})
	}
}

// sibling is another tenant in the same database, with its own engine.
func (f *fixture) sibling(t *testing.T) *fixture {
	t.Helper()
	nt, err := f.db.CreateTenantWith(context.Background(), "acme "+t.Name(), "alice", store.TenantOptions{Dict: 1})
	if err != nil {
		t.Fatal(err)
	}
	s := &fixture{db: f.db, owner: f.owner, nt: nt, v1: f.v1, v2: f.v2}
	s.eng = s.engine()
	return s
}

// TestIntegrityWithoutArena: a check with no serving engine says so
// instead of passing the arena silently.
func TestIntegrityWithoutArena(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.say(t, f.eng, f.who(t, "alice", "c"), 7, 0, 3)
	rep, vs, err := (&ops.Checker{St: f.db}).Check(context.Background(), f.nt.TenantID, store.Actor{Email: "cli"})
	if err != nil || len(vs) != 0 {
		t.Fatalf("%v %v", vs, err)
	}
	if !strings.Contains(rep.Notes, "arena not compared") {
		t.Fatalf("notes %q", rep.Notes)
	}
	list, err := f.db.IntegrityReports(context.Background(), f.nt.TenantID, 10)
	if err != nil || len(list) != 1 || list[0].ID != rep.ID || list[0].Actor != "cli" {
		t.Fatalf("reports %+v %v", list, err)
	}
}

// TestIntegrityChecksShareASmallPool: concurrent first checks (no
// dictionary cached yet) on a pool of one connection finish. A check that
// asked the pool for a second connection while its snapshot held the only
// one waited forever, and every sign-up and page behind it with it.
func TestIntegrityChecksShareASmallPool(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	url := f.db.Pool.Config().ConnString()
	f.say(t, f.eng, f.who(t, "alice", "c"), 7, 0, 3)
	sep := "?"
	if strings.Contains(url, "?") {
		sep = "&"
	}
	one := openDB(t, url+sep+"pool_max_conns=1")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c := &ops.Checker{St: one}
	errs := make(chan error, 3)
	for range 3 {
		go func() {
			_, vs, err := c.Check(ctx, f.nt.TenantID, admin)
			if err == nil && len(vs) != 0 {
				err = fmt.Errorf("violations %v", vs)
			}
			errs <- err
		}()
	}
	for range 3 {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
}

// chainScene is what a chain case breaks: alice's items (two
// conversations), bob's.
type chainScene struct {
	f          *fixture
	alice, bob memory.Who
	aliceItems []int64
	bobItems   []int64
}

// newChainScene is a tenant whose chain writer caught up on alice's and
// bob's threads.
func newChainScene(t *testing.T, base *fixture) *chainScene {
	t.Helper()
	f := base.sibling(t)
	s := &chainScene{f: f, alice: f.who(t, "alice", "a1"), bob: f.who(t, "bob", "b1")}
	a2 := f.who(t, "alice", "a2")
	s.aliceItems = append(f.discuss(t, f.eng, s.alice, 0, 10), f.discuss(t, f.eng, a2, 10, 10)...)
	s.bobItems = f.discuss(t, f.eng, s.bob, 0, 12)
	// A reply in another conversation that drew on bob's first turns (a
	// reply's own conversation is what it answers, not what it drew on).
	c, err := f.eng.Capture(context.Background(), memory.Message{Who: f.who(t, "bob", "b2"), Role: "assistant", Position: 0,
		Text: strings.Join(topics[0], " ") + " (again)", At: time.Date(2026, 1, 3, 3, 4, 0, 0, time.UTC), Sources: s.bobItems[:4]})
	if err != nil {
		t.Fatal(err)
	}
	s.bobItems = append(s.bobItems, c.ItemIDs...)
	f.catchUp(t, f.writer(t))
	n := f.int64(t, `SELECT count(*) FROM chain_edges WHERE tenant_id = $1 AND user_id = $2`, f.nt.TenantID, s.alice.UserID)
	m := f.int64(t, `SELECT count(*) FROM chain_edges WHERE tenant_id = $1 AND user_id = $2 AND relation = 'evidence'`, f.nt.TenantID, s.bob.UserID)
	if n == 0 || m == 0 {
		t.Fatalf("alice has %d edges, bob %d evidence edges: the scene shows nothing", n, m)
	}
	return s
}

// TestIntegrityFindsBrokenChain breaks the chain graph one way at a time
// and checks that the report names exactly the invariants broken, and
// that an untouched graph passes, its rebuild included.
func TestIntegrityFindsBrokenChain(t *testing.T) {
	t.Parallel()
	base := newFixture(t)
	// $1 tenant, $2 alice, $3 bob, $4 alice's first item, $5 bob's last.
	cases := []struct {
		name    string
		sql     string
		replica bool // foreign keys off, as only a superuser can
		want    []string
	}{
		{name: "clean"},
		{name: "edge across owners", sql: `INSERT INTO chain_edges (tenant_id, src_id, dst_id, relation, user_id, weight)
			SELECT $1, $5, $4, 'thread', $3, 9 WHERE $2::bigint <> 0`,
			want: []string{ops.InvChainOwner, ops.InvChainRebuild}},
		{name: "edge handed to another owner", sql: `UPDATE chain_edges SET user_id = $3 WHERE tenant_id = $1 AND user_id = $2
			AND src_id = (SELECT min(src_id) FROM chain_edges WHERE tenant_id = $1 AND user_id = $2) AND $4::bigint + $5::bigint <> 0`,
			want: []string{ops.InvChainOwner, ops.InvChainRebuild}},
		{name: "edge of a user of no tenant", sql: `UPDATE chain_edges SET user_id = 424242 WHERE tenant_id = $1 AND user_id = $2
			AND src_id = (SELECT min(src_id) FROM chain_edges WHERE tenant_id = $1 AND user_id = $2) AND $3::bigint + $4::bigint + $5::bigint <> 0`,
			want: []string{ops.InvChainOwner, ops.InvChainRebuild}},
		{name: "extra edge within one owner", sql: `INSERT INTO chain_edges (tenant_id, src_id, dst_id, relation, user_id, weight)
			SELECT $1, s.id, d.id, 'thread', $2, 9 FROM items s, items d
			WHERE s.tenant_id = $1 AND d.tenant_id = $1 AND s.user_id = $2 AND d.user_id = $2 AND d.id < s.id
			  AND NOT EXISTS (SELECT 1 FROM chain_edges e WHERE e.tenant_id = $1 AND e.src_id = s.id AND e.dst_id = d.id)
			  AND $3::bigint + $4::bigint + $5::bigint <> 0
			ORDER BY s.id, d.id LIMIT 1`,
			want: []string{ops.InvChainRebuild}},
		{name: "edge deleted", sql: `DELETE FROM chain_edges WHERE tenant_id = $1 AND user_id = $2
			AND src_id = (SELECT max(src_id) FROM chain_edges WHERE tenant_id = $1 AND user_id = $2) AND $3::bigint + $4::bigint + $5::bigint <> 0`,
			want: []string{ops.InvChainRebuild}},
		{name: "weight rewritten", sql: `UPDATE chain_edges SET weight = weight * 2 WHERE tenant_id = $1 AND user_id = $3
			AND src_id = (SELECT min(src_id) FROM chain_edges WHERE tenant_id = $1 AND user_id = $3) AND $2::bigint + $4::bigint + $5::bigint <> 0`,
			want: []string{ops.InvChainRebuild}},
		{name: "dangling end", replica: true, sql: `INSERT INTO chain_edges (tenant_id, src_id, dst_id, relation, user_id, weight)
			SELECT $1, 1099511627776, $4, 'thread', $2, 9 WHERE $3::bigint + $5::bigint <> 0`,
			want: []string{ops.InvChainDangling, ops.InvChainRebuild}},
		{name: "watermark past the head", sql: `UPDATE chain_heads SET seq = seq + 5 WHERE tenant_id = $1 AND $2::bigint + $3::bigint + $4::bigint + $5::bigint <> 0`,
			want: []string{ops.InvChainWatermark}},
		{name: "watermark reset, edges kept", sql: `UPDATE chain_heads SET seq = 0 WHERE tenant_id = $1 AND $2::bigint + $3::bigint + $4::bigint + $5::bigint <> 0`,
			want: []string{ops.InvChainRebuild}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			s := newChainScene(t, base)
			f := s.f
			args := []any{f.nt.TenantID, s.alice.UserID, s.bob.UserID, s.aliceItems[0], s.bobItems[len(s.bobItems)-1]}
			switch {
			case c.replica:
				tx, err := f.owner.Begin(ctx)
				if err != nil {
					t.Fatal(err)
				}
				defer tx.Rollback(ctx)
				if _, err := tx.Exec(ctx, `SET LOCAL session_replication_role = replica`); err != nil {
					t.Fatal(err)
				}
				if tag, err := tx.Exec(ctx, c.sql, args...); err != nil || tag.RowsAffected() == 0 {
					t.Fatalf("the break changed nothing: %v", err)
				}
				if err := tx.Commit(ctx); err != nil {
					t.Fatal(err)
				}
			case c.sql != "":
				if f.exec(t, c.sql, args...) == 0 {
					t.Fatalf("the break changed nothing: %s", c.sql)
				}
			}
			rep, vs, err := f.checker(t, f.eng).Check(ctx, f.nt.TenantID, admin)
			if err != nil {
				t.Fatal(err)
			}
			got := slices.Sorted(maps.Keys(rep.Counts))
			if want := slices.Sorted(slices.Values(c.want)); !slices.Equal(got, want) {
				for _, v := range vs {
					t.Logf("%s: %s %s", v.Invariant, v.Detail, v.Rows)
				}
				t.Fatalf("violated %v, want %v", got, want)
			}
			for _, v := range vs {
				if strings.HasPrefix(v.Invariant, "chain.") && v.Invariant != ops.InvChainWatermark && v.ItemID == nil {
					t.Errorf("%s names no item: %s", v.Invariant, v.Detail)
				}
				if strings.Contains(v.Detail+string(v.Rows), "kayak") {
					t.Errorf("a violation carries content: %s %s", v.Detail, v.Rows)
				}
			}
			if strings.Contains(rep.Notes, "not caught up") != (c.name == "watermark reset, edges kept") {
				t.Fatalf("notes %q", rep.Notes)
			}
		})
	}
}

// TestIntegrityChainWriterBehind: turns the writer has not reached yet are
// no violation: the graph is compared up to its watermark, and the report
// says how far.
func TestIntegrityChainWriterBehind(t *testing.T) {
	t.Parallel()
	s := newChainScene(t, newFixture(t))
	f := s.f
	f.discuss(t, f.eng, s.alice, 20, 8)
	rep := f.mustBeClean(t, f.eng)
	if !strings.Contains(rep.Notes, "not caught up") {
		t.Fatalf("notes %q", rep.Notes)
	}
	f.catchUp(t, f.writer(t))
	if rep := f.mustBeClean(t, f.eng); strings.Contains(rep.Notes, "chain edges") {
		t.Fatalf("notes %q once the writer caught up", rep.Notes)
	}
}

// panickyArenas panics when the check asks for the serving arena.
type panickyArenas struct{}

func (panickyArenas) ArenaSnapshot(context.Context, int64) (memory.ArenaState, error) {
	var m map[int64]int
	m[1]++ // a nil map: a runtime error, as a bug would be
	return memory.ArenaState{}, nil
}

// TestIntegrityCheckPanics: a check that panics midway is finished like
// one that failed, its report saying so without the stack (the console
// shows it), rather than left running for ever; the process goes on.
func TestIntegrityCheckPanics(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.say(t, f.eng, f.who(t, "alice", "c"), 7, 0, 3)
	ctx := context.Background()
	rep, _, err := (&ops.Checker{St: f.db, Arenas: panickyArenas{}}).Check(ctx, f.nt.TenantID, store.Actor{Email: "cli"})
	var p *guard.Panic
	if !errors.As(err, &p) {
		t.Fatalf("err %v, want the panic as an error", err)
	}
	if !strings.HasPrefix(rep.Error, "the check panicked: assignment to entry in nil map") || strings.Contains(rep.Error, "goroutine") {
		t.Fatalf("report error %q", rep.Error)
	}
	list, err := f.db.IntegrityReports(ctx, f.nt.TenantID, 10)
	if err != nil || len(list) != 1 || list[0].FinishedAt == nil || list[0].Error != rep.Error {
		t.Fatalf("stored reports %+v %v: want it finished with the panic", list, err)
	}
}
