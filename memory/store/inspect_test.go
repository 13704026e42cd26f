package store_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/perpetuity/perpetuity/memory/store"
	"github.com/perpetuity/perpetuity/migrations/dbtest"
)

// inspected records one request of userID whose frame showed shown and
// left out left (0 for none).
func inspected(t *testing.T, db *store.DB, tenantID, userID int64, rid string, keep time.Duration, shown, left int64) {
	t.Helper()
	in := &store.Inspection{Question: "where is the ferry " + rid, FrameTokens: 40, Reply: "at platform nine",
		Turns: []store.InspectTurn{{Role: "user", Text: "【memory】"}},
		Items: []store.InspectItem{{ID: shown, Shown: true, Score: 2.5, Rank: 0, Heat: 2, Reasons: []string{"match", "mandatory"}}},
		Tools: []store.InspectToolRun{{Round: 1, Name: "memory_search", Args: `{"query":"ferry"}`, Result: "nothing"}}}
	if left != 0 {
		in.Items = append(in.Items, store.InspectItem{ID: left, Rank: 7, Heat: 0.4, Reasons: []string{"neighbour"}})
	}
	if err := db.RecordRequest(context.Background(), store.RequestRecord{TenantID: tenantID, RequestID: rid, UserID: userID,
		Dialect: "openai-chat", Provider: "openai", Model: "gpt-4o-mini", Status: 200, FrameTokens: 40,
		Inspection: in, InspectRetention: keep, PruneInspections: true}); err != nil {
		t.Fatal(err)
	}
}

// aliceSaid makes a tenant on v1 whose first user, alice, said body in
// conversation c1.
func aliceSaid(t *testing.T, db *store.DB, tenant, body string) (store.NewTenant, store.Captured) {
	t.Helper()
	ctx := context.Background()
	nt, err := db.CreateTenantWith(ctx, tenant, "alice", store.TenantOptions{Dict: 1})
	if err != nil {
		t.Fatal(err)
	}
	conv, err := db.EnsureConversation(ctx, nt.TenantID, nt.UserID, "c1", "")
	if err != nil {
		t.Fatal(err)
	}
	got, err := db.Capture(ctx, store.Capture{TenantID: nt.TenantID, UserID: nt.UserID, ConversationID: conv, Role: "user",
		Fingerprint: []byte("fp"), CreatedAt: time.Now(), ClockAdvance: 3, Items: []store.CaptureItem{item(body, 1)}})
	if err != nil {
		t.Fatal(err)
	}
	return nt, got
}

