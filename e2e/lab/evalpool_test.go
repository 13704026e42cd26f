package lab

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/perpetuity/perpetuity/memory/importer/locomo"
	"github.com/perpetuity/perpetuity/memory/store"
	"github.com/perpetuity/perpetuity/migrations/dbtest"
)

// poolItem is a stored item as the determinism check compares it: nothing
// that a sequence hands out (ids, the tenant's seq).
type poolItem struct {
	User, Conv, Title string
	Position, Part    int
	Role, Speaker     string
	Body              string
	Tokens            []string
	BornAt            string
	BornClock         int64
}

const poolItemsSQL = `SELECT u.name, c.ext_key, c.title, m.position, i.part, i.role, i.speaker, i.body, i.tokens,
		to_char(i.born_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS'), i.born_clock
	FROM items i
	JOIN messages m ON m.tenant_id = i.tenant_id AND m.id = i.message_id
	JOIN conversations c ON c.tenant_id = i.tenant_id AND c.id = i.conversation_id
	JOIN memory_users u ON u.tenant_id = i.tenant_id AND u.id = i.user_id
	WHERE i.tenant_id = $1
	ORDER BY u.name, c.ext_key, m.position, i.part`

func readPoolItems(ctx context.Context, db *store.DB, tenantID int64) ([]poolItem, error) {
	var out []poolItem
	err := db.InTenantRead(ctx, tenantID, func(tx pgx.Tx) error {
		rows, err := tx.Query(ctx, poolItemsSQL, tenantID)
		if err != nil {
			return err
		}
		out, err = pgx.CollectRows(rows, pgx.RowToStructByPos[poolItem])
		return err
	})
	return out, err
}

// TestEvalLocomoPool runs eval --pool 5 on the two-sample fixture twice: five
// memory users hold memory, the three distractors speak under other names
// at earlier dates, both runs store the same items, and the report carries
// the run alone beside the pooled one.
func TestEvalLocomoPool(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	dbURL := dbtest.New(t)
	f, err := os.Open(locomoFixture)
	if err != nil {
		t.Fatal(err)
	}
	samples, err := locomo.Load(f)
	f.Close()
	if err != nil {
		t.Fatal(err)
	}
	var snaps [][]poolItem
	for run := range 2 {
		var stdout, stderr bytes.Buffer
		pf := &poolFill{users: 5, file: samples, inspect: func(ctx context.Context, db *store.DB, tenantID int64) error {
			items, err := readPoolItems(ctx, db, tenantID)
			snaps = append(snaps, items)
			return err
		}}
		err := evalPooled(ctx, testEnv(map[string]string{"DATABASE_URL": dbURL}, &stdout, &stderr), samples,
			evalOptions{concurrency: 4}, pf, true, time.Now())
		if err != nil {
			t.Fatalf("run %d: %v\nstderr:\n%s", run, err, stderr.String())
		}
		var got locomo.PoolSummary
		dec := json.NewDecoder(&stdout)
		dec.DisallowUnknownFields()
		if err := dec.Decode(&got); err != nil {
			t.Fatalf("run %d: output is not the pooled summary: %v\n%s", run, err, stdout.String())
		}
		if got.Pool.Users != 5 || got.Pool.Distractors != 3 {
			t.Errorf("run %d: pool %+v, want 5 users of which 3 distractors", run, got.Pool)
		}
		for name, s := range map[string]locomo.Summary{"alone": got.Alone, "pooled": got.Pooled} {
			if s.Questions != 8 || len(s.Ceilings) != 5 || s.Overall.TokensMean <= 0 {
				t.Errorf("run %d: %s: %d questions, %d ceilings, overall %+v", run, name, s.Questions, len(s.Ceilings), s.Overall)
			}
		}
	}
	if len(snaps) != 2 {
		t.Fatalf("inspected %d filled tenants, want 2", len(snaps))
	}
	if !reflect.DeepEqual(snaps[0], snaps[1]) {
		t.Errorf("two runs stored different items:\n%v\n%v", snaps[0], snaps[1])
	}

	items := snaps[0]
	users := map[string]bool{}
	real := map[[3]any][]time.Time{} // conversation, position, part -> times of real items
	for _, it := range items {
		users[it.User] = true
		if !strings.HasPrefix(it.User, "pool-") {
			at, _ := time.Parse("2006-01-02T15:04:05", it.BornAt)
			k := [3]any{it.Conv, it.Position, it.Part}
			real[k] = append(real[k], at)
		}
	}
	if len(users) != 5 {
		t.Errorf("%d memory users hold memory, want 5: %v", len(users), users)
	}
	originals := []string{"Caroline", "Melanie", "Jon", "Gina"}
	distractors := 0
	for _, it := range items {
		if !strings.HasPrefix(it.User, "pool-") {
			continue
		}
		distractors++
		for _, o := range originals {
			if it.Speaker == o || strings.Contains(it.Body, o) || strings.Contains(it.Title, o) {
				t.Errorf("distractor %s item %s#%d still names %s: speaker %q, %q", it.User, it.Conv, it.Position, o, it.Speaker, it.Body)
			}
		}
		if it.Speaker == "" {
			t.Errorf("distractor %s item %s#%d has no speaker", it.User, it.Conv, it.Position)
		}
		// Every distractor turn is a source turn moved back by whole days.
		at, err := time.Parse("2006-01-02T15:04:05", it.BornAt)
		if err != nil {
			t.Fatal(err)
		}
		shifted := false
		for _, r := range real[[3]any{it.Conv, it.Position, it.Part}] {
			if d := r.Sub(at); d >= 30*24*time.Hour && d%(24*time.Hour) == 0 {
				shifted = true
			}
		}
		if !shifted {
			t.Errorf("distractor %s item %s#%d at %s is no source turn moved back by whole days (sources %v)",
				it.User, it.Conv, it.Position, it.BornAt, real[[3]any{it.Conv, it.Position, it.Part}])
		}
	}
	if distractors == 0 {
		t.Errorf("no distractor items among %d", len(items))
	}

	// Nothing stays in the database the eval was given.
	conn, err := pgx.Connect(ctx, dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var n int
	if err := conn.QueryRow(ctx, `SELECT count(*) FROM tenants`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n != 0 {
		t.Errorf("%d tenants left in the given database", n)
	}
}

// TestEvalLocomoPoolTable: --pool and --dict after the file; the table puts
// pooled beside alone.
func TestEvalLocomoPoolTable(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	dbURL := dbtest.New(t)
	var stdout, stderr bytes.Buffer
	err := runEval(ctx, testEnv(map[string]string{"DATABASE_URL": dbURL}, &stdout, &stderr), []string{"locomo", locomoFixture, "--pool", "3", "--dict", "1"})
	if err != nil {
		t.Fatalf("eval: %v\nstderr:\n%s", err, stderr.String())
	}
	for _, w := range []string{
		"pooled beside alone: 2 samples, 8 questions",
		"pool: 3 memory users hold memory (1 distractors",
		"frame   category         questions    alone  pooled       d    alone  pooled       d",
		"server-chosen frame, categories 1-4, alone: recall",
		"server-chosen frame, categories 1-4, pooled: recall",
	} {
		if !strings.Contains(stdout.String(), w) {
			t.Errorf("table lacks %q:\n%s", w, stdout.String())
		}
	}
	if !strings.Contains(stderr.String(), "flipped to dictionary v1") {
		t.Errorf("--dict 1 was not applied:\n%s", stderr.String())
	}
}
