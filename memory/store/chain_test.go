package store_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/perpetuity/perpetuity/memory/store"
	"github.com/perpetuity/perpetuity/memory/store/storetest"
)

// chainTenant is a tenant with alice (its first user), bob and gone, each
// with a conversation or two.
type chainTenant struct {
	db                       *store.DB
	id                       int64
	alice, bob, gone         int64
	alice1, alice2, bob1, g1 int64
	pos                      int
}

func newChainTenant(t *testing.T, db *store.DB) *chainTenant {
	t.Helper()
	ctx := context.Background()
	nt, err := db.CreateTenantWith(ctx, "chain "+t.Name(), "alice", store.TenantOptions{Dict: 1})
	if err != nil {
		t.Fatal(err)
	}
	c := &chainTenant{db: db, id: nt.TenantID, alice: nt.UserID}
	for _, u := range []struct {
		name string
		id   *int64
	}{{"bob", &c.bob}, {"gone", &c.gone}} {
		if *u.id, err = db.EnsureUser(ctx, c.id, u.name); err != nil {
			t.Fatal(err)
		}
	}
	for _, cv := range []struct {
		user int64
		key  string
		id   *int64
	}{{c.alice, "a1", &c.alice1}, {c.alice, "a2", &c.alice2}, {c.bob, "b1", &c.bob1}, {c.gone, "g1", &c.g1}} {
		if *cv.id, err = db.EnsureConversation(ctx, c.id, cv.user, cv.key, ""); err != nil {
			t.Fatal(err)
		}
	}
	return c
}

// say captures one single-item message of user in conv.
func (c *chainTenant) say(t *testing.T, user, conv int64, role, words string, sources ...int64) store.Captured {
	t.Helper()
	c.pos++
	ws := strings.Fields(words)
	got, err := c.db.Capture(context.Background(), store.Capture{TenantID: c.id, UserID: user, ConversationID: conv,
		Role: role, Position: c.pos, Fingerprint: []byte(fmt.Sprint(c.pos, words)), CreatedAt: time.Now(), ClockAdvance: 3,
		Items: []store.CaptureItem{{Body: words, Tokens: ws, TokenCount: len(ws) + 1, Tau: 1000, Novelty: 0.5,
			Rows: []store.RetrievalRow{{DictVersion: 1, TermIDs: []int32{1}, Freqs: []int16{1}, Length: 1}}}},
		Sources: sources})
	if err != nil {
		t.Fatal(err)
	}
	return got
}

func seqs(items []store.ChainItem) []int64 {
	out := make([]int64, len(items))
	for i, it := range items {
		out[i] = it.Seq
	}
	return out
}

// TestReadChainBatch: a batch is the items and purges of its stretch of
// the log in seq order, bounded by the head, with each reply's sources
// (only the replier's own items, once each, ascending).
func TestReadChainBatch(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := newChainTenant(t, openDB(t))
	a1 := c.say(t, c.alice, c.alice1, "user", "kayak lesson saturday")
	g := c.say(t, c.gone, c.g1, "user", "kayak lesson")
	b := c.say(t, c.bob, c.bob1, "user", "kayak")
	a0 := c.say(t, c.alice, c.alice1, "user", "an earlier turn")
	reply := c.say(t, c.alice, c.alice2, "assistant", "your kayak lesson",
		a1.ItemIDs[0], b.ItemIDs[0], 1<<40, a0.ItemIDs[0], a1.ItemIDs[0], g.ItemIDs[0])
	rep, err := c.db.PurgeUser(ctx, c.id, c.gone, store.Actor{Email: "test"})
	if err != nil {
		t.Fatal(err)
	}
	last := c.say(t, c.alice, c.alice2, "user", "after the purge")

	cb, err := c.db.ReadChainBatch(ctx, c.id, 0, 1000)
	if err != nil {
		t.Fatal(err)
	}
	if cb.Head != last.Seq || cb.Upto != last.Seq {
		t.Fatalf("head %d upto %d, want %d", cb.Head, cb.Upto, last.Seq)
	}
	if got, want := seqs(cb.Items), []int64{a1.Seq, b.Seq, a0.Seq, reply.Seq, last.Seq}; !slices.Equal(got, want) {
		t.Fatalf("items at seqs %v, want %v (the purged user's gone)", got, want)
	}
	if len(cb.Purges) != 1 || cb.Purges[0].Seq != rep.Seq || cb.Purges[0].Kind != "purge" ||
		cb.Purges[0].UserID == nil || *cb.Purges[0].UserID != c.gone {
		t.Fatalf("purges %+v, want gone's at %d", cb.Purges, rep.Seq)
	}
	r := cb.Items[3]
	wantSrc := []int64{a1.ItemIDs[0], a0.ItemIDs[0]}
	slices.Sort(wantSrc)
	if r.ID != reply.ItemIDs[0] || r.UserID != c.alice || r.ConvID != c.alice2 || r.Role != "assistant" ||
		r.TokenCount != 4 || !slices.Equal(r.Tokens, []string{"your", "kayak", "lesson"}) || !slices.Equal(r.Sources, wantSrc) {
		t.Fatalf("reply %+v, want sources %v", r, wantSrc)
	}
	for _, it := range cb.Items {
		if it.ID != r.ID && len(it.Sources) != 0 {
			t.Fatalf("item %d has sources %v", it.ID, it.Sources)
		}
	}

	cases := []struct {
		name         string
		after, upto  int64
		wantUpto     int64
		items, purge []int64
	}{
		{"a middle stretch", a1.Seq, reply.Seq, reply.Seq, []int64{b.Seq, a0.Seq, reply.Seq}, nil},
		{"the purge alone", reply.Seq, rep.Seq, rep.Seq, nil, []int64{rep.Seq}},
		{"past the head, bounded by it", a0.Seq, 1 << 40, last.Seq, []int64{reply.Seq, last.Seq}, []int64{rep.Seq}},
		{"at the head", last.Seq, last.Seq + 5, last.Seq, nil, nil},
		{"after the head: no progress", last.Seq + 3, last.Seq + 9, last.Seq + 3, nil, nil},
	}
	for _, k := range cases {
		cb, err := c.db.ReadChainBatch(ctx, c.id, k.after, k.upto)
		if err != nil {
			t.Fatal(err)
		}
		var ps []int64
		for _, p := range cb.Purges {
			ps = append(ps, p.Seq)
		}
		if cb.Upto != k.wantUpto || !slices.Equal(seqs(cb.Items), k.items) || !slices.Equal(ps, k.purge) || cb.Head != last.Seq {
			t.Errorf("%s: upto %d items %v purges %v head %d, want %d %v %v %d", k.name, cb.Upto, seqs(cb.Items), ps, cb.Head,
				k.wantUpto, k.items, k.purge, last.Seq)
		}
	}
}