// TestInspectionRoundTrip: a record reads back whole on its request, the
// list filters by user and says which requests have one, the memory
// browser finds the record from each item it names, shown or left out;
// another tenant finds none of it.
func TestInspectionRoundTrip(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := openDB(t)
	nt, err := db.CreateTenantWith(ctx, "inspect-acme", "alice", store.TenantOptions{Dict: 1})
	if err != nil {
		t.Fatal(err)
	}
	other, err := db.CreateTenantWith(ctx, "inspect-other", "eve", store.TenantOptions{Dict: 1})
	if err != nil {
		t.Fatal(err)
	}
	bob, err := db.EnsureUser(ctx, nt.TenantID, "bob")
	if err != nil {
		t.Fatal(err)
	}
	inspected(t, db, nt.TenantID, nt.UserID, "r-alice", time.Hour, 101, 102)
	inspected(t, db, nt.TenantID, bob, "r-bob", time.Hour, 201, 0)
	// A request with no record (a probe): its figures are listed, not inspected.
	if err := db.RecordRequest(ctx, store.RequestRecord{TenantID: nt.TenantID, RequestID: "r-probe", UserID: nt.UserID,
		Dialect: "openai-chat", Provider: "openai", Status: 200, InspectRetention: time.Hour, PruneInspections: true}); err != nil {
		t.Fatal(err)
	}

	for _, tc := range []struct {
		name      string
		user      int64
		want      int
		inspected int
	}{{"all users", 0, 3, 2}, {"alice", nt.UserID, 2, 1}, {"bob", bob, 1, 1}} {
		rows, err := db.Requests(ctx, nt.TenantID, tc.user, 50)
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for _, r := range rows {
			if r.Inspected {
				n++
				if r.Question == "" {
					t.Errorf("%s: inspected request %d lists no question", tc.name, r.ID)
				}
			}
			if tc.user != 0 && r.UserID != tc.user {
				t.Errorf("%s: lists a request of user %d", tc.name, r.UserID)
			}
		}
		if len(rows) != tc.want || n != tc.inspected {
			t.Errorf("%s: %d requests, %d inspected; want %d, %d", tc.name, len(rows), n, tc.want, tc.inspected)
		}
	}
	frames, err := db.FramesOfItem(ctx, nt.TenantID, 102, 10)
	if err != nil {
		t.Fatal(err)
	}
	if len(frames) != 1 || frames[0].Shown || frames[0].UserID != nt.UserID {
		t.Fatalf("frames of the left-out item: %+v", frames)
	}
	got, err := db.Request(ctx, nt.TenantID, frames[0].RequestID)
	if err != nil {
		t.Fatal(err)
	}
	rec := got.Record
	if rec == nil || rec.Question != "where is the ferry r-alice" || rec.Reply != "at platform nine" || len(rec.Items) != 2 ||
		rec.Items[0].Reasons[1] != "mandatory" || rec.Items[0].Score != 2.5 || len(rec.Tools) != 1 || got.User != "alice" {
		t.Fatalf("record read back: %+v %+v", got.RequestRow, rec)
	}
	if shown, err := db.FramesOfItem(ctx, nt.TenantID, 101, 10); err != nil || len(shown) != 1 || !shown[0].Shown {
		t.Fatalf("frames of the shown item: %+v %v", shown, err)
	}
	if _, err := db.Request(ctx, other.TenantID, got.ID); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("another tenant reads the request: %v", err)
	}
	if fs, err := db.FramesOfItem(ctx, other.TenantID, 101, 10); err != nil || len(fs) != 0 {
		t.Errorf("another tenant finds %d frames: %v", len(fs), err)
	}
	if rows, err := db.Requests(ctx, other.TenantID, 0, 50); err != nil || len(rows) != 0 {
		t.Errorf("another tenant lists %d requests: %v", len(rows), err)
	}
}

