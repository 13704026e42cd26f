package app

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/perpetuity/perpetuity/memory"
	"github.com/perpetuity/perpetuity/memory/dict"
	"github.com/perpetuity/perpetuity/memory/ops"
	"github.com/perpetuity/perpetuity/memory/store"
	"github.com/perpetuity/perpetuity/migrations/dbtest"
)

// A store from before v3 was the default (issue 16, item 4): one tenant on
// v1 whose memory came in through `perpetuity import`, and no v3 loaded.
// The question shares no word with any turn: only meaning finds the
// garden turns.
const meaningQuestion = "Which vegetables?"

var (
	gardenTurns = []string{
		"I planted tomatoes and carrots in the backyard",
		"The lettuce and cucumbers came up early this spring",
		"We picked peppers and onions from the beds",
		"Spinach and broccoli need more water in July",
	}
	otherTurns = []string{
		"My dog loves long walks by the river",
		"The flight to Lisbon was delayed by two hours",
		"I finished reading a mystery novel last night",
		"Our team won the basketball match on Friday",
		"I bought a new laptop for work",
	}
)

// rolloutStore is a database as an upgraded deployment has it.
type rolloutStore struct {
	vars   map[string]string
	db     *store.DB
	owner  *pgxpool.Pool
	tenant int64
	dir    string
	files  int
}

func newRolloutStore(t *testing.T) *rolloutStore {
	t.Helper()
	ctx := context.Background()
	url := dbtest.New(t)
	s := &rolloutStore{vars: map[string]string{"DATABASE_URL": url}, owner: dbtest.Owner(t, url), dir: t.TempDir()}
	// The test template holds the default dictionary; a deployment that
	// predates it does not.
	if _, err := s.owner.Exec(ctx, `DELETE FROM dictionaries WHERE version = $1`, dict.Default); err != nil {
		t.Fatal(err)
	}
	out, _, err := s.cli(t, nil, "tenant", "create", "--dict", "1", "--json", "acme")
	if err != nil {
		t.Fatal(err)
	}
	var nt struct {
		TenantID int64 `json:"tenant_id"`
	}
	if err := json.Unmarshal([]byte(out), &nt); err != nil {
		t.Fatal(err)
	}
	s.tenant = nt.TenantID
	if s.db, err = store.Open(ctx, url); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.db.Close)
	var turns []string
	for i := range 6 {
		for _, g := range gardenTurns {
			turns = append(turns, fmt.Sprintf("%s, day %d", g, i))
		}
		for _, o := range otherTurns {
			turns = append(turns, fmt.Sprintf("%s, day %d", o, i))
		}
	}
	s.importTurns(t, "history", turns)
	return s
}

// cli runs one command as `perpetuity ARGS...` would, stderr going to w
// when given.
func (s *rolloutStore) cli(t *testing.T, w *hookWriter, args ...string) (string, string, error) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	e := testEnv(s.vars, &stdout, &stderr)
	if w != nil {
		e.stderr = w
	}
	err := run(context.Background(), e, args)
	return stdout.String(), stderr.String(), err
}

// importTurns stores turns of memory user joanna through `perpetuity import`.
func (s *rolloutStore) importTurns(t *testing.T, conv string, turns []string) {
	t.Helper()
	type turn struct {
		Role string    `json:"role"`
		Text string    `json:"text"`
		At   time.Time `json:"at"`
	}
	line := struct {
		Conversation string `json:"conversation"`
		Turns        []turn `json:"turns"`
	}{Conversation: conv}
	at := time.Date(2026, 6, 1, 9, 0, 0, 0, time.UTC)
	for i, x := range turns {
		line.Turns = append(line.Turns, turn{Role: "user", Text: x, At: at.Add(time.Duration(i) * time.Minute)})
	}
	b, err := json.Marshal(line)
	if err != nil {
		t.Fatal(err)
	}
	s.files++
	name := filepath.Join(s.dir, fmt.Sprintf("%d.jsonl", s.files))
	if err := os.WriteFile(name, append(b, '\n'), 0o600); err != nil {
		t.Fatal(err)
	}
	if out, errOut, err := s.cli(t, nil, "import", "--tenant", itoa(s.tenant), "--user", "joanna", name); err != nil {
		t.Fatalf("import: %v\n%s%s", err, out, errOut)
	}
}

