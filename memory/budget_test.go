package memory_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/perpetuity/perpetuity/memory"
	"github.com/perpetuity/perpetuity/memory/arena"
	"github.com/perpetuity/perpetuity/memory/store"
	"github.com/perpetuity/perpetuity/migrations/dbtest"
)

// canaryTenant is one tenant of the budget tests: a user who once said a
// codeword no other tenant has.
type canaryTenant struct {
	id     int64
	who    memory.Who // where the canary was said
	ask    memory.Who // a later conversation of the same user
	canary string
}

func openDB(t *testing.T) *store.DB {
	t.Helper()
	db, err := store.Open(context.Background(), dbtest.Shared(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(db.Close)
	return db
}

// seedCanaries makes n tenants of the same shape (filler turns around one
// canary), captured through writer.
func seedCanaries(t *testing.T, db *store.DB, writer *memory.Engine, n, fillers int) []canaryTenant {
	t.Helper()
	ctx := context.Background()
	out := make([]canaryTenant, n)
	for i := range out {
		nt, err := db.CreateTenantWith(ctx, fmt.Sprintf("budget-%d", i), "alice", store.TenantOptions{Dict: 1})
		if err != nil {
			t.Fatal(err)
		}
		whoIn := func(conv string) memory.Who {
			uid, err := db.EnsureUser(ctx, nt.TenantID, "alice")
			if err != nil {
				t.Fatal(err)
			}
			cid, err := db.EnsureConversation(ctx, nt.TenantID, uid, conv, conv)
			if err != nil {
				t.Fatal(err)
			}
			return memory.Who{TenantID: nt.TenantID, UserID: uid, UserName: "alice", ConversationID: cid}
		}
		ct := canaryTenant{id: nt.TenantID, who: whoIn("old"), ask: whoIn("new"), canary: fmt.Sprintf("kw%dq", nt.TenantID)}
		for j := range fillers {
			say(t, writer, ct.who, fmt.Sprintf("note %d about the garden, the weather and item%d of tenant %d", j, j, i), j)
		}
		say(t, writer, ct.who, "the canary codeword is "+ct.canary, fillers)
		out[i] = ct
	}
	return out
}

func say(t *testing.T, eng *memory.Engine, w memory.Who, text string, pos int) {
	t.Helper()
	if _, err := eng.Capture(context.Background(), memory.Message{Who: w, Role: "user", Text: text, Position: pos,
		At: time.Date(2026, 1, 2, 3, 4, 0, 0, time.UTC)}); err != nil {
		t.Fatal(err)
	}
}

// recall asks the tenant's user for the codeword and returns the frame's text.
func recall(t *testing.T, eng *memory.Engine, ct canaryTenant) string {
	t.Helper()
	fr, err := eng.Frame(context.Background(), memory.FrameQuery{Who: ct.ask, Live: "what is the canary codeword?", Probe: true, Now: time.Now()})
	if err != nil {
		t.Fatalf("tenant %d: %v", ct.id, err)
	}
	return frameText(fr)
}

// arenaBytes is each tenant's arena alone, as an unbounded engine holds it.
func arenaBytes(t *testing.T, db *store.DB, ts []canaryTenant) []int64 {
	t.Helper()
	out := make([]int64, len(ts))
	for i, ct := range ts {
		e := newEngine(db)
		if err := e.Warm(context.Background(), []int64{ct.id}); err != nil {
			t.Fatal(err)
		}
		out[i] = e.Resident().Bytes
	}
	return out
}

// TestArenaBudget: a budget that holds two of five tenants serves all five,
// each its own canary, with resident bytes within the budget between
// requests and within budget + one tenant at any time, loads and evictions
// counted as least-recently-used predicts; and an evicted tenant's turns
// captured meanwhile by another process are in its next frame.
func TestArenaBudget(t *testing.T) {
	t.Parallel()
	db := openDB(t)
	writer := newEngine(db) // the other process, unbounded
	ts := seedCanaries(t, db, writer, 5, 40)
	sizes := arenaBytes(t, db, ts)
	sorted := slices.Sorted(slices.Values(sizes))
	two, three := sorted[3]+sorted[4], sorted[0]+sorted[1]+sorted[2]
	if two >= three {
		t.Fatalf("tenant sizes %v too uneven for a budget of two", sizes)
	}
	budget, largest := (two+three)/2, sorted[4]
	eng := memory.New(db, wordAnalysis{}, wordAnalysis{}, memory.Options{Ceiling: 4000, Floor: 200, Recent: 2, BaseTau: 200, ArenaBudget: budget})

	const rounds = 3
	for round := range rounds {
		for _, ct := range ts {
			txt := recall(t, eng, ct)
			if !strings.Contains(txt, ct.canary) {
				t.Fatalf("round %d, tenant %d: canary %s missing:\n%s", round, ct.id, ct.canary, txt)
			}
			for _, other := range ts {
				if other.id != ct.id && strings.Contains(txt, other.canary) {
					t.Fatalf("tenant %d's frame holds tenant %d's canary", ct.id, other.id)
				}
			}
			st := eng.Resident()
			if st.Bytes > budget || st.Tenants > 2 {
				t.Fatalf("between requests %d bytes in %d tenants resident, budget %d (two tenants)", st.Bytes, st.Tenants, budget)
			}
			if st.Peak > budget+largest {
				t.Fatalf("peak %d bytes resident, past budget %d + one tenant %d", st.Peak, budget, largest)
			}
		}
	}
	// Round robin over five with room for two: every request misses.
	st := eng.Resident()
	if want := int64(rounds * len(ts)); st.Loads != want || st.Evictions != want-2 || st.Tenants != 2 {
		t.Fatalf("loads %d, evictions %d, resident %d; want %d, %d, 2", st.Loads, st.Evictions, st.Tenants, want, want-2)
	}
	if st.LoadTime <= 0 || st.Budget != budget {
		t.Fatalf("load time %v, budget %d", st.LoadTime, st.Budget)
	}
	last := ts[len(ts)-1]
	if recall(t, eng, last); eng.Resident().Loads != st.Loads {
		t.Fatal("a resident tenant was loaded again")
	}

	// The first tenant is out; another process captures for it meanwhile.
	first := ts[0]
	if eng.IsResident(first.id) {
		t.Fatal("the least recently used tenant is still resident")
	}
	fresh := fmt.Sprintf("late%dz", first.id)
	say(t, writer, first.who, "the canary codeword changed to "+fresh, 1000)
	txt := recall(t, eng, first)
	if !strings.Contains(txt, fresh) || !strings.Contains(txt, first.canary) {
		t.Fatalf("after reload the frame lacks the turns captured while evicted:\n%s", txt)
	}
	if got := eng.Resident(); got.Loads != st.Loads+1 || !eng.IsResident(first.id) {
		t.Fatalf("the evicted tenant's request: loads %d, want %d; resident %v", got.Loads, st.Loads+1, eng.IsResident(first.id))
	}
}

// TestArenaLargerThanBudget: a tenant larger than the whole budget is
// loaded, served and evicted after, every time.
func TestArenaLargerThanBudget(t *testing.T) {
	t.Parallel()
	db := openDB(t)
	ts := seedCanaries(t, db, newEngine(db), 1, 20)
	eng := memory.New(db, wordAnalysis{}, wordAnalysis{}, memory.Options{Ceiling: 4000, Floor: 200, Recent: 2, BaseTau: 200, ArenaBudget: 1})
	for i := range 3 {
		if txt := recall(t, eng, ts[0]); !strings.Contains(txt, ts[0].canary) {
			t.Fatalf("request %d: canary missing:\n%s", i, txt)
		}
		if st := eng.Resident(); st.Tenants != 0 || st.Bytes != 0 || st.Loads != int64(i+1) || st.Evictions != int64(i+1) {
			t.Fatalf("request %d: %+v", i, st)
		}
	}
}

// TestEvictionSparesArenasInUse: an arena a scan holds stays resident and
// whole while other tenants load and push the budget (which holds none),
// and goes once let go; under concurrent frames across tenants, every frame
// still finds its tenant's canary.
func TestEvictionSparesArenasInUse(t *testing.T) {
	t.Parallel()
	db := openDB(t)
	ts := seedCanaries(t, db, newEngine(db), 4, 20)
	eng := memory.New(db, wordAnalysis{}, wordAnalysis{}, memory.Options{Ceiling: 4000, Floor: 200, Recent: 2, BaseTau: 200, ArenaBudget: 1})
	ctx := context.Background()

	held, release, err := eng.HoldArena(ctx, ts[0].id)
	if err != nil {
		t.Fatal(err)
	}
	for _, ct := range ts[1:] {
		if txt := recall(t, eng, ct); !strings.Contains(txt, ct.canary) {
			t.Fatalf("tenant %d: canary missing:\n%s", ct.id, txt)
		}
	}
	if !eng.IsResident(ts[0].id) {
		t.Fatal("a held arena was evicted")
	}
	if st := eng.Resident(); st.Evictions != int64(len(ts)-1) || st.Tenants != 1 {
		t.Fatalf("with one arena held: %+v", st)
	}
	q := arena.Query{Terms: wordAnalysis{}.QueryTerms([]string{ts[0].canary}), Users: []int64{ts[0].who.UserID}, K: 5}
	if hits := held.Search(q); len(hits) != 1 {
		t.Fatalf("the held arena finds %d items for its canary, want 1", len(hits))
	}
	release()
	if eng.IsResident(ts[0].id) {
		t.Fatal("an arena let go is still resident past the budget")
	}

	var wg sync.WaitGroup
	errs := make(chan string, 64)
	for g := range 2 * len(ts) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ct := ts[g%len(ts)] // two goroutines per tenant: arenas shared by scans
			for i := range 8 {
				fr, err := eng.Frame(ctx, memory.FrameQuery{Who: ct.ask, Live: "what is the canary codeword?", Probe: true, Now: time.Now()})
				if err != nil {
					errs <- fmt.Sprintf("tenant %d frame %d: %v", ct.id, i, err)
					return
				}
				if !strings.Contains(frameText(fr), ct.canary) {
					errs <- fmt.Sprintf("tenant %d frame %d: canary missing", ct.id, i)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Error(e)
	}
	if st := eng.Resident(); st.Tenants != 0 || st.Bytes != 0 || st.Loads < int64(len(ts)) {
		t.Fatalf("after the concurrent frames: %+v", st)
	}
}