// TestInspectionRetention: a write prunes the tenant's records older
// than the retention, with their item index, and leaves the figures; a
// retention of 0 prunes every record; another tenant's stay.
func TestInspectionRetention(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := openDB(t)
	owner := ownerOf(t, db)
	nt, err := db.CreateTenantWith(ctx, "retain-acme", "alice", store.TenantOptions{Dict: 1})
	if err != nil {
		t.Fatal(err)
	}
	other, err := db.CreateTenantWith(ctx, "retain-other", "eve", store.TenantOptions{Dict: 1})
	if err != nil {
		t.Fatal(err)
	}
	const keep = 300 * time.Millisecond
	inspected(t, db, nt.TenantID, nt.UserID, "old", keep, 1, 2)
	inspected(t, db, other.TenantID, other.UserID, "other", keep, 9, 0)
	time.Sleep(keep + 200*time.Millisecond)
	count := func(sql string, tenant int64) int64 {
		t.Helper()
		var n int64
		if err := owner.QueryRow(ctx, sql, tenant).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	const (
		records = `SELECT count(*) FROM request_inspections WHERE tenant_id = $1`
		index   = `SELECT count(*) FROM request_inspection_items WHERE tenant_id = $1`
		figures = `SELECT count(*) FROM requests WHERE tenant_id = $1`
	)
	// A write that is not asked to prune (the proxy asks once a minute per
	// tenant) keeps the expired record.
	if err := db.RecordRequest(ctx, store.RequestRecord{TenantID: nt.TenantID, RequestID: "no-prune", UserID: nt.UserID,
		Dialect: "openai-chat", Provider: "openai", Status: 200, InspectRetention: keep,
		Inspection: &store.Inspection{Question: "kept", Items: []store.InspectItem{{ID: 4, Shown: true}}}}); err != nil {
		t.Fatal(err)
	}
	if r := count(records, nt.TenantID); r != 2 {
		t.Fatalf("a write without prune left %d records, want the expired one and its own", r)
	}
	// The sweep's prune, for a tenant that sends no request, takes the
	// expired record (and its index) alone, and nothing of another tenant
	// (checked below).
	if n, err := db.PruneInspections(ctx, nt.TenantID, keep); err != nil || n != 1 {
		t.Fatalf("the sweep's prune: %d records, %v; want 1", n, err)
	}
	if r, i := count(records, nt.TenantID), count(index, nt.TenantID); r != 1 || i != 1 {
		t.Fatalf("after the sweep's prune: %d records, %d index rows; want 1, 1", r, i)
	}
	inspected(t, db, nt.TenantID, nt.UserID, "new", keep, 3, 0)
	for _, tc := range []struct {
		name                   string
		tenant                 int64
		records, index, figure int64
	}{{"after the retention", nt.TenantID, 2, 2, 3}, {"another tenant", other.TenantID, 1, 1, 1}} {
		if r, i, f := count(records, tc.tenant), count(index, tc.tenant), count(figures, tc.tenant); r != tc.records || i != tc.index || f != tc.figure {
			t.Errorf("%s: %d records, %d index rows, %d requests; want %d, %d, %d", tc.name, r, i, f, tc.records, tc.index, tc.figure)
		}
	}
	if fs, err := db.FramesOfItem(ctx, nt.TenantID, 3, 10); err != nil || len(fs) != 1 {
		t.Fatalf("the new record is not found by its item: %v %v", fs, err)
	}
	// Retention 0: the inspector is off, and a write prunes all.
	if err := db.RecordRequest(ctx, store.RequestRecord{TenantID: nt.TenantID, RequestID: "off", UserID: nt.UserID,
		Dialect: "openai-chat", Provider: "openai", Status: 200, PruneInspections: true,
		Inspection: &store.Inspection{Question: "not kept"}}); err != nil {
		t.Fatal(err)
	}
	if r, i, f := count(records, nt.TenantID), count(index, nt.TenantID), count(figures, nt.TenantID); r != 0 || i != 0 || f != 4 {
		t.Errorf("with retention 0: %d records, %d index rows, %d requests; want 0, 0, 4", r, i, f)
	}
	if r := count(records, other.TenantID); r != 1 {
		t.Errorf("another tenant's record pruned: %d left", r)
	}
}

// TestPurgeRemovesInspections: the user purge takes the user's records
// and any record whose frame named one of the user's items, and no other.
func TestPurgeRemovesInspections(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := openDB(t)
	nt, got := aliceSaid(t, db, "purge-inspect", "ferry")
	aliceItem := got.ItemIDs[0]
	bob, err := db.EnsureUser(ctx, nt.TenantID, "bob")
	if err != nil {
		t.Fatal(err)
	}
	inspected(t, db, nt.TenantID, nt.UserID, "alice", time.Hour, aliceItem, 0)
	inspected(t, db, nt.TenantID, bob, "bob-sees-alice", time.Hour, 500, aliceItem)
	inspected(t, db, nt.TenantID, bob, "bob", time.Hour, 501, 0)
	rep, err := db.PurgeUser(ctx, nt.TenantID, nt.UserID, store.Actor{Email: "test"})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Inspections != 2 {
		t.Errorf("purge removed %d records, want alice's and the one naming her item", rep.Inspections)
	}
	for _, tc := range []struct {
		name string
		item int64
		want int
	}{{"alice's item", aliceItem, 0}, {"bob's item beside hers", 500, 0}, {"bob's own", 501, 1}} {
		fs, err := db.FramesOfItem(ctx, nt.TenantID, tc.item, 10)
		if err != nil {
			t.Fatal(err)
		}
		if len(fs) != tc.want {
			t.Errorf("%s: %d records after the purge, want %d", tc.name, len(fs), tc.want)
		}
	}
	rows, err := db.Requests(ctx, nt.TenantID, nt.UserID, 10)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rows {
		if r.Inspected || r.Question != "" {
			t.Errorf("alice's request %d still shows its record", r.ID)
		}
	}
}

// BenchmarkRecordRequest: the statement after each reply, as main wrote it
// (figures), with a record of a typical frame (20 items, 8 turns, one tool
// call, a short reply) and the prune, and with a record the size of the
// bench's 250k-item frames (116 items, 70 turns, about 45 kB). Besides the
// time, backend-ms/op is the CPU the database's backend spent per record
// (read from /proc, so only with PostgreSQL on this machine): on a shared
// machine it moves far less than the time.
func BenchmarkRecordRequest(b *testing.B) {
	ctx := context.Background()
	db, err := store.Open(ctx, dbtest.Shared(b)+"&pool_max_conns=1")
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(db.Close)
	nt, err := db.CreateTenantWith(ctx, "bench-record", "alice", store.TenantOptions{Dict: 1})
	if err != nil {
		b.Fatal(err)
	}
	var pid int
	if err := db.Pool.QueryRow(ctx, `SELECT pg_backend_pid()`).Scan(&pid); err != nil {
		b.Fatal(err)
	}
	record := func(items, turns, words int) *store.Inspection {
		in := &store.Inspection{Question: "which platform does the ferry leave from on fridays?", FrameTokens: 1800, FrameItems: items,
			Reply: strings.Repeat("It leaves from platform nine. ", 10),
			Tools: []store.InspectToolRun{{Round: 1, Name: "memory_search", Args: `{"query":"ferry"}`, Result: strings.Repeat("a found turn ", 60)}}}
		for i := range turns {
			in.Turns = append(in.Turns, store.InspectTurn{Role: "user", Text: strings.Repeat("a remembered turn of text ", words+i%5)})
		}
		for i := range items * 3 / 2 {
			in.Items = append(in.Items, store.InspectItem{ID: int64(1000 + i), ConvID: 7, UserID: nt.UserID, Score: 3.2, Rank: i, Heat: 1.5,
				Reasons: []string{"match", "neighbour"}, Shown: i < items, Tokens: 90, Role: "user", Speaker: "alice",
				Excerpt: strings.Repeat("excerpt ", 30)})
		}
		return in
	}
	for _, bc := range []struct {
		name string
		rec  store.RequestRecord
	}{
		{"figures", store.RequestRecord{}},
		{"figures+prune", store.RequestRecord{PruneInspections: true, InspectRetention: 168 * time.Hour}},
		{"inspected", store.RequestRecord{Inspection: record(20, 8, 40), PruneInspections: true, InspectRetention: 168 * time.Hour}},
		{"inspected-250k", store.RequestRecord{Inspection: record(77, 70, 8), InspectRetention: 168 * time.Hour}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			r := bc.rec
			r.TenantID, r.RequestID, r.UserID, r.Dialect, r.Provider, r.Model, r.Status = nt.TenantID, "req_bench", nt.UserID, "openai-chat", "openai", "gpt-4o-mini", 200
			cpu0, procOK := backendCPU(pid)
			for b.Loop() {
				if err := db.RecordRequest(ctx, r); err != nil {
					b.Fatal(err)
				}
			}
			if cpu1, ok := backendCPU(pid); ok && procOK {
				b.ReportMetric(float64(cpu1-cpu0)/float64(time.Millisecond)/float64(b.N), "backend-ms/op")
			}
		})
	}
}