func edgeKeys(es []store.ChainEdgeSized) []string {
	out := make([]string, len(es))
	for i, e := range es {
		out[i] = fmt.Sprintf("%d>%d %s u%d %.2f", e.Src, e.Dst, e.Relation, e.UserID, e.Weight)
	}
	return out
}

// TestWriteChainEdges: edges and the watermark move together, from where
// the writer says the watermark is; a wrong from, or an end a purge
// removed, writes nothing.
func TestWriteChainEdges(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := newChainTenant(t, openDB(t))
	a := c.say(t, c.alice, c.alice1, "user", "kayak lesson").ItemIDs[0]
	a2 := c.say(t, c.alice, c.alice2, "user", "kayak lesson again").ItemIDs[0]
	g := c.say(t, c.gone, c.g1, "user", "kayak").ItemIDs[0]
	g2 := c.say(t, c.gone, c.g1, "user", "kayak kayak").ItemIDs[0]
	head := c.say(t, c.bob, c.bob1, "user", "unrelated").Seq

	if mark, err := c.db.ChainHead(ctx, c.id); err != nil || mark != 0 {
		t.Fatalf("a tenant no writer wrote: watermark %d %v", mark, err)
	}
	e1 := store.ChainEdge{Src: a2, Dst: a, Relation: "thread", UserID: c.alice, Weight: 2.5}
	if err := c.db.WriteChainEdges(ctx, c.id, 0, 3, 3, []store.ChainEdge{e1}); err != nil {
		t.Fatal(err)
	}
	// No edge to add moves the watermark all the same; an edge written
	// again (a writer that reloaded) is no duplicate.
	if err := c.db.WriteChainEdges(ctx, c.id, 3, 4, 4, []store.ChainEdge{e1}); err != nil {
		t.Fatal(err)
	}
	check := func(what string, mark int64, want ...string) {
		t.Helper()
		got, err := c.db.ChainHead(ctx, c.id)
		if err != nil {
			t.Fatal(err)
		}
		es, err := c.db.ChainEdges(ctx, c.id)
		if err != nil {
			t.Fatal(err)
		}
		if got != mark || !slices.Equal(edgeKeys(es), want) {
			t.Fatalf("%s: watermark %d edges %v, want %d %v", what, got, edgeKeys(es), mark, want)
		}
	}
	want1 := fmt.Sprintf("%d>%d thread u%d 2.50", a2, a, c.alice)
	check("written", 4, want1)
	es, _ := c.db.ChainEdges(ctx, c.id)
	if es[0].SrcTokens != 4 || es[0].DstTokens != 3 {
		t.Fatalf("token counts %+v", es[0])
	}

	e2 := store.ChainEdge{Src: g2, Dst: g, Relation: "evidence", UserID: c.gone, Weight: 1}
	for _, from := range []int64{0, 3, 5} {
		if err := c.db.WriteChainEdges(ctx, c.id, from, head, head, []store.ChainEdge{e2}); !errors.Is(err, store.ErrChainMoved) {
			t.Fatalf("from %d with the watermark at 4: %v, want ErrChainMoved", from, err)
		}
	}
	check("refused", 4, want1)

	if _, err := c.db.PurgeUser(ctx, c.id, c.gone, store.Actor{Email: "test"}); err != nil {
		t.Fatal(err)
	}
	if err := c.db.WriteChainEdges(ctx, c.id, 4, head, head, []store.ChainEdge{e2}); !errors.Is(err, store.ErrChainGone) {
		t.Fatalf("an edge between purged items: %v, want ErrChainGone", err)
	}
	check("an end purged", 4, want1)
	if err := c.db.WriteChainEdges(ctx, c.id, 4, head, head, nil); err != nil {
		t.Fatal(err)
	}
	check("caught up", head, want1)
}

