package app

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/perpetuity/perpetuity/memory"
	"github.com/perpetuity/perpetuity/memory/store"
	"github.com/perpetuity/perpetuity/migrations/dbtest"
)

// opsWorld is a database with two tenants on v1, each with stored memory,
// captured the way serving captures it.
type opsWorld struct {
	url    string
	db     *store.DB
	eng    *memory.Engine
	acme   store.NewTenant
	globex store.NewTenant
}

func newOpsWorld(t *testing.T) *opsWorld {
	t.Helper()
	ctx := context.Background()
	w := &opsWorld{url: dbtest.New(t)}
	db, err := store.Open(ctx, w.url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(db.Close)
	w.db = db
	if w.eng, err = newEngine(ctx, Config{}, db); err != nil {
		t.Fatal(err)
	}
	// Tenants from before v3 was the default: rollouts move them on.
	v1 := store.TenantOptions{Dict: 1}
	if w.acme, err = db.CreateTenantWith(ctx, "acme", "alice", v1); err != nil {
		t.Fatal(err)
	}
	if w.globex, err = db.CreateTenantWith(ctx, "globex", "gina", v1); err != nil {
		t.Fatal(err)
	}
	w.say(t, w.acme, "alice", "Caroline painted a sunset over the lake with her children")
	w.say(t, w.acme, "bob", "Bob adopted two dogs and went swimming")
	w.say(t, w.globex, "gina", "Gina bought running shoes for the marathon trips")
	return w
}

func (w *opsWorld) say(t *testing.T, nt store.NewTenant, user, text string) {
	t.Helper()
	ctx := context.Background()
	uid, err := w.db.EnsureUser(ctx, nt.TenantID, user)
	if err != nil {
		t.Fatal(err)
	}
	cid, err := w.db.EnsureConversation(ctx, nt.TenantID, uid, "c", "")
	if err != nil {
		t.Fatal(err)
	}
	for i, s := range strings.Split(text+". "+text+" again", ". ") {
		if _, err := w.eng.Capture(ctx, memory.Message{Who: memory.Who{TenantID: nt.TenantID, UserID: uid, ConversationID: cid},
			Role: "user", Text: s, Position: i, At: time.Now()}); err != nil {
			t.Fatal(err)
		}
	}
}

// run runs one command against the world's database.
func (w *opsWorld) run(t *testing.T, stdin string, cmd func(context.Context, env, []string) error, args ...string) (string, string, error) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	e := testEnv(map[string]string{"DATABASE_URL": w.url}, &stdout, &stderr)
	e.stdin = strings.NewReader(stdin)
	err := cmd(context.Background(), e, args)
	return stdout.String(), stderr.String(), err
}

func (w *opsWorld) active(t *testing.T, tenantID int64) int {
	t.Helper()
	st, err := w.db.DictStatus(context.Background(), tenantID)
	if err != nil {
		t.Fatal(err)
	}
	return st.Active
}