// backendCPU is the user and system CPU a local process has used, from
// /proc/PID/stat (in clock ticks, 100 a second on Linux).
func backendCPU(pid int) (time.Duration, bool) {
	raw, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, false
	}
	s := string(raw)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	if len(f) < 13 {
		return 0, false
	}
	user, err1 := strconv.ParseInt(f[11], 10, 64)
	sys, err2 := strconv.ParseInt(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return 0, false
	}
	return time.Duration(user+sys) * 10 * time.Millisecond, true
}

// TestInspectionOwnItems: a record keeps its asker's own items in its
// arrays and writes index rows only for the others (another user's item,
// one whose owner the frame did not read); the memory browser finds the
// record from every item either way, with its shown flag, newest first;
// purging the owner takes both the owner's record and another user's that
// showed the item.
func TestInspectionOwnItems(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := openDB(t)
	owner := ownerOf(t, db)
	nt, err := db.CreateTenantWith(ctx, "inspect-own", "alice", store.TenantOptions{Dict: 1})
	if err != nil {
		t.Fatal(err)
	}
	bob, err := db.EnsureUser(ctx, nt.TenantID, "bob")
	if err != nil {
		t.Fatal(err)
	}
	capture := func(user int64, fp string) int64 {
		t.Helper()
		conv, err := db.EnsureConversation(ctx, nt.TenantID, user, "c-"+fp, "")
		if err != nil {
			t.Fatal(err)
		}
		got, err := db.Capture(ctx, store.Capture{TenantID: nt.TenantID, UserID: user, ConversationID: conv, Role: "user",
			Fingerprint: []byte(fp), CreatedAt: time.Now(), ClockAdvance: 3, Items: []store.CaptureItem{item("ferry "+fp, 1)}})
		if err != nil {
			t.Fatal(err)
		}
		return got.ItemIDs[0]
	}
	shownA, leftA, unreadA, bobs := capture(nt.UserID, "a1"), capture(nt.UserID, "a2"), capture(nt.UserID, "a3"), capture(bob, "b1")
	// record keeps a request of asker's with these items and returns how
	// many index rows it wrote.
	record := func(rid string, asker int64, items ...store.InspectItem) int64 {
		t.Helper()
		if err := db.RecordRequest(ctx, store.RequestRecord{TenantID: nt.TenantID, RequestID: rid, UserID: asker,
			Dialect: "openai-chat", Provider: "openai", Status: 200, InspectRetention: time.Hour,
			Inspection: &store.Inspection{Question: "ferry? " + rid, Items: items}}); err != nil {
			t.Fatal(err)
		}
		var rows int64
		if err := owner.QueryRow(ctx, `SELECT (SELECT count(*) FROM request_inspection_items x
				WHERE x.tenant_id = p.tenant_id AND x.request_id = p.request_id)
			FROM request_inspections p WHERE p.tenant_id = $1 AND p.question = $2`, nt.TenantID, "ferry? "+rid).Scan(&rows); err != nil {
			t.Fatal(err)
		}
		return rows
	}
	// Alice's frame: her two items, Bob's (not hers: indexed), and two
	// whose text it did not read (owner unknown: indexed), one of them
	// hers, one gone.
	if rows := record("alice", nt.UserID,
		store.InspectItem{ID: shownA, UserID: nt.UserID, Shown: true, Excerpt: "ferry a1"},
		store.InspectItem{ID: leftA, UserID: nt.UserID, Excerpt: "ferry a2"},
		store.InspectItem{ID: bobs, UserID: bob, Excerpt: "ferry b1"},
		store.InspectItem{ID: unreadA},
		store.InspectItem{ID: 999_999_999}); rows != 3 {
		t.Errorf("alice's record wrote %d index rows, want 3 (bob's item, the unread ones)", rows)
	}
	// Bob's frame showing Alice's item: an index row, found by it.
	if rows := record("bob", bob, store.InspectItem{ID: shownA, UserID: nt.UserID, Shown: true, Excerpt: "ferry a1"}); rows != 1 {
		t.Errorf("bob's record wrote %d index rows, want 1", rows)
	}
	for _, tc := range []struct {
		name  string
		item  int64
		users []int64 // the records' askers, newest first
		shown []bool
	}{
		{"alice's shown item", shownA, []int64{bob, nt.UserID}, []bool{true, true}},
		{"alice's item left out", leftA, []int64{nt.UserID}, []bool{false}},
		// In her record's arrays and its index rows: listed once.
		{"alice's item left out unread", unreadA, []int64{nt.UserID}, []bool{false}},
		{"bob's item in alice's frame", bobs, []int64{nt.UserID}, []bool{false}},
	} {
		fs, err := db.FramesOfItem(ctx, nt.TenantID, tc.item, 10)
		if err != nil {
			t.Fatal(err)
		}
		var users []int64
		var shown []bool
		for _, f := range fs {
			users, shown = append(users, f.UserID), append(shown, f.Shown)
		}
		if fmt.Sprint(users, shown) != fmt.Sprint(tc.users, tc.shown) {
			t.Errorf("%s: records of %v shown %v, want %v %v", tc.name, users, shown, tc.users, tc.shown)
		}
	}
	if fs, err := db.FramesOfItem(ctx, nt.TenantID, shownA, 1); err != nil || len(fs) != 1 || fs[0].UserID != bob {
		t.Errorf("limit 1: %v %v, want bob's newer record alone", fs, err)
	}
	rep, err := db.PurgeUser(ctx, nt.TenantID, nt.UserID, store.Actor{Email: "test"})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Inspections != 2 {
		t.Errorf("purging alice removed %d records, want hers and bob's that showed her item", rep.Inspections)
	}
}

