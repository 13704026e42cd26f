package ops_test

import (
	"bufio"
	"context"
	"crypto/rand"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/perpetuity/perpetuity/memory"
	"github.com/perpetuity/perpetuity/memory/chain"
	"github.com/perpetuity/perpetuity/memory/dict"
	"github.com/perpetuity/perpetuity/memory/ops"
	"github.com/perpetuity/perpetuity/memory/store"
	"github.com/perpetuity/perpetuity/migrations/dbtest"
)

// Environment of the derivation helper process.
const (
	helperEnv    = "PERPETUITY_OPS_DERIVE_HELPER"
	helperDB     = "PERPETUITY_OPS_DERIVE_DB"
	helperTenant = "PERPETUITY_OPS_DERIVE_TENANT"
)

// TestDeriveHelperProcess is not a test: TestDeriveSurvivesKill runs the
// test binary again with only this function, as the derivation process it
// kills. After three batches it says "paused" and waits for a line on
// stdin, so the parent can arrange to kill it inside its fourth batch.
func TestDeriveHelperProcess(t *testing.T) {
	if os.Getenv(helperEnv) == "" {
		return
	}
	ctx := context.Background()
	db, err := store.Open(ctx, os.Getenv(helperDB))
	if err != nil {
		fmt.Println("error", err)
		os.Exit(3)
	}
	tenant, _ := strconv.ParseInt(os.Getenv(helperTenant), 10, 64)
	in := bufio.NewReader(os.Stdin)
	batches := 0
	d := &ops.Deriver{St: db, Batch: 5, Lease: time.Second, Progress: func(r store.Rollout) {
		if r.Derived == 0 {
			return
		}
		batches++
		fmt.Println("batch", batches, r.DerivedUpto)
		if batches == 3 {
			fmt.Println("paused")
			_, _ = in.ReadString('\n')
		}
	}}
	_, err = d.Derive(ctx, tenant, 2, store.Actor{Email: "helper"})
	fmt.Println("finished", err) // never reached when the parent kills it
	os.Exit(0)
}

// TestDeriveSurvivesKill kills (SIGKILL) a derivation process while its
// fourth batch's transaction has written rows and waits on a lock. The
// three committed batches stay, the half-written one leaves nothing, the
// old version keeps serving, and a new process resumes the derivation to
// rows and counts equal to their recount.
func TestDeriveSurvivesKill(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	// Its own database: the tenant it flips would make v2 the version other
	// tests' new tenants start on.
	f := newFixtureOn(t, openDB(t, dbtest.New(t)))
	ids := f.say(t, f.eng, f.who(t, "alice", "c1"), 11, 0, 32)

	app := "derive-helper-" + strings.ToLower(rand.Text()[:8])
	u, err := url.Parse(f.db.Pool.Config().ConnString())
	if err != nil {
		t.Fatal(err)
	}
	q := u.Query()
	q.Set("application_name", app)
	u.RawQuery = q.Encode()
	cmd := exec.Command(os.Args[0], "-test.run=^TestDeriveHelperProcess$", "-test.count=1")
	cmd.Env = append(os.Environ(), helperEnv+"=1", helperDB+"="+u.String(), helperTenant+"="+strconv.FormatInt(f.nt.TenantID, 10))
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	killed := false
	defer func() {
		if !killed {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
		}
	}()
	lines := bufio.NewScanner(stdout)
	for lines.Scan() && lines.Text() != "paused" {
		if strings.HasPrefix(lines.Text(), "error") || strings.HasPrefix(lines.Text(), "finished") {
			t.Fatalf("helper: %s", lines.Text())
		}
	}

	// Hold every v2 count row: the fourth batch inserts its rows, then
	// waits here to add their counts, inside its transaction.
	tx, err := f.owner.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx)
	if _, err := tx.Exec(ctx, `SELECT 1 FROM term_stats WHERE tenant_id = $1 AND dict_version = 2 FOR UPDATE`, f.nt.TenantID); err != nil {
		t.Fatal(err)
	}
	if _, err := fmt.Fprintln(stdin, "go"); err != nil {
		t.Fatal(err)
	}
	f.await(t, `SELECT count(*) FROM pg_stat_activity WHERE application_name = $1 AND wait_event_type = 'Lock'`, app, 1)
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	killed = true
	if err := tx.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	// The orphaned backend finds its client gone and rolls back.
	f.await(t, `SELECT count(*) FROM pg_stat_activity WHERE application_name = $1`, app, 0)

	r, err := f.db.Rollout(ctx, f.nt.TenantID, 2)
	if err != nil {
		t.Fatal(err)
	}
	if r.State != store.RolloutDeriving || r.DerivedUpto != ids[14] || r.Derived != 15 || f.rows(t, 2) != 15 {
		t.Fatalf("after the kill: %+v with %d v2 rows (want 3 batches of 5 up to item %d)", r, f.rows(t, 2), ids[14])
	}
	if f.active(t) != 1 || f.snapshot(t, f.eng).DictVersion != 1 {
		t.Fatal("the old version is not serving after the kill")
	}
	f.mustBeClean(t, f.eng)

	start := time.Now()
	r, err = (&ops.Deriver{St: f.db, Batch: 5}).Derive(ctx, f.nt.TenantID, 2, admin)
	if err != nil {
		t.Fatal(err)
	}
	if r.State != store.RolloutReady || r.Derived != 32 || f.rows(t, 2) != 32 {
		t.Fatalf("resumed: %+v with %d rows", r, f.rows(t, 2))
	}
	t.Logf("resumed after waiting %v for the dead worker's lease", time.Since(start).Round(10*time.Millisecond))
	f.mustBeClean(t, f.eng)
	if _, err := f.db.Flip(ctx, f.nt.TenantID, 2, admin); err != nil {
		t.Fatal(err)
	}
	f.mustBeClean(t, f.eng)
}

