package store_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/perpetuity/perpetuity/memory/store"
)

// redactScene is one tenant's memory around a pasted secret: alice's
// earlier turn, the secret (two parts: only one is redacted in some cases),
// a reply that drew on both, and bob's turn on the same words.
type redactScene struct {
	c                    *chainTenant
	early, secret, reply int64
	secretPart2          int64
	bobItem, bobReply    int64
}

const secretText = "my key is sk-live-0123456789"

func capture(t *testing.T, c *chainTenant, user, conv int64, role string, bodies []string, terms [][]int32, sources ...int64) store.Captured {
	t.Helper()
	c.pos++
	var items []store.CaptureItem
	for i, b := range bodies {
		ws := strings.Fields(b)
		fs := make([]int16, len(terms[i]))
		for j := range fs {
			fs[j] = int16(j + 1)
		}
		items = append(items, store.CaptureItem{Body: b, Tokens: ws, TokenCount: len(ws) + 1, Tau: 1000, Novelty: 0.5,
			Rows: []store.RetrievalRow{{DictVersion: 1, TermIDs: terms[i], Freqs: fs, Length: len(ws)}}})
	}
	got, err := c.db.Capture(context.Background(), store.Capture{TenantID: c.id, UserID: user, ConversationID: conv,
		Role: role, Position: c.pos, Fingerprint: []byte(fmt.Sprint(c.pos, bodies)), CreatedAt: time.Now(), ClockAdvance: 3,
		Items: items, Sources: sources})
	if err != nil {
		t.Fatal(err)
	}
	return got
}

func newRedactScene(t *testing.T, db *store.DB, owner *pgxpool.Pool) *redactScene {
	t.Helper()
	ctx := context.Background()
	c := newChainTenant(t, db)
	s := &redactScene{c: c}
	s.early = capture(t, c, c.alice, c.alice1, "user", []string{"the kayak lesson is on saturday"}, [][]int32{{10, 11}}).ItemIDs[0]
	sec := capture(t, c, c.alice, c.alice1, "user", []string{secretText, "and the kayak lesson"}, [][]int32{{12, 13, 14}, {10, 11}})
	s.secret, s.secretPart2 = sec.ItemIDs[0], sec.ItemIDs[1]
	s.reply = capture(t, c, c.alice, c.alice1, "assistant", []string{"noted, kayak on saturday"}, [][]int32{{10, 12}}, s.early, s.secret).ItemIDs[0]
	s.bobItem = capture(t, c, c.bob, c.bob1, "user", []string{"kayak rental"}, [][]int32{{10, 12}}).ItemIDs[0]
	br := capture(t, c, c.bob, c.bob1, "assistant", []string{"kayak rental noted"}, [][]int32{{10}}, s.bobItem)
	s.bobReply = br.ItemIDs[0]
	err := db.WriteChainEdges(ctx, c.id, 0, br.Seq, br.Seq, []store.ChainEdge{
		{Src: s.secretPart2, Dst: s.early, Relation: "thread", UserID: c.alice, Weight: 9},
		{Src: s.reply, Dst: s.secret, Relation: "evidence", UserID: c.alice, Weight: 9},
		{Src: s.reply, Dst: s.early, Relation: "evidence", UserID: c.alice, Weight: 9},
		{Src: s.bobReply, Dst: s.bobItem, Relation: "evidence", UserID: c.bob, Weight: 9},
	})
	if err != nil {
		t.Fatal(err)
	}
	// Bob looked at the secret too (a shared memory): his activation and
	// reheat of it go with it.
	for _, q := range []string{
		`INSERT INTO activations (tenant_id, viewer_id, item_id, t_last, peak) VALUES ($1, $2, $3, 5, 1)`,
		`INSERT INTO reheats (tenant_id, viewer_id, item_id, clock, peak) VALUES ($1, $2, $3, 5, 1)`,
	} {
		if _, err := owner.Exec(ctx, q, c.id, c.bob, s.secret); err != nil {
			t.Fatal(err)
		}
	}
	return s
}

