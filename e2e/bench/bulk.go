package bench

import (
	"context"
	"fmt"
	"maps"
	"runtime"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/perpetuity/perpetuity/memory"
	"github.com/perpetuity/perpetuity/memory/arena"
	"github.com/perpetuity/perpetuity/memory/store"
)

// Tenant is a bench tenant: one memory user (with its own key) per
// synthetic user, and the conversations the loaded items live in.
type Tenant struct {
	ID    int64
	Key   string // the first key (memory user "bench"), for pass-through
	Users []int64
	Keys  []string        // per synthetic user (index = synthetic user - 1)
	Convs map[int64]int64 // synthetic conversation -> conversation id
	Items int             // synthetic items loaded
	Dict  int             // the tenant's dictionary version
	turns map[int64]int   // synthetic conversation -> turns loaded so far
	first map[int64]int64 // synthetic user -> a conversation of theirs
}

// Conversation returns a conversation of synthetic user u (1-based).
func (t *Tenant) Conversation(u int64) int64 { return t.Convs[t.first[u]] }

// NewTenant creates a tenant with users synthetic users, each with a key.
func NewTenant(ctx context.Context, db *store.DB, name string, users int) (*Tenant, error) {
	return NewTenantOn(ctx, db, name, users, 0)
}

// NewTenantOn is NewTenant for a tenant created on a dictionary version (0:
// the one create_tenant picks); the version must be in the database.
func NewTenantOn(ctx context.Context, db *store.DB, name string, users, version int) (*Tenant, error) {
	nt, err := db.CreateTenantWith(ctx, name, "bench", store.TenantOptions{Dict: version})
	if err != nil {
		return nil, err
	}
	t := &Tenant{ID: nt.TenantID, Key: nt.Key, Convs: map[int64]int64{}, turns: map[int64]int{}, first: map[int64]int64{}}
	for u := 1; u <= users; u++ {
		name := "u" + strconv.Itoa(u)
		id, err := db.EnsureUser(ctx, t.ID, name)
		if err != nil {
			return nil, err
		}
		_, key, err := db.CreateKey(ctx, t.ID, id, "bench "+name)
		if err != nil {
			return nil, err
		}
		t.Users, t.Keys = append(t.Users, id), append(t.Keys, key)
	}
	err = db.InTenant(ctx, t.ID, func(tx pgx.Tx) error {
		return tx.QueryRow(ctx, `SELECT dict_version FROM tenant_heads WHERE tenant_id = $1`, t.ID).Scan(&t.Dict)
	})
	if err != nil {
		return nil, fmt.Errorf("tenant head: %w", err)
	}
	return t, nil
}

// Loader writes synthetic items straight into PostgreSQL with COPY, as
// captures would have left them: a message and an item per turn, its
// retrieval row under the tenant's dictionary, the born-hot activation, the
// tenant-wide term and corpus counts, the users' clocks and the tenant's
// head, all in one transaction that takes the head lock first like a
// capture does, so arenas catch up on it like on any other commit.
type Loader struct {
	db    *store.DB
	vocab *Vocabulary
	count func(string) int // model tokens of a body
	// dicts derive each version's rows, with its vectors when it ships
	// them, as capture does (memory.DeriveRow).
	dicts map[int]memory.DictTerms
	// Tau is the decay constant items are born with (the engine's BaseTau
	// for a message of average novelty).
	Tau float64
	// Start is the creation time of the first item; turns are Every apart.
	Start time.Time
	Every time.Duration
}

// NewLoader builds a loader; count is the model-token counter.
// It loads tenants on the vocabulary's dictionary; Dictionary adds others.
func NewLoader(db *store.DB, v *Vocabulary, count func(string) int) *Loader {
	return &Loader{db: db, vocab: v, count: count, Tau: 50_000,
		dicts: map[int]memory.DictTerms{v.dict.Version: {D: v.dict}},
		Start: time.Date(2024, 1, 1, 9, 0, 0, 0, time.UTC), Every: 30 * time.Second}
}

// Dictionary lets the loader load tenants that serve d's version.
func (l *Loader) Dictionary(d memory.DictTerms) { l.dicts[d.D.Version] = d }

