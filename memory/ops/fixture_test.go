package ops_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/perpetuity/perpetuity/memory"
	"github.com/perpetuity/perpetuity/memory/chain"
	"github.com/perpetuity/perpetuity/memory/dict"
	"github.com/perpetuity/perpetuity/memory/ops"
	"github.com/perpetuity/perpetuity/memory/store"
	"github.com/perpetuity/perpetuity/memory/text"
	"github.com/perpetuity/perpetuity/migrations/dbtest"
)

func TestMain(m *testing.M) { os.Exit(dbtest.RunMain(m)) }

// words is the engine's text side for these tests: the real normalizer
// (the dictionaries are real), one chunk per message, a word count as the
// model-token count.
type words struct{}

func (words) Count(s string) int                              { return len(strings.Fields(s)) + 1 }
func (words) Normalize(s string) []string                     { return text.Normalize(s) }
func (w words) Chunk(s string, _ int) ([]string, []int)       { return []string{s}, []int{w.Count(s)} }
func (words) ChunkContent(_ string, chunks []string) []string { return chunks }

var admin = store.Actor{Email: "test"}

// fixture is a tenant on v1 in a database that holds the shipped dictionaries,
// with an engine (a serving process) built on v1 as serving builds it.
type fixture struct {
	db    *store.DB
	owner *pgxpool.Pool // the owner, across row-level security: checks and breakage
	eng   *memory.Engine
	nt    store.NewTenant
	v1    *dict.Dictionary
	v2    *dict.Dictionary
}

