package memory_test

import (
	"context"
	"hash/fnv"
	"os"
	"sort"
	"strings"
	"testing"
	"time"
	"unicode"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/perpetuity/perpetuity/memory"
	"github.com/perpetuity/perpetuity/memory/store"
	"github.com/perpetuity/perpetuity/migrations/dbtest"
)

// wordAnalysis is a minimal analyzer and dictionary for engine tests: words
// are lowercased letter/digit runs, one token each, hashed to term ids. The
// real tokenizer and dictionary have their own tests; these tests are about
// what the engine does with terms.
type wordAnalysis struct{}

func (wordAnalysis) Count(s string) int { return len(strings.Fields(s)) + 1 }
func (wordAnalysis) Normalize(s string) []string {
	return strings.FieldsFunc(strings.ToLower(s), func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) })
}
func (w wordAnalysis) Chunk(s string, _ int) ([]string, []int) { return []string{s}, []int{w.Count(s)} }
func (wordAnalysis) ChunkContent(_ string, chunks []string) []string {
	return chunks
}
func (wordAnalysis) Version() int { return 1 }
func (w wordAnalysis) Terms(tokens []string) ([]uint32, []uint16, int) {
	counts := map[uint32]uint16{}
	for _, t := range tokens {
		counts[w.id(t)]++
	}
	ids := make([]uint32, 0, len(counts))
	for id := range counts {
		ids = append(ids, id)
	}
	sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
	freqs := make([]uint16, len(ids))
	for i, id := range ids {
		freqs[i] = counts[id]
	}
	return ids, freqs, len(tokens)
}
func (w wordAnalysis) QueryTerms(tokens []string) []uint32 { ids, _, _ := w.Terms(tokens); return ids }
func (wordAnalysis) id(t string) uint32 {
	h := fnv.New32a()
	h.Write([]byte(t))
	return h.Sum32() & 0x7fffffff
}

func TestMain(m *testing.M) { os.Exit(dbtest.RunMain(m)) }