const (
	reserveSQL    = `SELECT nextval(pg_get_serial_sequence($1, 'id')) FROM generate_series(1, $2)`
	bumpHeadBySQL = `UPDATE tenant_heads SET seq = seq + $2 WHERE tenant_id = $1 RETURNING seq`
	userClocksSQL = `SELECT id, clock FROM memory_users WHERE tenant_id = $1 AND id = ANY($2) ORDER BY id FOR UPDATE`
	// One statement for every user: a pooled tenant has hundreds.
	setClocksSQL = `UPDATE memory_users m SET clock = c.clock
		FROM unnest($2::bigint[], $3::bigint[]) AS c(id, clock) WHERE m.tenant_id = $1 AND m.id = c.id`
	addTermsSQL = `INSERT INTO term_stats (tenant_id, dict_version, term_id, df)
		SELECT $1, $2, t.term_id, t.n FROM unnest($3::int[], $4::int[]) AS t(term_id, n) ORDER BY t.term_id
		ON CONFLICT (tenant_id, dict_version, term_id) DO UPDATE SET df = term_stats.df + EXCLUDED.df`
	addCorpusSQL = `INSERT INTO corpus_stats (tenant_id, dict_version, items, total_length) VALUES ($1, $2, $3, $4)
		ON CONFLICT (tenant_id, dict_version) DO UPDATE
		SET items = corpus_stats.items + EXCLUDED.items, total_length = corpus_stats.total_length + EXCLUDED.total_length`
)

// row is one synthetic turn ready to write.
type row struct {
	msgID, itemID, userID, convID int64
	role                          string
	position                      int
	body                          string
	tokens                        []string
	tokenCount                    int
	termIDs                       []int32
	freqs                         []int16
	length                        int
	dense                         []byte
	clock                         int64
	at                            time.Time
	seq                           int64
}

// Load appends items (the next slice of one synthetic corpus; users and
// conversations as synth numbers them) to the tenant.
func (l *Loader) Load(ctx context.Context, t *Tenant, items []arena.Item) error {
	if len(items) == 0 {
		return nil
	}
	n := len(items)
	terms, ok := l.dicts[t.Dict]
	if !ok {
		return fmt.Errorf("bulk load: tenant %d serves dictionary v%d, the loader has none", t.ID, t.Dict)
	}
	for i := range items {
		if u := items[i].User; u < 1 || int(u) > len(t.Users) {
			return fmt.Errorf("synthetic user %d: the tenant has %d users", u, len(t.Users))
		}
	}
	rows := make([]row, n)
	turns := maps.Clone(t.turns) // kept only if the load commits
	for i := range items {
		r := &rows[i]
		r.userID = t.Users[items[i].User-1]
		r.position = turns[items[i].Conv]
		turns[items[i].Conv]++
		r.role = "user"
		if r.position%2 == 1 {
			r.role = "assistant"
		}
		r.at = l.Start.Add(time.Duration(t.Items+i) * l.Every)
	}
	// Text, token counts and rows are the CPU part: spread it over the cores
	// while the database waits.
	var wg sync.WaitGroup
	workers := runtime.GOMAXPROCS(0)
	for w := range workers {
		wg.Go(func() {
			for i := w; i < n; i += workers {
				r := &rows[i]
				r.tokens = l.vocab.Tokens(&items[i])
				r.body = Text(r.tokens)
				r.tokenCount = l.count(r.body)
				row := memory.DeriveRow(terms, r.tokens)
				r.termIDs, r.freqs, r.length, r.dense = row.TermIDs, row.Freqs, row.Length, row.Dense
			}
		})
	}
	wg.Wait()
	var newConvs []arena.Item // one representative item per new conversation
	for i := range items {
		if _, ok := t.Convs[items[i].Conv]; !ok {
			t.Convs[items[i].Conv] = 0
			newConvs = append(newConvs, items[i])
		}
	}
	// The loader writes as the database owner, on a connection of its own:
	// the application's role (store.Open) may not COPY into a table under
	// row-level security, bypass triggers or ANALYZE.
	owner, err := pgx.Connect(ctx, l.db.Pool.Config().ConnString())
	if err != nil {
		return fmt.Errorf("bulk load: connect: %w", err)
	}
	defer owner.Close(context.WithoutCancel(ctx))
	err = pgx.BeginFunc(ctx, owner, func(tx pgx.Tx) error {
		replica, err := bypassTriggers(ctx, tx)
		if err != nil {
			return err
		}
		var head int64
		if err := tx.QueryRow(ctx, bumpHeadBySQL, t.ID, n).Scan(&head); err != nil {
			return fmt.Errorf("bump head: %w", err)
		}
		clocks, err := lockClocks(ctx, tx, t)
		if err != nil {
			return err
		}
		convIDs, err := reserve(ctx, tx, "conversations", len(newConvs))
		if err != nil {
			return err
		}
		msgIDs, err := reserve(ctx, tx, "messages", n)
		if err != nil {
			return err
		}
		itemIDs, err := reserve(ctx, tx, "items", n)
		if err != nil {
			return err
		}
		for i, c := range newConvs {
			t.Convs[c.Conv] = convIDs[i]
			if _, ok := t.first[c.User]; !ok {
				t.first[c.User] = c.Conv
			}
		}
		for i := range rows {
			r := &rows[i]
			r.msgID, r.itemID, r.convID = msgIDs[i], itemIDs[i], t.Convs[items[i].Conv]
			r.seq = head - int64(n) + int64(i) + 1
			clocks[r.userID] += int64(r.tokenCount)
			r.clock = clocks[r.userID]
		}
		if err := l.copyAll(ctx, tx, t, rows, newConvs, replica); err != nil {
			return err
		}
		cs := make([]int64, len(t.Users))
		for i, u := range t.Users {
			cs[i] = clocks[u]
		}
		if _, err := tx.Exec(ctx, setClocksSQL, t.ID, t.Users, cs); err != nil {
			return fmt.Errorf("set clocks: %w", err)
		}
		terms, counts, total := termCounts(rows)
		if _, err := tx.Exec(ctx, addTermsSQL, t.ID, t.Dict, terms, counts); err != nil {
			return fmt.Errorf("term stats: %w", err)
		}
		if _, err := tx.Exec(ctx, addCorpusSQL, t.ID, t.Dict, n, total); err != nil {
			return fmt.Errorf("corpus stats: %w", err)
		}
		return nil
	})
	if err != nil {
		for _, c := range newConvs {
			delete(t.Convs, c.Conv)
		}
		return fmt.Errorf("bulk load: %w", err)
	}
	t.Items += n
	t.turns = turns
	// Autovacuum would analyze tables this much bigger within its next
	// naptime; until then the planner believes they are as small as before
	// and picks nested loops that read the tenant once per row.
	if _, err := owner.Exec(ctx, analyzeSQL); err != nil {
		return fmt.Errorf("analyze: %w", err)
	}
	return nil
}