// statsDrift counts term and corpus statistics of the tenant (the tables
// plus the deltas not folded yet) that differ from a recount of its
// retrieval rows, as the integrity check recounts.
func statsDrift(t *testing.T, owner *pgxpool.Pool, tenantID int64) int64 {
	t.Helper()
	var n int64
	err := owner.QueryRow(context.Background(), `SELECT
		(SELECT count(*) FROM (SELECT dict_version, term_id, count(*) AS df FROM retrieval_rows, unnest(term_ids) AS term_id
			WHERE tenant_id = $1 GROUP BY 1, 2) r
		 FULL JOIN (SELECT dict_version, term_id, sum(df) AS df FROM (
				SELECT dict_version, term_id, df FROM term_stats WHERE tenant_id = $1
				UNION ALL SELECT d.dict_version, x.term_id, x.df FROM stat_deltas d, unnest(d.term_ids, d.dfs) AS x(term_id, df)
				WHERE d.tenant_id = $1) u GROUP BY 1, 2) s USING (dict_version, term_id)
		 WHERE r.df IS DISTINCT FROM s.df)
		+ (SELECT count(*) FROM (SELECT dict_version, count(*) AS items, sum(length) AS len FROM retrieval_rows
			WHERE tenant_id = $1 GROUP BY 1) r
		 FULL JOIN (SELECT dict_version, sum(items) AS items, sum(total_length) AS total_length FROM (
				SELECT dict_version, items, total_length FROM corpus_stats WHERE tenant_id = $1
				UNION ALL SELECT dict_version, items, total_length FROM stat_deltas WHERE tenant_id = $1) u
			GROUP BY 1 HAVING sum(items) > 0) s USING (dict_version)
		 WHERE r.items IS DISTINCT FROM s.items OR r.len IS DISTINCT FROM s.total_length)`, tenantID).Scan(&n)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// TestRedactItem: a redaction removes the item and everything keyed by it
// in one step, keeps the statistics a recount's, replaces its owner's
// chain edges with the rebuild it is handed, logs an event that names the
// item, audits without content, and touches no other item, user or tenant.
func TestRedactItem(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := openDB(t)
	owner := ownerOf(t, db)
	s := newRedactScene(t, db, owner)
	other := newRedactScene(t, db, owner) // another tenant, the same memory
	c := s.c
	count := func(sql string, args ...any) int64 {
		t.Helper()
		var n int64
		if err := owner.QueryRow(ctx, sql, args...).Scan(&n); err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
		return n
	}
	keyed := map[string]string{
		"items":          `SELECT count(*) FROM items WHERE tenant_id = $1 AND id = $2`,
		"retrieval_rows": `SELECT count(*) FROM retrieval_rows WHERE tenant_id = $1 AND item_id = $2`,
		"activations":    `SELECT count(*) FROM activations WHERE tenant_id = $1 AND item_id = $2`,
		"reheats":        `SELECT count(*) FROM reheats WHERE tenant_id = $1 AND item_id = $2`,
		"item_births":    `SELECT count(*) FROM item_births WHERE tenant_id = $1 AND item_id = $2`,
		"chain_edges":    `SELECT count(*) FROM chain_edges WHERE tenant_id = $1 AND (src_id = $2 OR dst_id = $2)`,
		"reply_sources":  `SELECT count(*) FROM reply_sources WHERE tenant_id = $1 AND $2::bigint = ANY(item_ids)`,
	}
	for table, q := range keyed {
		if count(q, c.id, s.secret) == 0 {
			t.Fatalf("the scene has no %s row of the secret", table)
		}
	}
	// The inspector's records: alice's own request (its question or reply
	// may quote the secret), bob's that showed it, bob's own that did not.
	inspected(t, db, c.id, c.alice, "alice-asks", time.Hour, s.early, 0)
	inspected(t, db, c.id, c.bob, "bob-sees-secret", time.Hour, s.bobItem, s.secret)
	inspected(t, db, c.id, c.bob, "bob-alone", time.Hour, s.bobItem, 0)
	before, err := db.ReadHead(ctx, c.id)
	if err != nil {
		t.Fatal(err)
	}
	var replayed []store.ChainItem
	rebuilt := []store.ChainEdge{{Src: s.reply, Dst: s.early, Relation: "evidence", UserID: c.alice, Weight: 3}}
	acct := int64(7)
	rep, err := db.RedactItem(ctx, c.id, s.secret, store.Actor{AccountID: &acct, Email: "admin@acme.test", Address: "192.0.2.1"},
		func(items []store.ChainItem) []store.ChainEdge { replayed = items; return rebuilt })
	if err != nil {
		t.Fatal(err)
	}
	if rep.ItemID != s.secret || rep.UserID != c.alice || rep.Rows != 1 || rep.Activations != 2 || rep.Reheats != 1 ||
		rep.Edges != 1 || rep.Sources != 1 || rep.Inspections != 2 || rep.MessageRemoved || rep.Seq != before.Seq+1 {
		t.Fatalf("report %+v", rep)
	}
	for _, tc := range []struct {
		user int64
		want int
	}{{c.alice, 0}, {c.bob, 1}} {
		if rows, err := db.Requests(ctx, c.id, tc.user, 10); err != nil || countInspected(rows) != tc.want {
			t.Errorf("user %d: %d inspected requests after the redaction (%v), want %d", tc.user, countInspected(rows), err, tc.want)
		}
	}
	for table, q := range keyed {
		if n := count(q, c.id, s.secret); n != 0 {
			t.Errorf("%d %s rows of the redacted item remain", n, table)
		}
	}
	// The owner's graph is the rebuild, replayed from their other items
	// in log order; bob's is untouched.
	var ids []int64
	for _, it := range replayed {
		ids = append(ids, it.ID)
		if it.UserID != c.alice {
			t.Errorf("the rebuild replayed item %d of user %d", it.ID, it.UserID)
		}
	}
	if fmt.Sprint(ids) != fmt.Sprint([]int64{s.early, s.secretPart2, s.reply}) {
		t.Fatalf("replayed %v, want alice's surviving items in log order", ids)
	}
	if srcs := replayed[2].Sources; fmt.Sprint(srcs) != fmt.Sprint([]int64{s.early}) {
		t.Fatalf("the reply's sources are %v after the redaction, want only the earlier turn", srcs)
	}
	if n := count(`SELECT count(*) FROM chain_edges WHERE tenant_id = $1 AND user_id = $2 AND weight = 3`, c.id, c.alice); n != 1 ||
		count(`SELECT count(*) FROM chain_edges WHERE tenant_id = $1 AND user_id = $2`, c.id, c.alice) != 1 {
		t.Fatal("alice's edges are not the rebuild handed in")
	}
	if count(`SELECT count(*) FROM chain_edges WHERE tenant_id = $1 AND user_id = $2`, c.id, c.bob) != 1 {
		t.Fatal("bob's edge went with alice's redaction")
	}
	// The other part of the message stays, and so does its message.
	if count(keyed["items"], c.id, s.secretPart2) != 1 || count(`SELECT count(*) FROM messages m JOIN items i
		ON i.tenant_id = m.tenant_id AND i.message_id = m.id WHERE m.tenant_id = $1 AND i.id = $2`, c.id, s.secretPart2) != 1 {
		t.Fatal("the secret's sibling part or its message went too")
	}
	if n := statsDrift(t, owner, c.id); n != 0 {
		t.Fatalf("%d statistics differ from a recount after the redaction", n)
	}
	// Every process learns of it from the log.
	cu, err := db.ReadCatchUp(ctx, c.id, before.Seq, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(cu.Events) != 1 || cu.Events[0].Kind != store.LogRedact || cu.Events[0].ItemID == nil || *cu.Events[0].ItemID != s.secret ||
		cu.Events[0].UserID == nil || *cu.Events[0].UserID != c.alice {
		t.Fatalf("catch-up events %+v", cu.Events)
	}
	cb, err := db.ReadChainBatch(ctx, c.id, before.Seq, before.Seq+10)
	if err != nil || len(cb.Purges) != 1 || cb.Purges[0].Kind != store.LogRedact {
		t.Fatalf("the chain writer does not see the redaction: %+v %v", cb.Purges, err)
	}
	// A writer whose graph predates it cannot store what it derived.
	mark, err := db.ChainHead(ctx, c.id)
	if err != nil {
		t.Fatal(err)
	}
	if err := db.WriteChainEdges(ctx, c.id, mark, rep.Seq, before.Seq, nil); !errors.Is(err, store.ErrChainRedacted) {
		t.Fatalf("a stale writer's write: %v, want ErrChainRedacted", err)
	}
	if err := db.WriteChainEdges(ctx, c.id, mark, rep.Seq, rep.Seq, nil); err != nil {
		t.Fatalf("a writer that has seen the redaction: %v", err)
	}
	// The audit names who, which item, whose memory; never the content.
	var target, detail, email, addr string
	if err := owner.QueryRow(ctx, `SELECT target, detail::text, actor_email, address FROM audit_log
		WHERE tenant_id = $1 AND action = 'memory.redact'`, c.id).Scan(&target, &detail, &email, &addr); err != nil {
		t.Fatal(err)
	}
	if target != fmt.Sprintf("memory_user:%d", c.alice) || !strings.Contains(detail, fmt.Sprintf(`"item_id": %d`, s.secret)) ||
		email != "admin@acme.test" || addr != "192.0.2.1" {
		t.Fatalf("audit %s %s %s %s", target, detail, email, addr)
	}
	if strings.Contains(detail, "sk-live") {
		t.Fatalf("the audit carries the content: %s", detail)
	}
	// The other tenant's identical memory is untouched, and cannot be
	// redacted from this tenant.
	for table, q := range keyed {
		if count(q, other.c.id, other.secret) == 0 {
			t.Errorf("the other tenant lost its %s rows", table)
		}
	}
	if _, err := db.RedactItem(ctx, c.id, other.secret, store.Actor{Email: "x"}, nil); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("another tenant's item: %v, want ErrNotFound", err)
	}
	if _, err := db.RedactItem(ctx, c.id, s.secret, store.Actor{Email: "x"}, nil); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("a redacted item again: %v, want ErrNotFound", err)
	}
	if h, _ := db.ReadHead(ctx, c.id); h.Seq != rep.Seq {
		t.Fatalf("a refused redaction moved the head to %d", h.Seq)
	}
}