type fixture struct {
	db    *store.DB
	owner *pgxpool.Pool // the owner's view, across row-level security, for checks
	eng   *memory.Engine
	nt    store.NewTenant
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	url := dbtest.Shared(t)
	db, err := store.Open(context.Background(), url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(db.Close)
	// On v1, the version the fixture's engine derives rows with (wordAnalysis).
	nt, err := db.CreateTenantWith(context.Background(), "acme", "alice", store.TenantOptions{Dict: 1})
	if err != nil {
		t.Fatal(err)
	}
	return &fixture{db: db, owner: dbtest.Owner(t, url), eng: newEngine(db), nt: nt}
}

func newEngine(db *store.DB) *memory.Engine {
	return memory.New(db, wordAnalysis{}, wordAnalysis{}, memory.Options{Ceiling: 4000, Floor: 200, Recent: 2, BaseTau: 200})
}

func (f *fixture) who(t *testing.T, user string, conv string) memory.Who {
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

func (f *fixture) say(t *testing.T, w memory.Who, role, text string, pos int) store.Captured {
	t.Helper()
	c, err := f.eng.Capture(context.Background(), memory.Message{Who: w, Role: role, Text: text, Position: pos,
		At: time.Date(2026, 1, 2, 3, 4, 0, 0, time.UTC)})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func frameText(fr memory.Frame) string {
	var b strings.Builder
	for _, t := range fr.Turns {
		b.WriteString(t.Role + ": " + t.Text + "\n")
	}
	return b.String()
}

// filler pushes the clock far enough that old items are no longer warm.
func (f *fixture) filler(t *testing.T, w memory.Who, n int) {
	for i := 0; i < n; i++ {
		f.say(t, w, "user", strings.Repeat("weather talk sunny cloudy rain ", 20), 1000+i)
	}
}

func TestFrameRetrievesAcrossConversations(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ctx := context.Background()
	old := f.who(t, "alice", "trip")
	f.say(t, old, "user", "My passport number is stored in the blue folder", 0)
	f.say(t, old, "assistant", "Noted: blue folder.", 1)
	busy := f.who(t, "alice", "busy")
	f.filler(t, busy, 30)

	now := f.who(t, "alice", "today")
	live := f.say(t, now, "user", "Where did I put my passport?", 0)
	fr, err := f.eng.Frame(ctx, memory.FrameQuery{Who: now, Live: "Where did I put my passport?", LiveStored: true,
		LiveItems: live.ItemIDs, Now: time.Date(2026, 1, 5, 3, 4, 0, 0, time.UTC)})
	if err != nil {
		t.Fatal(err)
	}
	txt := frameText(fr)
	if !strings.Contains(txt, "My passport number is stored in the blue folder") {
		t.Fatalf("retrieval missed the old turn:\n%s", txt)
	}
	last := fr.Turns[len(fr.Turns)-1]
	if last.Role != "user" || !strings.HasSuffix(last.Text, "Where did I put my passport?") {
		t.Fatalf("frame not closed by the live question: %+v", last)
	}
	if !strings.Contains(txt, "【2 Jan 2026, 3 days ago】\n【alice】 My passport") {
		t.Fatalf("labels not resolved at render time:\n%s", txt)
	}
	for i, tr := range fr.Turns {
		if (i%2 == 0) != (tr.Role == "user") {
			t.Fatalf("turn %d breaks alternation: %s", i, tr.Role)
		}
	}
	if strings.Index(txt, "blue folder") > strings.Index(txt, "【this conversation") {
		t.Fatal("the current conversation must come last")
	}
}

func TestProbeLeavesHeatAlone(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ctx := context.Background()
	w := f.who(t, "alice", "c")
	f.say(t, w, "user", "the secret word is pelican", 0)
	count := func() int64 {
		var n int64
		if err := f.owner.QueryRow(ctx, `SELECT count(*) + coalesce(sum(t_last), 0) + coalesce(sum(peak), 0)::bigint FROM activations WHERE tenant_id = $1`, f.nt.TenantID).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	before := count()
	fr, err := f.eng.Frame(ctx, memory.FrameQuery{Who: w, Live: "what is the secret word pelican?", Probe: true, Now: time.Now()})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(frameText(fr), "pelican") {
		t.Fatal("probe frame lacks the stored turn")
	}
	if count() != before {
		t.Fatal("a probe changed activation")
	}
	var reheats int64
	_ = f.owner.QueryRow(ctx, `SELECT count(*) FROM reheats WHERE tenant_id = $1`, f.nt.TenantID).Scan(&reheats)
	if reheats != 0 {
		t.Fatal("a probe logged reheats")
	}
}

// TestPooledUsersNeverSeeEachOther: one arena, two users; each frame holds
// only its own user's items.
func TestPooledUsersNeverSeeEachOther(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ctx := context.Background()
	a := f.who(t, "alice", "a1")
	b := f.who(t, "bob", "b1")
	f.say(t, a, "user", "alice canary zebra-alpha about the garden", 0)
	f.say(t, b, "user", "bob canary zebra-bravo about the garden", 0)
	for _, w := range []memory.Who{a, b} {
		q := w
		q.ConversationID = f.who(t, w.UserName, "new").ConversationID
		fr, err := f.eng.Frame(ctx, memory.FrameQuery{Who: q, Live: "tell me about the garden canary zebra", Probe: true, Now: time.Now()})
		if err != nil {
			t.Fatal(err)
		}
		txt := frameText(fr)
		mine, theirs := "zebra-alpha", "zebra-bravo"
		if w.UserName == "bob" {
			mine, theirs = theirs, mine
		}
		if !strings.Contains(txt, mine) || strings.Contains(txt, theirs) {
			t.Fatalf("%s's frame:\n%s", w.UserName, txt)
		}
	}
}

// TestPurgeReachesOtherProcess: a purge made through one engine (process)
// reaches another engine's warm arena before its next scan.
func TestPurgeReachesOtherProcess(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ctx := context.Background()
	other := newEngine(f.db)
	a := f.who(t, "alice", "a1")
	said := f.say(t, a, "user", "the launch code is tangerine", 0)
	q := memory.FrameQuery{Who: f.who(t, "alice", "a2"), Live: "what is the launch code", Probe: true, Now: time.Now()}
	fr, err := other.Frame(ctx, q)
	if err != nil || !strings.Contains(frameText(fr), "tangerine") {
		t.Fatalf("warm-up frame: %v\n%s", err, frameText(fr))
	}
	// The position a frame read at names what it may show that a later
	// erasure removed (the inspector keeps no record quoting it).
	if fr.Seq != said.Seq {
		t.Errorf("the warm-up frame read at %d, the capture it shows is at %d", fr.Seq, said.Seq)
	}
	rep, err := f.db.PurgeUser(ctx, f.nt.TenantID, a.UserID, store.Actor{Email: "test"})
	if err != nil {
		t.Fatal(err)
	}
	fr, err = other.Frame(ctx, q)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(frameText(fr), "tangerine") {
		t.Fatalf("purged memory still served by the other process:\n%s", frameText(fr))
	}
	if fr.Seq != rep.Seq {
		t.Errorf("the frame after the purge read at %d, the purge is at %d", fr.Seq, rep.Seq)
	}
	for _, tbl := range []string{"items", "messages", "retrieval_rows", "activations", "term_stats", "conversations"} {
		var n int64
		if err := f.owner.QueryRow(ctx, `SELECT count(*) FROM `+tbl+` WHERE tenant_id = $1`, f.nt.TenantID).Scan(&n); err != nil {
			t.Fatal(err)
		}
		if n != 0 && tbl != "conversations" {
			t.Errorf("%s keeps %d rows after purge", tbl, n)
		}
	}
}

// TestColdEqualsWarm: a fresh process loads everything on its first frame
// and then ranks exactly as the warm one does.
func TestColdEqualsWarm(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ctx := context.Background()
	w := f.who(t, "alice", "c")
	for i, s := range []string{"apples and pears", "pears and plums", "plums and cherries", "cherries and apples", "kiwi"} {
		f.say(t, w, "user", s, i)
	}
	q := memory.FrameQuery{Who: f.who(t, "alice", "q"), Live: "apples plums", Probe: true, Now: time.Now()}
	warm, err := f.eng.Frame(ctx, q)
	if err != nil {
		t.Fatal(err)
	}
	cold, err := newEngine(f.db).Frame(ctx, q)
	if err != nil {
		t.Fatal(err)
	}
	if frameText(warm) != frameText(cold) {
		t.Fatalf("cold and warm frames differ:\n%s\n---\n%s", frameText(warm), frameText(cold))
	}
}