func (s *rolloutStore) count(t *testing.T, sql string, args ...any) int64 {
	t.Helper()
	var n int64
	if err := s.owner.QueryRow(context.Background(), sql, args...).Scan(&n); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
	return n
}

func (s *rolloutStore) itemIDs(t *testing.T) []int64 {
	t.Helper()
	rows, err := s.owner.Query(context.Background(), `SELECT id FROM items WHERE tenant_id = $1 ORDER BY id`, s.tenant)
	if err != nil {
		t.Fatal(err)
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	if err != nil {
		t.Fatal(err)
	}
	return ids
}

// everyItemHasDenseV3 fails unless each of ids has a v3 row with a vector.
func (s *rolloutStore) everyItemHasDenseV3(t *testing.T, what string, ids []int64) {
	t.Helper()
	if n := s.count(t, `SELECT count(*) FROM retrieval_rows WHERE tenant_id = $1 AND dict_version = 3
		AND item_id = ANY($2) AND dense IS NOT NULL`, s.tenant, ids); n != int64(len(ids)) || len(ids) == 0 {
		t.Fatalf("%s: %d of %d items have a v3 row with a dense vector", what, n, len(ids))
	}
}

func (s *rolloutStore) active(t *testing.T) int {
	t.Helper()
	st, err := s.db.DictStatus(context.Background(), s.tenant)
	if err != nil {
		t.Fatal(err)
	}
	return st.Active
}

// rank is what retrieval answers the question with, in a serving engine.
func (s *rolloutStore) rank(t *testing.T, eng *memory.Engine, q string) []string {
	t.Helper()
	ctx := context.Background()
	uid, err := s.db.EnsureUser(ctx, s.tenant, "joanna")
	if err != nil {
		t.Fatal(err)
	}
	ids, err := eng.Rank(ctx, s.tenant, uid, q, 5)
	if err != nil {
		t.Fatal(err)
	}
	rows, err := s.owner.Query(ctx, `SELECT body FROM items WHERE tenant_id = $1 AND id = ANY($2)`, s.tenant, ids)
	if err != nil {
		t.Fatal(err)
	}
	bodies, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	return bodies
}

func isGarden(body string) bool {
	return slices.ContainsFunc(gardenTurns, func(g string) bool { return strings.HasPrefix(body, g) })
}

// hookWriter is a progress stream that runs on before taking each write (a derivation reports after starting and after every batch).
type hookWriter struct {
	mu sync.Mutex
	b  strings.Builder
	on func()
}

func (h *hookWriter) Write(p []byte) (int, error) {
	if h.on != nil {
		h.on()
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.b.Write(p)
}

func (h *hookWriter) String() string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.b.String()
}

// TestDictRolloutV3FromCLI (issue 16, item 4): an existing v1 tenant with
// stored memory moves to v3 with the commands an operator runs, upload,
// derive with progress, status, flip, and goes back with a flip; items
// captured while the derivation runs get v3 rows; after each flip the
// integrity check passes and retrieval answers with the version flipped to.
func TestDictRolloutV3FromCLI(t *testing.T) {
	t.Parallel()
	s := newRolloutStore(t)
	before := s.itemIDs(t)
	ctx := context.Background()
	eng, err := newEngine(ctx, Config{}, s.db) // a serving process
	if err != nil {
		t.Fatal(err)
	}
	if got := s.rank(t, eng, meaningQuestion); s.active(t) != 1 || len(got) != 0 {
		t.Fatalf("on v%d the question by meaning ranks %q, want nothing (no shared word)", s.active(t), got)
	}

	out, _, err := s.cli(t, nil, "dict", "upload", "--builtin", "3")
	if err != nil || !strings.Contains(out, "loaded dictionary v3") || !strings.Contains(out, "dark") {
		t.Fatalf("upload: %v\n%s", err, out)
	}
	if s.active(t) != 1 {
		t.Fatal("an upload changed what serves")
	}

	// Progress lines written while the derivation runs (up to three) first
	// store a turn through `perpetuity import`: the first line comes once
	// the derivation has started, before any batch (cursor 0).
	var during []int64
	var states []string
	w := &hookWriter{}
	w.on = func() {
		if len(states) == 3 {
			return
		}
		st, err := s.db.DictStatus(ctx, s.tenant)
		if err != nil || len(st.Rollouts) != 1 {
			t.Errorf("status during the derivation: %+v %v", st, err)
			return
		}
		if st.Rollouts[0].State != store.RolloutDeriving {
			return // the last lines come once it is ready
		}
		states = append(states, fmt.Sprintf("%d/%d", st.Rollouts[0].DerivedUpto, st.Rollouts[0].Target))
		have := s.itemIDs(t)
		s.importTurns(t, fmt.Sprintf("during-%d", len(states)),
			[]string{fmt.Sprintf("Kale and zucchini grew tall in the raised beds, week %d", len(states))})
		during = append(during, s.itemIDs(t)[len(have):]...)
	}
	out, _, err = s.cli(t, w, "dict", "derive", "3", "--tenant", itoa(s.tenant), "--batch", "4")
	if err != nil {
		t.Fatalf("derive: %v\n%s", err, out)
	}
	progress := w.String()
	for _, want := range []string{"derive v3 tenant " + itoa(s.tenant), "[#", "] 100%", fmt.Sprintf("%d rows", len(before))} {
		if !strings.Contains(progress, want) {
			t.Fatalf("progress lacks %q:\n%q", want, progress)
		}
	}
	if want := fmt.Sprintf("tenant %d: v3 ready (%d rows derived, %d items when it started)", s.tenant, len(before), len(before)); !strings.Contains(out, want) {
		t.Fatalf("derive says %q, want %q", out, want)
	}
	if len(states) == 0 || !strings.HasPrefix(states[0], "0/") || len(during) != len(states) {
		t.Fatalf("captures during the derivation: states %v, items %v", states, during)
	}
	s.everyItemHasDenseV3(t, "items captured during the derivation", during)
	s.everyItemHasDenseV3(t, "every item", s.itemIDs(t))
	if s.active(t) != 1 {
		t.Fatal("a derivation changed what serves")
	}

	out, _, err = s.cli(t, nil, "dict", "status")
	if err != nil || !strings.Contains(out, `"acme": serving v1; v3 ready`) || !strings.Contains(out, "v3 ") {
		t.Fatalf("status: %v\n%s", err, out)
	}
	out, _, err = s.cli(t, nil, "dict", "flip", "3", "--tenant", itoa(s.tenant))
	if err != nil || !strings.Contains(out, "v1 -> v3") || s.active(t) != 3 {
		t.Fatalf("flip: %v, v%d\n%s", err, s.active(t), out)
	}
	got := s.rank(t, eng, meaningQuestion)
	if len(got) == 0 || !slices.ContainsFunc(got, isGarden) {
		t.Fatalf("on v3 the question by meaning ranks %q, want garden turns", got)
	}
	for _, b := range got {
		if slices.ContainsFunc(otherTurns, func(o string) bool { return strings.HasPrefix(b, o) }) {
			t.Fatalf("on v3 the question by meaning ranks an unrelated turn: %q", got)
		}
	}
	if out, _, err := s.cli(t, nil, "integrity", "--tenant", itoa(s.tenant)); err != nil || !strings.Contains(out, ": OK [report") {
		t.Fatalf("integrity on v3: %v\n%s", err, out)
	}

	// Stored on v3: rows for v3 and for v1, the way back.
	s.importTurns(t, "after", []string{"The beans climbed the fence by August"})
	s.everyItemHasDenseV3(t, "every item after a capture on v3", s.itemIDs(t))
	if n := s.count(t, `SELECT count(*) FROM retrieval_rows WHERE tenant_id = $1 AND dict_version = 1`, s.tenant); n != int64(len(s.itemIDs(t))) {
		t.Fatalf("%d v1 rows for %d items: no way back", n, len(s.itemIDs(t)))
	}

	out, _, err = s.cli(t, nil, "dict", "flip", "1", "--tenant", itoa(s.tenant))
	if err != nil || !strings.Contains(out, "v3 -> v1") || s.active(t) != 1 {
		t.Fatalf("flip back: %v, v%d\n%s", err, s.active(t), out)
	}
	if got := s.rank(t, eng, meaningQuestion); len(got) != 0 {
		t.Fatalf("back on v1 the question by meaning ranks %q, want nothing", got)
	}
	if got := s.rank(t, eng, "tomatoes"); len(got) == 0 || !isGarden(got[0]) {
		t.Fatalf("back on v1 a question by words ranks %q", got)
	}
	if out, _, err := s.cli(t, nil, "integrity", "--tenant", itoa(s.tenant)); err != nil || !strings.Contains(out, ": OK [report") {
		t.Fatalf("integrity back on v1: %v\n%s", err, out)
	}
}

// TestCaptureBetweenDeriveBatches: turns stored through `perpetuity
// import` after the derivation's first batch committed, while the rest is
// still to derive, get v3 rows at capture (the derivation skips them), and
// the store ends clean.
func TestCaptureBetweenDeriveBatches(t *testing.T) {
	t.Parallel()
	s := newRolloutStore(t)
	ctx := context.Background()
	before := s.itemIDs(t)
	if _, _, err := s.cli(t, nil, "dict", "upload", "--builtin", "3"); err != nil {
		t.Fatal(err)
	}
	var during []int64
	var at store.Rollout
	d := &ops.Deriver{St: s.db, Batch: 4, Progress: func(r store.Rollout) {
		if len(during) > 0 || r.State != store.RolloutDeriving || r.DerivedUpto == 0 {
			return
		}
		at = r
		have := s.itemIDs(t)
		s.importTurns(t, "between", []string{"Kale and zucchini grew tall in the raised beds", "Joanna watered the pumpkins at dawn"})
		during = s.itemIDs(t)[len(have):]
	}}
	r, err := d.Derive(ctx, s.tenant, 3, cliActor())
	if err != nil || r.State != store.RolloutReady {
		t.Fatalf("derive: %+v %v", r, err)
	}
	if len(during) != 2 || at.DerivedUpto >= before[len(before)-1] {
		t.Fatalf("captured %v with the cursor at %d of %d: not between batches", during, at.DerivedUpto, before[len(before)-1])
	}
	if r.Derived != int64(len(before)) {
		t.Fatalf("the derivation wrote %d rows, want %d (the turns captured meanwhile have theirs from capture)", r.Derived, len(before))
	}
	s.everyItemHasDenseV3(t, "items captured between batches", during)
	s.everyItemHasDenseV3(t, "every item", s.itemIDs(t))
	if out, _, err := s.cli(t, nil, "integrity", "--tenant", itoa(s.tenant)); err != nil || !strings.Contains(out, ": OK [report") {
		t.Fatalf("integrity after the derivation: %v\n%s", err, out)
	}
	if _, _, err := s.cli(t, nil, "dict", "flip", "3", "--tenant", itoa(s.tenant)); err != nil || s.active(t) != 3 {
		t.Fatalf("flip: %v, v%d", err, s.active(t))
	}
	if out, _, err := s.cli(t, nil, "integrity", "--tenant", itoa(s.tenant)); err != nil || !strings.Contains(out, ": OK [report") {
		t.Fatalf("integrity on v3: %v\n%s", err, out)
	}
}