const analyzeSQL = `ANALYZE conversations, messages, items, retrieval_rows, activations, term_stats, memory_users`

func lockClocks(ctx context.Context, tx pgx.Tx, t *Tenant) (map[int64]int64, error) {
	rs, err := tx.Query(ctx, userClocksSQL, t.ID, t.Users)
	if err != nil {
		return nil, fmt.Errorf("user clocks: %w", err)
	}
	type uc struct{ ID, Clock int64 }
	got, err := pgx.CollectRows(rs, pgx.RowToStructByPos[uc])
	if err != nil {
		return nil, fmt.Errorf("user clocks: %w", err)
	}
	m := make(map[int64]int64, len(got))
	for _, g := range got {
		m[g.ID] = g.Clock
	}
	return m, nil
}

// reserve draws n ids from the table's identity sequence, so rows written
// with explicit ids never collide with rows the server inserts later.
func reserve(ctx context.Context, tx pgx.Tx, table string, n int) ([]int64, error) {
	if n == 0 {
		return nil, nil
	}
	rs, err := tx.Query(ctx, reserveSQL, table, n)
	if err != nil {
		return nil, fmt.Errorf("reserve %s ids: %w", table, err)
	}
	ids, err := pgx.CollectRows(rs, pgx.RowTo[int64])
	if err != nil {
		return nil, fmt.Errorf("reserve %s ids: %w", table, err)
	}
	return ids, nil
}