func TestDictCommands(t *testing.T) {
	t.Parallel()
	w := newOpsWorld(t)
	mustContain := func(what, got string, want ...string) {
		t.Helper()
		for _, s := range want {
			if !strings.Contains(got, s) {
				t.Fatalf("%s lacks %q:\n%s", what, s, got)
			}
		}
	}

	out, _, err := w.run(t, "", runDict, "upload", "../memory/dict/data/v2.tsv")
	if err != nil {
		t.Fatal(err)
	}
	mustContain("upload", out, "loaded dictionary v2", "dark")
	out, _, err = w.run(t, "", runDict, "upload", "--builtin", "2")
	if err != nil {
		t.Fatal(err)
	}
	mustContain("second upload", out, "already loaded")
	other := filepath.Join(t.TempDir(), "v2.tsv")
	if err := os.WriteFile(other, []byte("perpetuity-dictionary\t2\tsomething else\n[terms]\ngarden\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, _, err := w.run(t, "", runDict, "upload", other); err == nil || !strings.Contains(err.Error(), "version 3") || ExitCode(err) != 1 {
		t.Fatalf("conflicting upload: %v", err)
	}
	bad := filepath.Join(t.TempDir(), "bad.tsv")
	if err := os.WriteFile(bad, []byte("not a dictionary\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, _, err := w.run(t, "", runDict, "upload", bad); err == nil || !strings.Contains(err.Error(), "line 1") {
		t.Fatalf("malformed upload: %v", err)
	}

	if _, _, err := w.run(t, "", runDict, "flip", "2"); err == nil || !strings.Contains(err.Error(), "no tenant was flipped") {
		t.Fatalf("flip before derive: %v", err)
	}
	out, errOut, err := w.run(t, "", runDict, "derive", "2", "--batch", "2")
	if err != nil {
		t.Fatal(err)
	}
	mustContain("derive stdout", out, "tenant "+itoa(w.acme.TenantID)+": v2 ready (4 rows derived", "tenant "+itoa(w.globex.TenantID)+": v2 ready")
	mustContain("derive progress bar", errOut, "derive v2 tenant", "] 100%", "[#####")
	if w.active(t, w.acme.TenantID) != 1 {
		t.Fatal("derive changed what serves")
	}
	out, _, err = w.run(t, "", runDict, "status")
	if err != nil {
		t.Fatal(err)
	}
	mustContain("status", out, "v1 ", "v2 ", `"acme": serving v1; v2 ready`, `"globex": serving v1; v2 ready`)

	out, _, err = w.run(t, "", runDict, "flip", "2")
	if err != nil {
		t.Fatal(err)
	}
	mustContain("flip all", out, "v1 -> v2", "kept for a flip back")
	if w.active(t, w.acme.TenantID) != 2 || w.active(t, w.globex.TenantID) != 2 {
		t.Fatal("flip did not reach every tenant")
	}
	if _, _, err := w.run(t, "", runDict, "flip", "1", "--tenant", itoa(w.acme.TenantID)); err != nil {
		t.Fatal(err)
	}
	if w.active(t, w.acme.TenantID) != 1 || w.active(t, w.globex.TenantID) != 2 {
		t.Fatal("flip of one tenant")
	}
	out, _, err = w.run(t, "", runDict, "retire", "2")
	if err != nil {
		t.Fatal(err)
	}
	mustContain("retire", out, "v2 retired, 4 rows removed", "serves v2: kept")
	out, _, err = w.run(t, "", runIntegrity)
	if err != nil {
		t.Fatalf("integrity after the rollout: %v\n%s", err, out)
	}

	for _, args := range [][]string{{}, {"frobnicate"}, {"derive"}, {"derive", "two"}, {"flip", "0"}, {"upload"},
		{"upload", "x", "--builtin", "2"}, {"status", "extra"}, {"derive", "2", "--batch", "0"}} {
		if _, _, err := w.run(t, "", runDict, args...); ExitCode(err) != 2 {
			t.Errorf("dict %v: %v, want a usage error", args, err)
		}
	}
}

func TestIntegrityCommand(t *testing.T) {
	t.Parallel()
	w := newOpsWorld(t)
	out, _, err := w.run(t, "", runIntegrity)
	if err != nil {
		t.Fatalf("clean database: %v\n%s", err, out)
	}
	if strings.Count(out, ": OK [report") != 2 {
		t.Fatalf("want two OK tenants:\n%s", out)
	}
	// Captures leave their counts in stat_deltas until a fold: the row
	// broken here holds them all first.
	if _, err := w.db.FoldStats(context.Background(), w.globex.TenantID); err != nil {
		t.Fatal(err)
	}
	if _, err := dbtest.Owner(t, w.url).Exec(context.Background(), `UPDATE corpus_stats SET items = items + 1 WHERE tenant_id = $1`, w.globex.TenantID); err != nil {
		t.Fatal(err)
	}
	out, _, err = w.run(t, "", runIntegrity)
	if err == nil || ExitCode(err) != 1 || !strings.Contains(err.Error(), "1 violations in 1 of 2 tenants") {
		t.Fatalf("broken database: %v", err)
	}
	if !strings.Contains(out, "stats.corpus") || !strings.Contains(out, `"recount_items"`) {
		t.Fatalf("the violation and its rows are not printed:\n%s", out)
	}
	out, _, err = w.run(t, "", runIntegrity, "--tenant", itoa(w.acme.TenantID))
	if err != nil || strings.Contains(out, "globex") {
		t.Fatalf("one tenant: %v\n%s", err, out)
	}
	if _, _, err := w.run(t, "", runIntegrity, "--tenant", "999999"); err == nil {
		t.Fatal("unknown tenant accepted")
	}
	if _, _, err := w.run(t, "", runIntegrity, "extra"); ExitCode(err) != 2 {
		t.Fatalf("stray argument: %v", err)
	}
	reps, err := w.db.IntegrityReports(context.Background(), w.globex.TenantID, 10)
	if err != nil || len(reps) != 2 || reps[0].Violations != 1 || reps[1].Violations != 0 {
		t.Fatalf("kept reports %+v %v", reps, err)
	}
}

func TestPurgeCommand(t *testing.T) {
	t.Parallel()
	w := newOpsWorld(t)
	ctx := context.Background()
	owner := dbtest.Owner(t, w.url)
	count := func(user string) int64 {
		t.Helper()
		var n int64
		if err := owner.QueryRow(ctx, `SELECT count(*) FROM items i JOIN memory_users u ON u.tenant_id = i.tenant_id AND u.id = i.user_id
			WHERE i.tenant_id = $1 AND u.name = $2`, w.acme.TenantID, user).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	tenant := itoa(w.acme.TenantID)
	if _, _, err := w.run(t, "bob\n", runPurge, "--tenant", tenant, "--user", "alice"); err == nil || count("alice") != 2 {
		t.Fatalf("a wrong confirmation purged: %v (%d items left)", err, count("alice"))
	}
	out, errOut, err := w.run(t, "alice\n", runPurge, "--tenant", tenant, "--user", "alice")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(errOut, "Type the user's name") || !strings.Contains(out, "2 items, 2 messages, 1 conversations") {
		t.Fatalf("purge output:\n%s\n%s", errOut, out)
	}
	if count("alice") != 0 || count("bob") != 2 {
		t.Fatalf("after the purge alice has %d items, bob %d", count("alice"), count("bob"))
	}
	if _, _, err := w.run(t, "", runPurge, "--tenant", tenant, "--user", "bob", "--yes"); err != nil || count("bob") != 0 {
		t.Fatalf("purge --yes: %v", err)
	}
	if _, _, err := w.run(t, "", runPurge, "--tenant", tenant, "--user", "nobody", "--yes"); err == nil || !strings.Contains(err.Error(), "not found") {
		t.Fatalf("unknown user: %v", err)
	}
	for _, args := range [][]string{{}, {"--tenant", tenant}, {"--user", "alice"}, {"--tenant", "0", "--user", "a"}} {
		if _, _, err := w.run(t, "", runPurge, args...); ExitCode(err) != 2 {
			t.Errorf("purge %v: %v, want a usage error", args, err)
		}
	}
	if out, _, err := w.run(t, "", runIntegrity); err != nil {
		t.Fatalf("integrity after purges: %v\n%s", err, out)
	}
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

func TestRedactCommand(t *testing.T) {
	t.Parallel()
	w := newOpsWorld(t)
	ctx := context.Background()
	owner := dbtest.Owner(t, w.url)
	ids := func(user string) []int64 {
		t.Helper()
		var out []int64
		if err := owner.QueryRow(ctx, `SELECT coalesce(array_agg(i.id ORDER BY i.id), '{}') FROM items i
			JOIN memory_users u ON u.tenant_id = i.tenant_id AND u.id = i.user_id
			WHERE i.tenant_id = $1 AND u.name = $2`, w.acme.TenantID, user).Scan(&out); err != nil {
			t.Fatal(err)
		}
		return out
	}
	tenant := itoa(w.acme.TenantID)
	alice := ids("alice")
	item := itoa(alice[0])
	if _, _, err := w.run(t, itoa(alice[1])+"\n", runRedact, "--tenant", tenant, item); err == nil || len(ids("alice")) != 2 {
		t.Fatalf("a wrong confirmation redacted: %v (%d items left)", err, len(ids("alice")))
	}
	out, errOut, err := w.run(t, "#"+item+"\n", runRedact, "--tenant", tenant, item)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(errOut, "Type the item's id") || !strings.Contains(out, "redacted item #"+item) || strings.Contains(errOut+out, "Caroline") {
		t.Fatalf("redact output:\n%s\n%s", errOut, out)
	}
	if got := ids("alice"); len(got) != 1 || got[0] != alice[1] || len(ids("bob")) != 2 {
		t.Fatalf("after the redaction alice has %v, bob %v", got, ids("bob"))
	}
	out, _, err = w.run(t, "", runRedact, "--tenant", tenant, "--yes", "--json", itoa(alice[1]))
	if err != nil || !strings.Contains(out, `"item_id":`+itoa(alice[1])) || !strings.Contains(out, `"message_removed":true`) {
		t.Fatalf("redact --json: %v\n%s", err, out)
	}
	if _, _, err := w.run(t, "", runRedact, "--tenant", itoa(w.globex.TenantID), "--yes", itoa(ids("bob")[0])); err == nil ||
		!strings.Contains(err.Error(), "not found") || len(ids("bob")) != 2 {
		t.Fatalf("another tenant's item: %v", err)
	}
	var audits int64
	if err := owner.QueryRow(ctx, `SELECT count(*) FROM audit_log WHERE tenant_id = $1 AND action = 'memory.redact' AND actor_email = 'cli'`,
		w.acme.TenantID).Scan(&audits); err != nil || audits != 2 {
		t.Fatalf("%d audit entries: %v", audits, err)
	}
	if out, _, err := w.run(t, "", runIntegrity); err != nil {
		t.Fatalf("integrity after redactions: %v\n%s", err, out)
	}
}