func openDB(t *testing.T, url string) *store.DB {
	t.Helper()
	db, err := store.Open(context.Background(), url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(db.Close)
	return db
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	return newFixtureOn(t, openDB(t, dbtest.Shared(t)))
}

func newFixtureOn(t *testing.T, db *store.DB) *fixture {
	t.Helper()
	ctx := context.Background()
	f := &fixture{db: db, owner: dbtest.Owner(t, db.Pool.Config().ConnString())}
	for _, v := range []int{1, 2} {
		d, err := dict.Builtin(v)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := db.EnsureDictionary(ctx, d.Version, d.Name, d.Entries()); err != nil {
			t.Fatal(err)
		}
		if v == 1 {
			f.v1 = d
		} else {
			f.v2 = d
		}
	}
	// On v1, as tenants from before v3 was the default: the tests roll it on.
	nt, err := db.CreateTenantWith(ctx, "acme "+t.Name(), "alice", store.TenantOptions{Dict: 1})
	if err != nil {
		t.Fatal(err)
	}
	f.nt = nt
	f.eng = f.engine()
	return f
}

// engine is another serving process on the same database.
func (f *fixture) engine() *memory.Engine {
	return memory.New(f.db, words{}, memory.DictTerms{D: f.v1}, memory.Options{BaseTau: 5000})
}

func (f *fixture) who(t *testing.T, user, conv string) memory.Who {
	t.Helper()
	ctx := context.Background()
	uid, err := f.db.EnsureUser(ctx, f.nt.TenantID, user)
	if err != nil {
		t.Fatal(err)
	}
	cid, err := f.db.EnsureConversation(ctx, f.nt.TenantID, uid, conv, conv)
	if err != nil {
		t.Fatal(err)
	}
	return memory.Who{TenantID: f.nt.TenantID, UserID: uid, UserName: user, ConversationID: cid}
}

// vocabulary mixes plain words, inflected forms (which the versions map
// differently) and names no dictionary knows.
var vocabulary = strings.Fields(`garden gardens gardening tomato tomatoes planted planting painted paintings
	children child running ran runs bought buying car cars blue folder passport trip trips travelled
	Caroline Melanie Zorblax sunset lake lakes swimming swam dog dogs adopted adoption concert guitar
	played playing book books wrote writing happy happiness pottery class classes the and of a to`)

// sentence is a deterministic message for (seed, i).
func sentence(seed uint64, i int) string {
	r := rand.New(rand.NewPCG(seed, uint64(i)))
	n := 6 + r.IntN(10)
	ws := make([]string, n)
	for j := range ws {
		ws[j] = vocabulary[r.IntN(len(vocabulary))]
	}
	return fmt.Sprintf("%s (%d)", strings.Join(ws, " "), i)
}

// say captures n messages of w starting at position from.
func (f *fixture) say(t testing.TB, eng *memory.Engine, w memory.Who, seed uint64, from, n int) []int64 {
	t.Helper()
	var ids []int64
	for i := from; i < from+n; i++ {
		role := "user"
		if i%2 == 1 {
			role = "assistant"
		}
		c, err := eng.Capture(context.Background(), memory.Message{Who: w, Role: role, Text: sentence(seed, i), Position: i,
			At: time.Date(2026, 1, 2, 3, 4, 0, 0, time.UTC)})
		if err != nil {
			t.Error(err) // may run on a writer goroutine
			return ids
		}
		ids = append(ids, c.ItemIDs...)
	}
	return ids
}

// chainLexicon is the shipped lexicon the chain rules read, parsed once for
// the package's tests: parsing takes half a second.
var chainLexicon = sync.OnceValues(func() (*dict.Dictionary, error) { return dict.Builtin(chain.LexiconVersion) })

func lexicon(t testing.TB) chain.Lexicon {
	t.Helper()
	d, err := chainLexicon()
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// writer is a chain writer on the fixture's database, as serve builds one
// (the shipped lexicon, default rules).
func (f *fixture) writer(t testing.TB) *chain.Writer {
	t.Helper()
	return chain.NewWriter(f.db, lexicon(t), chain.Rules{}, nil)
}

func (f *fixture) catchUp(t testing.TB, w *chain.Writer) {
	t.Helper()
	if err := w.CatchUp(context.Background(), f.nt.TenantID); err != nil {
		t.Fatal(err)
	}
}

// checker is the integrity check as the command line builds it.
func (f *fixture) checker(t testing.TB, arenas ops.Arenas) *ops.Checker {
	t.Helper()
	return &ops.Checker{St: f.db, Arenas: arenas, ChainLexicon: lexicon(t)}
}

// topics are words rare in a memory: a turn on a topic continues the
// earlier turns on it (the chain graph's thread), with weights well over
// the default rules' threshold.
var topics = [][]string{
	strings.Fields("kayak paddle lakeshore canoe lifejacket rapids portage eddy"),
	strings.Fields("adoption agency caseworker homestudy paperwork fingerprints orphanage interview"),
	strings.Fields("marathon training hamstring physio tempo intervals taper hydration"),
	strings.Fields("pottery kiln glaze wheel stoneware bisque clay studio"),
}

// discuss captures n turns of w from position from, turn i on topic i%4,
// alternating user and assistant; a reply is shown (its sources) the
// user's last four items, one of them on its topic.
func (f *fixture) discuss(t testing.TB, eng *memory.Engine, w memory.Who, from, n int) []int64 {
	t.Helper()
	var ids []int64
	for i := from; i < from+n; i++ {
		role, text := "user", strings.Join(topics[i%len(topics)], " ")+fmt.Sprintf(" (%d)", i)
		var shown []int64
		if i%2 == 1 {
			role, shown = "assistant", append([]int64(nil), ids[max(0, len(ids)-4):]...)
		}
		c, err := eng.Capture(context.Background(), memory.Message{Who: w, Role: role, Text: text, Position: i,
			At: time.Date(2026, 1, 2, 3, 4, 0, 0, time.UTC), Sources: shown})
		if err != nil {
			t.Error(err) // may run on a writer goroutine
			return ids
		}
		ids = append(ids, c.ItemIDs...)
	}
	return ids
}

// check runs the integrity check with arenas and fails on any violation.
func (f *fixture) mustBeClean(t *testing.T, arenas ops.Arenas) store.IntegrityReport {
	t.Helper()
	ck := f.checker(t, arenas)
	rep, vs, err := ck.Check(context.Background(), f.nt.TenantID, admin)
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range vs {
		t.Errorf("violation %s: %s %s", v.Invariant, v.Detail, v.Rows)
	}
	return rep
}

// exec runs SQL against the fixture's database.
func (f *fixture) exec(t *testing.T, sql string, args ...any) int64 {
	t.Helper()
	tag, err := f.owner.Exec(context.Background(), sql, args...)
	if err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
	return tag.RowsAffected()
}

func (f *fixture) int64(t *testing.T, sql string, args ...any) int64 {
	t.Helper()
	var n int64
	if err := f.owner.QueryRow(context.Background(), sql, args...).Scan(&n); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
	return n
}

// memoryState is everything heat, decay and novelty are made of, as text:
// rollouts must leave it exactly as it was.
func (f *fixture) memoryState(t *testing.T) string {
	t.Helper()
	ctx := context.Background()
	var b strings.Builder
	for _, q := range []string{
		`SELECT id || ':' || tau || ':' || novelty || ':' || born_clock || ':' || seq FROM items WHERE tenant_id = $1 ORDER BY id`,
		`SELECT viewer_id || ':' || item_id || ':' || t_last || ':' || peak FROM activations WHERE tenant_id = $1 ORDER BY 1`,
		`SELECT viewer_id || ':' || item_id || ':' || clock || ':' || peak FROM reheats WHERE tenant_id = $1 ORDER BY 1`,
		`SELECT id || ':' || clock FROM memory_users WHERE tenant_id = $1 ORDER BY id`,
	} {
		rows, err := f.owner.Query(ctx, q, f.nt.TenantID)
		if err != nil {
			t.Fatal(err)
		}
		for rows.Next() {
			var s string
			if err := rows.Scan(&s); err != nil {
				t.Fatal(err)
			}
			b.WriteString(s + "\n")
		}
		rows.Close()
		b.WriteString("--\n")
	}
	return b.String()
}