func (l *Loader) copyAll(ctx context.Context, tx pgx.Tx, t *Tenant, rows []row, newConvs []arena.Item, replica bool) error {
	tid := t.ID
	cp := func(table string, cols []string, n int, values func(i int) []any) error {
		i := 0
		src := pgx.CopyFromFunc(func() ([]any, error) {
			if i >= n {
				return nil, nil
			}
			v := values(i)
			i++
			return v, nil
		})
		if _, err := tx.CopyFrom(ctx, pgx.Identifier{table}, cols, src); err != nil {
			return fmt.Errorf("copy %s: %w", table, err)
		}
		return nil
	}
	if err := cp("conversations", []string{"tenant_id", "id", "user_id", "ext_key", "title"}, len(newConvs), func(i int) []any {
		c := newConvs[i]
		return []any{tid, t.Convs[c.Conv], t.Users[c.User-1], "bench:" + strconv.FormatInt(c.Conv, 10),
			"Synthetic conversation " + strconv.FormatInt(c.Conv, 10)}
	}); err != nil {
		return err
	}
	if err := cp("messages", []string{"tenant_id", "id", "user_id", "conversation_id", "role", "position", "fingerprint", "created_at"}, len(rows), func(i int) []any {
		r := &rows[i]
		return []any{tid, r.msgID, r.userID, r.convID, r.role, int32(r.position), memory.Fingerprint(r.role, r.position, r.body), r.at}
	}); err != nil {
		return err
	}
	if err := cp("items", []string{"tenant_id", "id", "message_id", "user_id", "conversation_id", "role", "part", "body", "tokens",
		"token_count", "born_clock", "born_at", "tau", "novelty", "seq"}, len(rows), func(i int) []any {
		r := &rows[i]
		return []any{tid, r.itemID, r.msgID, r.userID, r.convID, r.role, int32(0), r.body, r.tokens,
			int32(r.tokenCount), r.clock, r.at, l.Tau, float32(0), r.seq}
	}); err != nil {
		return err
	}
	if err := cp("retrieval_rows", []string{"tenant_id", "dict_version", "item_id", "term_ids", "term_freqs", "length", "dense"}, len(rows), func(i int) []any {
		r := &rows[i]
		return []any{tid, int32(t.Dict), r.itemID, r.termIDs, r.freqs, int32(r.length), r.dense}
	}); err != nil {
		return err
	}
	if err := cp("activations", []string{"tenant_id", "viewer_id", "item_id", "t_last", "peak", "tau", "token_count"}, len(rows), func(i int) []any {
		r := &rows[i]
		return []any{tid, r.userID, r.itemID, r.clock, store.BornPeak, l.Tau, int32(r.tokenCount)}
	}); err != nil {
		return err
	}
	if !replica {
		return nil
	}
	// What the items_birth trigger would have written (schema 3 onwards).
	var births bool
	if err := tx.QueryRow(ctx, `SELECT to_regclass('item_births') IS NOT NULL`).Scan(&births); err != nil || !births {
		return err
	}
	return cp("item_births", []string{"tenant_id", "item_id", "born_clock", "tau", "novelty"}, len(rows), func(i int) []any {
		r := &rows[i]
		return []any{tid, r.itemID, r.clock, l.Tau, float32(0)}
	})
}

// bypassTriggers turns off triggers and foreign-key checks for the load
// transaction when the role may (a superuser; the bench's own scratch
// database). The rows are consistent by construction, and per-row
// foreign-key checks and the birth-record trigger slow large loads.
// Without the privilege the load runs with every check on.
func bypassTriggers(ctx context.Context, tx pgx.Tx) (bool, error) {
	var super bool
	if err := tx.QueryRow(ctx, `SELECT rolsuper FROM pg_roles WHERE rolname = current_user`).Scan(&super); err != nil {
		return false, fmt.Errorf("role: %w", err)
	}
	if !super {
		return false, nil
	}
	if _, err := tx.Exec(ctx, `SET LOCAL session_replication_role = replica`); err != nil {
		return false, fmt.Errorf("bypass triggers: %w", err)
	}
	return true, nil
}

// termCounts is the batch's document frequency per term, in term order (the
// order captures lock term_stats rows in), and its total length.
func termCounts(rows []row) (terms, counts []int32, total int64) {
	df := map[int32]int32{}
	for i := range rows {
		for _, t := range rows[i].termIDs {
			df[t]++
		}
		total += int64(rows[i].length)
	}
	terms = make([]int32, 0, len(df))
	for t := range df {
		terms = append(terms, t)
	}
	slices.Sort(terms)
	counts = make([]int32, len(terms))
	for i, t := range terms {
		counts[i] = df[t]
	}
	return terms, counts, total
}
