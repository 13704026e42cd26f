package memory_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/perpetuity/perpetuity/memory"
	"github.com/perpetuity/perpetuity/memory/chain"
	"github.com/perpetuity/perpetuity/memory/dict"
)

// chainFixture stores a turn, a later turn in another conversation that
// continues it by rare words, and enough filler between and after that
// neither is warm; the writer has caught up.
type chainFixture struct {
	*fixture
	graph      *chain.Writer
	withChain  *memory.Engine
	early, cnt int64 // the first turn and the one that continues it
}

func newChainFixture(t *testing.T) chainFixture {
	t.Helper()
	f := newFixture(t)
	lex, err := dict.Builtin(chain.LexiconVersion)
	if err != nil {
		t.Fatal(err)
	}
	w := chain.NewWriter(f.db, lex, chain.Rules{}, nil)
	eng := memory.New(f.db, wordAnalysis{}, wordAnalysis{}, memory.Options{Ceiling: 4000, Floor: 200, Recent: 2, BaseTau: 200, Chain: w})
	f.eng = eng // captures kick the writer; the plain engine is built per test
	early := f.say(t, f.who(t, "alice", "agency"), "user", "We applied to Brightwater agency with Okonkwo in Pinecrest today", 0)
	f.filler(t, f.who(t, "alice", "busy"), 30)
	cnt := f.say(t, f.who(t, "alice", "later"), "user", "Meeting with Okonkwo at Brightwater in Pinecrest went well", 0)
	f.filler(t, f.who(t, "alice", "busier"), 30)
	if err := w.CatchUp(context.Background(), f.nt.TenantID); err != nil {
		t.Fatal(err)
	}
	return chainFixture{fixture: f, graph: w, withChain: eng, early: early.ItemIDs[0], cnt: cnt.ItemIDs[0]}
}

func TestFrameBringsChainNeighbours(t *testing.T) {
	t.Parallel()
	f := newChainFixture(t)
	ctx := context.Background()
	now := f.who(t, "alice", "today")
	q := memory.FrameQuery{Who: now, Live: "how was that meeting", Probe: true, Now: time.Date(2026, 1, 5, 3, 4, 0, 0, time.UTC)}
	for _, tc := range []struct {
		name string
		eng  *memory.Engine
		want bool
	}{
		{"with the chain graph", f.withChain, true},
		{"without", newEngine(f.db), false},
	} {
		fr, err := tc.eng.Frame(ctx, q)
		if err != nil {
			t.Fatal(err)
		}
		text := frameText(fr)
		if !strings.Contains(text, "Meeting with Okonkwo") {
			t.Fatalf("%s: the match itself is missing:\n%s", tc.name, text)
		}
		if got := strings.Contains(text, "applied to Brightwater"); got != tc.want {
			t.Fatalf("%s: the turn the match continues shown = %v, want %v:\n%s", tc.name, got, tc.want, text)
		}
	}
}

func TestToolChainNamesRelations(t *testing.T) {
	t.Parallel()
	f := newChainFixture(t)
	ctx := context.Background()
	now := f.who(t, "alice", "today")
	// A reply that drew on the later turn (it was shown) and not on a
	// filler turn shown beside it.
	live := f.say(t, now, "user", "remind me", 0)
	reply, err := f.eng.Capture(ctx, memory.Message{Who: now, Role: "assistant", Position: 1, At: time.Now(),
		Text: "Glad the Okonkwo meeting at Brightwater went well", Sources: []int64{f.cnt, f.cnt + 1, live.ItemIDs[0]}})
	if err != nil {
		t.Fatal(err)
	}
	if err := f.graph.CatchUp(ctx, f.nt.TenantID); err != nil {
		t.Fatal(err)
	}
	st := func() *memory.ToolState {
		return memory.NewToolState(memory.FrameQuery{Who: now, Now: time.Now()}, memory.Frame{})
	}
	for _, tc := range []struct {
		item      int64
		direction string
		want      []string
		not       []string
	}{
		{f.cnt, "before", []string{fmt.Sprintf("(earlier turns #%d continues)", f.cnt), "applied to Brightwater"},
			[]string{"later turns", "replies that answered"}},
		{f.cnt, "after", []string{fmt.Sprintf("(replies that answered from #%d)", f.cnt), "Glad the Okonkwo"},
			[]string{"applied to Brightwater"}},
		{f.early, "around", []string{fmt.Sprintf("(later turns that continue #%d)", f.early), "Meeting with Okonkwo"}, nil},
		{reply.ItemIDs[0], "before", []string{fmt.Sprintf("(turns reply #%d drew on)", reply.ItemIDs[0]), "Meeting with Okonkwo"},
			[]string{"weather talk"}},
	} {
		out, err := f.eng.RunTool(ctx, st(), memory.ToolChain, json.RawMessage(fmt.Sprintf(`{"item":%d,"direction":%q,"depth":3}`, tc.item, tc.direction)))
		if err != nil {
			t.Fatal(err)
		}
		for _, w := range tc.want {
			if !strings.Contains(out, w) {
				t.Errorf("chain %s #%d lacks %q:\n%s", tc.direction, tc.item, w, out)
			}
		}
		for _, w := range tc.not {
			if strings.Contains(out, w) {
				t.Errorf("chain %s #%d has %q:\n%s", tc.direction, tc.item, w, out)
			}
		}
	}
}

// TestChainGraphFollowsEviction: the writer lets a tenant's graph go when
// the tenant's arena is evicted (it would otherwise poll every tenant it
// ever saw), and the tenant's next load brings the graph back: the frame
// kicks the writer, whose catch-up reloads it from the stored watermark.
func TestChainGraphFollowsEviction(t *testing.T) {
	t.Parallel()
	f := newChainFixture(t)
	ctx := context.Background()
	other := seedCanaries(t, f.db, newEngine(f.db), 1, 40)[0]
	alice := f.who(t, "alice", "today")
	sizes := arenaBytes(t, f.db, []canaryTenant{{id: f.nt.TenantID}, other})
	eng := memory.New(f.db, wordAnalysis{}, wordAnalysis{}, memory.Options{Ceiling: 4000, Floor: 200, Recent: 2, BaseTau: 200,
		Chain: f.graph, ArenaBudget: max(sizes[0], sizes[1]) * 11 / 10}) // one tenant at a time
	linked := func() bool { return len(f.graph.Around(f.nt.TenantID, alice.UserID, []int64{f.cnt}, 4)[f.cnt]) > 0 }
	q := memory.FrameQuery{Who: alice, Live: "how was that meeting", Probe: true, Now: time.Date(2026, 1, 5, 3, 4, 0, 0, time.UTC)}
	if _, err := eng.Frame(ctx, q); err != nil {
		t.Fatal(err)
	}
	if !eng.IsResident(f.nt.TenantID) || !linked() {
		t.Fatal("the tenant's arena and graph are not both held after its frame")
	}
	recall(t, eng, other) // the other tenant's load evicts the first
	if eng.IsResident(f.nt.TenantID) || linked() {
		t.Fatalf("after the eviction: arena resident %v, graph held %v; want neither", eng.IsResident(f.nt.TenantID), linked())
	}
	gctx, stop := context.WithCancel(ctx)
	defer stop()
	go f.graph.Run(gctx)
	if _, err := eng.Frame(ctx, q); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(20 * time.Second)
	for !linked() {
		if time.Now().After(deadline) {
			t.Fatal("the reloaded tenant's graph never came back")
		}
		time.Sleep(20 * time.Millisecond)
	}
}