// await polls a count query until it returns want.
func (f *fixture) await(t *testing.T, sql string, arg any, want int64) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for {
		if n := f.int64(t, sql, arg); n == want {
			return
		} else if time.Now().After(deadline) {
			t.Fatalf("%s: %d, want %d", sql, n, want)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// Environment of the capture-and-chain helper process.
const (
	chainHelperEnv = "PERPETUITY_OPS_CHAIN_HELPER"
	chainHelperWho = "PERPETUITY_OPS_CHAIN_WHO" // tenant,user,conversation,conversation
)

// TestChainHelperProcess is not a test: TestChainSurvivesKill runs the
// test binary again with only this function, as the serving process it
// kills. It captures twelve turns and lets its chain writer catch up
// ("caught up SEQ"), captures eight more and says "paused"; on a line from
// stdin it starts a catch-up and two captures at once, a live question's
// (committed apart) in the first conversation and one sent whole with its
// COMMIT in the second, and waits to be killed inside all three.
func TestChainHelperProcess(t *testing.T) {
	if os.Getenv(chainHelperEnv) == "" {
		return
	}
	ctx := context.Background()
	fail := func(err error) {
		fmt.Println("error", err)
		os.Exit(3)
	}
	db, err := store.Open(ctx, os.Getenv(helperDB))
	if err != nil {
		fail(err)
	}
	var ids [4]int64
	for i, s := range strings.Split(os.Getenv(chainHelperWho), ",") {
		if ids[i], err = strconv.ParseInt(s, 10, 64); err != nil {
			fail(err)
		}
	}
	v1, err := dict.Builtin(1)
	if err != nil {
		fail(err)
	}
	w := chain.NewWriter(db, lexicon(t), chain.Rules{}, nil)
	eng := memory.New(db, words{}, memory.DictTerms{D: v1}, memory.Options{BaseTau: 5000, Chain: w})
	f := &fixture{db: db, nt: store.NewTenant{TenantID: ids[0]}}
	c1 := memory.Who{TenantID: ids[0], UserID: ids[1], UserName: "alice", ConversationID: ids[2]}
	c2 := c1
	c2.ConversationID = ids[3]
	f.discuss(t, eng, c1, 0, 6)
	f.discuss(t, eng, c2, 0, 6)
	if err := w.CatchUp(ctx, ids[0]); err != nil {
		fail(err)
	}
	mark, err := db.ChainHead(ctx, ids[0])
	if err != nil {
		fail(err)
	}
	fmt.Println("caught up", mark)
	f.discuss(t, eng, c1, 6, 4)
	f.discuss(t, eng, c2, 6, 4)
	if t.Failed() {
		fail(fmt.Errorf("captures failed"))
	}
	fmt.Println("paused")
	_, _ = bufio.NewReader(os.Stdin).ReadString('\n')
	go func() { fmt.Println("caught up", w.CatchUp(ctx, ids[0])) }()
	for _, m := range []memory.Message{
		{Who: c1, Role: "user", Text: "the question the kill refuses", Position: 10, CommitApart: true},
		{Who: c2, Role: "user", Text: "the message sent whole", Position: 10},
	} {
		go func() { _, err := eng.Capture(ctx, m); fmt.Println("captured", err) }()
	}
	select {} // never returns: the parent kills it
}

// TestChainSurvivesKill kills (SIGKILL) a serving process while two
// captures wait inside their transactions and the chain writer inside the
// one that stores its edges and watermark. The writer and the capture
// committed apart leave nothing; the capture sent whole with its COMMIT
// is stored once the head comes free, past the watermark. The graph and
// watermark are those of the last committed catch-up, consistent with a
// rebuild up to it; a new writer (the restart) resumes from that
// watermark, and integrity, the chain rebuild included, is clean.
func TestChainSurvivesKill(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newFixture(t)
	a1 := f.who(t, "alice", "c1")
	a2 := f.who(t, "alice", "c2")

	app := "chain-helper-" + strings.ToLower(rand.Text()[:8])
	u, err := url.Parse(f.db.Pool.Config().ConnString())
	if err != nil {
		t.Fatal(err)
	}
	q := u.Query()
	q.Set("application_name", app)
	u.RawQuery = q.Encode()
	cmd := exec.Command(os.Args[0], "-test.run=^TestChainHelperProcess$", "-test.count=1")
	cmd.Env = append(os.Environ(), chainHelperEnv+"=1", helperDB+"="+u.String(),
		fmt.Sprintf("%s=%d,%d,%d,%d", chainHelperWho, f.nt.TenantID, a1.UserID, a1.ConversationID, a2.ConversationID))
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	killed := false
	defer func() {
		if !killed {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
		}
	}()
	var mark int64
	lines := bufio.NewScanner(stdout)
	for lines.Scan() && lines.Text() != "paused" {
		if s, ok := strings.CutPrefix(lines.Text(), "caught up "); ok {
			mark, _ = strconv.ParseInt(s, 10, 64)
		}
		if strings.HasPrefix(lines.Text(), "error") || strings.HasPrefix(lines.Text(), "---") {
			t.Fatalf("helper: %s", lines.Text())
		}
	}
	if mark == 0 {
		t.Fatal("the helper's writer stored no watermark before the pause")
	}

	// Hold the head, where the next capture waits inside its transaction
	// with its message written, and every item, where the writer's edges
	// wait for their foreign keys inside its transaction.
	tx, err := f.owner.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx)
	for _, q := range []string{
		`SELECT 1 FROM tenant_heads WHERE tenant_id = $1 FOR UPDATE`,
		`SELECT 1 FROM items WHERE tenant_id = $1 FOR UPDATE`,
	} {
		if _, err := tx.Exec(ctx, q, f.nt.TenantID); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := fmt.Fprintln(stdin, "go"); err != nil {
		t.Fatal(err)
	}
	f.await(t, `SELECT count(*) FROM pg_stat_activity WHERE application_name = $1 AND wait_event_type = 'Lock'`, app, 3)
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	killed = true
	if err := tx.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	f.await(t, `SELECT count(*) FROM pg_stat_activity WHERE application_name = $1`, app, 0)

	edges := func(upto int64) (stored, rebuilt []string) {
		t.Helper()
		es, err := f.db.ChainEdges(ctx, f.nt.TenantID)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range es {
			stored = append(stored, fmt.Sprint(e.ChainEdge))
		}
		rs, err := chain.Rebuild(ctx, f.db, lexicon(t), chain.Rules{}, f.nt.TenantID, upto)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range rs {
			rebuilt = append(rebuilt, fmt.Sprint(e.ChainEdge))
		}
		slices.Sort(stored)
		slices.Sort(rebuilt)
		return stored, rebuilt
	}
	head, err := f.db.ReadHead(ctx, f.nt.TenantID)
	if err != nil {
		t.Fatal(err)
	}
	if at, err := f.db.ChainHead(ctx, f.nt.TenantID); err != nil || at != mark {
		t.Fatalf("after the kill the watermark is %d (%v), want the committed %d", at, err, mark)
	}
	if n := f.int64(t, `SELECT count(*) FROM messages WHERE tenant_id = $1`, f.nt.TenantID); n != 21 || head.Seq <= mark {
		t.Fatalf("after the kill %d messages at head %d, want the 20 committed and the one sent whole past watermark %d", n, head.Seq, mark)
	}
	if n := f.int64(t, `SELECT count(*) FROM messages WHERE tenant_id = $1 AND position = 10 AND conversation_id = $2`,
		f.nt.TenantID, a2.ConversationID); n != 1 {
		t.Fatalf("%d messages sent whole stored, want 1", n)
	}
	before, want := edges(mark)
	if len(before) == 0 || !slices.Equal(before, want) {
		t.Fatalf("after the kill %d edges, a rebuild up to %d derives %d", len(before), mark, len(want))
	}
	if rep := f.mustBeClean(t, f.engine()); !strings.Contains(rep.Notes, "not caught up") {
		t.Fatalf("notes %q: the writer was behind", rep.Notes)
	}

	f.catchUp(t, f.writer(t)) // the restarted process's writer
	if at, err := f.db.ChainHead(ctx, f.nt.TenantID); err != nil || at != head.Seq {
		t.Fatalf("after the restart the watermark is %d (%v), want the head %d", at, err, head.Seq)
	}
	after, want := edges(head.Seq)
	if len(after) <= len(before) || !slices.Equal(after, want) {
		t.Fatalf("after the restart %d edges (%d before), a rebuild derives %d", len(after), len(before), len(want))
	}
	for _, e := range before {
		if !slices.Contains(after, e) {
			t.Fatalf("edge %s of the committed catch-up went", e)
		}
	}
	if rep := f.mustBeClean(t, f.engine()); strings.Contains(rep.Notes, "chain edges") {
		t.Fatalf("notes %q once the writer caught up", rep.Notes)
	}
}