// TestChainLinks: an item's neighbours both ways, its owner's only,
// heaviest first, at most limit.
func TestChainLinks(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := newChainTenant(t, openDB(t))
	var ids []int64
	for i := range 4 {
		ids = append(ids, c.say(t, c.alice, c.alice1, "user", fmt.Sprint("turn ", i)).ItemIDs[0])
	}
	head := c.say(t, c.bob, c.bob1, "user", "bob").Seq
	err := c.db.WriteChainEdges(ctx, c.id, 0, head, head, []store.ChainEdge{
		{Src: ids[1], Dst: ids[0], Relation: "thread", UserID: c.alice, Weight: 3},
		{Src: ids[2], Dst: ids[1], Relation: "evidence", UserID: c.alice, Weight: 5},
		{Src: ids[3], Dst: ids[1], Relation: "thread", UserID: c.alice, Weight: 1},
	})
	if err != nil {
		t.Fatal(err)
	}
	got, err := c.db.ChainLinks(ctx, c.id, c.alice, ids[1], 10)
	if err != nil {
		t.Fatal(err)
	}
	want := []store.ChainLink{{ItemID: ids[2], Relation: "evidence", Later: true, Weight: 5},
		{ItemID: ids[0], Relation: "thread", Weight: 3}, {ItemID: ids[3], Relation: "thread", Later: true, Weight: 1}}
	if !slices.Equal(got, want) {
		t.Fatalf("links %+v, want %+v", got, want)
	}
	// The limit is per relation and direction: each of the three is alone in its group.
	if got, _ := c.db.ChainLinks(ctx, c.id, c.alice, ids[1], 1); !slices.Equal(got, want) {
		t.Fatalf("limit 1: %+v", got)
	}
	if got, _ := c.db.ChainLinks(ctx, c.id, c.bob, ids[1], 10); len(got) != 0 {
		t.Fatalf("bob sees alice's links: %+v", got)
	}
}