// TestRedactLastPart: redacting a message's only item removes the message
// and its reply sources, and a rebuild is required once the chain writer
// has written.
func TestRedactLastPart(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := openDB(t)
	owner := ownerOf(t, db)
	s := newRedactScene(t, db, owner)
	c := s.c
	if _, err := db.RedactItem(ctx, c.id, s.reply, store.Actor{Email: "cli"}, nil); err == nil {
		t.Fatal("a redaction without the chain rules rewrote nothing of alice's graph and succeeded")
	}
	rep, err := db.RedactItem(ctx, c.id, s.reply, store.Actor{Email: "cli"}, func([]store.ChainItem) []store.ChainEdge { return nil })
	if err != nil {
		t.Fatal(err)
	}
	if !rep.MessageRemoved {
		t.Fatalf("report %+v: the reply's message stayed", rep)
	}
	var n int64
	if err := owner.QueryRow(ctx, `SELECT (SELECT count(*) FROM messages WHERE tenant_id = $1 AND id = $2)
		+ (SELECT count(*) FROM reply_sources WHERE tenant_id = $1 AND message_id = $2)`, c.id, rep.MessageID).Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n != 0 {
		t.Fatal("the reply's message or its sources remain")
	}
	if n := statsDrift(t, owner, c.id); n != 0 {
		t.Fatalf("%d statistics differ from a recount", n)
	}
}

func countInspected(rows []store.RequestRow) int {
	n := 0
	for _, r := range rows {
		if r.Inspected {
			n++
		}
	}
	return n
}