// TestInspectionCompressedWithLZ4: a record large enough to be compressed
// is written with lz4 (the cheap method; RecordRequest's lz4SQL) where the
// server has it, and reads back whole.
func TestInspectionCompressedWithLZ4(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := openDB(t)
	nt, err := db.CreateTenantWith(ctx, "inspect-lz4", "alice", store.TenantOptions{Dict: 1})
	if err != nil {
		t.Fatal(err)
	}
	var lz4 bool
	if err := db.Pool.QueryRow(ctx, `SELECT 'lz4' = ANY(enumvals) FROM pg_settings WHERE name = 'default_toast_compression'`).Scan(&lz4); err != nil {
		t.Fatal(err)
	}
	if !lz4 {
		t.Skip("this PostgreSQL is built without lz4")
	}
	in := &store.Inspection{Question: "what did we say about the ferry?"}
	for i := range 200 {
		in.Turns = append(in.Turns, store.InspectTurn{Role: "user", Text: fmt.Sprintf("turn %d: the ferry leaves platform %d at %d:%02d", i, i%9, i%24, i%60)})
	}
	if err := db.RecordRequest(ctx, store.RequestRecord{TenantID: nt.TenantID, RequestID: "r-big", UserID: nt.UserID,
		Dialect: "openai-chat", Provider: "openai", Status: 200, Inspection: in, InspectRetention: time.Hour}); err != nil {
		t.Fatal(err)
	}
	var method string
	var id int64
	err = db.InTenant(ctx, nt.TenantID, func(tx pgx.Tx) error {
		return tx.QueryRow(ctx, `SELECT request_id, coalesce(pg_column_compression(record), 'none') FROM request_inspections WHERE tenant_id = $1`,
			nt.TenantID).Scan(&id, &method)
	})
	if err != nil {
		t.Fatal(err)
	}
	if method != "lz4" {
		t.Fatalf("record compressed with %s, want lz4", method)
	}
	got, err := db.Request(ctx, nt.TenantID, id)
	if err != nil || got.Record == nil || len(got.Record.Turns) != 200 || got.Record.Turns[199].Text != in.Turns[199].Text {
		t.Fatalf("record read back: %v", err)
	}
}