// TestPurgeRemovesChainRows: a purge takes the user's edges (counted) and
// their replies' sources in its transaction; another user's stay.
func TestPurgeRemovesChainRows(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := openDB(t)
	owner := ownerOf(t, db)
	c := newChainTenant(t, db)
	g1 := c.say(t, c.gone, c.g1, "user", "kayak").ItemIDs[0]
	g2 := c.say(t, c.gone, c.g1, "assistant", "kayak", g1).ItemIDs[0]
	g3 := c.say(t, c.gone, c.g1, "user", "kayak").ItemIDs[0]
	b1 := c.say(t, c.bob, c.bob1, "user", "kayak").ItemIDs[0]
	b2 := c.say(t, c.bob, c.bob1, "assistant", "kayak", b1)
	err := db.WriteChainEdges(ctx, c.id, 0, b2.Seq, b2.Seq, []store.ChainEdge{
		{Src: g2, Dst: g1, Relation: "evidence", UserID: c.gone, Weight: 1},
		{Src: g3, Dst: g1, Relation: "thread", UserID: c.gone, Weight: 1},
		{Src: g3, Dst: g2, Relation: "thread", UserID: c.gone, Weight: 1},
		{Src: b2.ItemIDs[0], Dst: b1, Relation: "evidence", UserID: c.bob, Weight: 1},
	})
	if err != nil {
		t.Fatal(err)
	}
	count := func(sql string, user int64) int64 {
		t.Helper()
		var n int64
		if err := owner.QueryRow(ctx, sql, c.id, user).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	const edgesOf = `SELECT count(*) FROM chain_edges WHERE tenant_id = $1 AND user_id = $2`
	const sourcesOf = `SELECT count(*) FROM reply_sources s JOIN messages m ON m.tenant_id = s.tenant_id AND m.id = s.message_id
		WHERE s.tenant_id = $1 AND m.user_id = $2`
	if count(edgesOf, c.gone) != 3 || count(sourcesOf, c.gone) != 1 || count(sourcesOf, c.bob) != 1 {
		t.Fatal("the scene is not what the test expects")
	}
	rep, err := db.PurgeUser(ctx, c.id, c.gone, store.Actor{Email: "test"})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Edges != 3 || rep.Items != 3 {
		t.Fatalf("purge report %+v, want 3 edges and 3 items", rep)
	}
	if count(edgesOf, c.gone) != 0 || count(sourcesOf, c.gone) != 0 {
		t.Fatal("gone's chain rows survive the purge")
	}
	if count(edgesOf, c.bob) != 1 || count(sourcesOf, c.bob) != 1 {
		t.Fatal("bob's chain rows went with gone's purge")
	}
	var detail string
	if err := owner.QueryRow(ctx, `SELECT detail::text FROM audit_log WHERE tenant_id = $1 AND action = 'memory.purge'`, c.id).Scan(&detail); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(detail, `"edges": 3`) {
		t.Fatalf("audit detail %s", detail)
	}
}

// TestChainRLS: the chain tables keep tenants apart through the
// application's pool: with no tenant nothing is seen, acting for A none
// of B's rows, and B's rows cannot be written for A.
func TestChainRLS(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := openDB(t)
	owner := ownerOf(t, db)
	var ts [2]*chainTenant
	for i := range ts {
		c := newChainTenant(t, db)
		x := c.say(t, c.alice, c.alice1, "user", "kayak").ItemIDs[0]
		y := c.say(t, c.alice, c.alice2, "assistant", "kayak", x)
		if err := db.WriteChainEdges(ctx, c.id, 0, y.Seq, y.Seq, []store.ChainEdge{
			{Src: y.ItemIDs[0], Dst: x, Relation: "evidence", UserID: c.alice, Weight: 1}}); err != nil {
			t.Fatal(err)
		}
		ts[i] = c
	}
	a, b := ts[0], ts[1]
	seen, err := storetest.Visibility(ctx, db, owner, []string{"chain_edges", "chain_heads", "reply_sources"}, a.id, b.id)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range seen {
		if s.OwnerA != 1 || s.OwnerB != 1 || !s.Isolated() {
			t.Errorf("%s: %+v", s.Table, s)
		}
	}
	if es, err := db.ChainEdges(ctx, b.id); err != nil || len(es) != 1 {
		t.Fatalf("B's own edges: %v %v", es, err)
	}
	// Acting for A, B's rows are out of reach: writes into B are refused,
	// updates and deletes find nothing.
	bItems, err := db.ChainEdges(ctx, b.id)
	if err != nil {
		t.Fatal(err)
	}
	e := bItems[0]
	for _, w := range []struct {
		what, sql string
		args      []any
		refused   bool
	}{
		{"insert an edge into B", `INSERT INTO chain_edges (tenant_id, src_id, dst_id, relation, user_id, weight) VALUES ($1, $2, $3, 'thread', $4, 1)`,
			[]any{b.id, e.Src, e.Dst, e.UserID}, true},
		{"insert B's watermark", `INSERT INTO chain_heads (tenant_id, seq) VALUES ($1, 0) ON CONFLICT DO NOTHING`, []any{b.id}, true},
		{"insert reply sources into B", `INSERT INTO reply_sources (tenant_id, message_id, item_ids) VALUES ($1, 1, '{}')`, []any{b.id}, true},
		{"move B's watermark", `UPDATE chain_heads SET seq = 0 WHERE tenant_id = $1`, []any{b.id}, false},
		{"delete B's edges", `DELETE FROM chain_edges WHERE tenant_id = $1`, []any{b.id}, false},
		{"delete B's reply sources", `DELETE FROM reply_sources WHERE tenant_id = $1`, []any{b.id}, false},
	} {
		errRollback := errors.New("roll back")
		var rows int64
		err := db.InTenant(ctx, a.id, func(tx pgx.Tx) error {
			tag, err := tx.Exec(ctx, w.sql, w.args...)
			if err != nil {
				return err
			}
			rows = tag.RowsAffected()
			return errRollback
		})
		var pg *pgconn.PgError
		if w.refused && !(errors.As(err, &pg) && pg.Code == "42501") {
			t.Errorf("acting for A, %s: %v, want a row-level security refusal", w.what, err)
		}
		if !w.refused && (!errors.Is(err, errRollback) || rows != 0) {
			t.Errorf("acting for A, %s: %v, %d rows", w.what, err, rows)
		}
	}
	if mark, err := db.ChainHead(ctx, b.id); err != nil || mark == 0 {
		t.Fatalf("B's watermark %d %v", mark, err)
	}
}
