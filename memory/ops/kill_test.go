package ops_test

import (
	"bufio"
	"context"
	"crypto/rand"
	"fmt"
	"github.com/perpetuity/perpetuity/migrations/dbtest"
	"net/url"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/perpetuity/perpetuity/memory/ops"
	"github.com/perpetuity/perpetuity/memory/store"
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
