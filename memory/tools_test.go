package memory_test

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/perpetuity/perpetuity/memory"
)

// toolFixture stores three conversations about gardening and asks a frame
// small enough that retrieval is trimmed.
func toolFixture(t *testing.T) (*fixture, memory.FrameQuery, memory.Frame, *memory.ToolState) {
	t.Helper()
	f := newFixture(t)
	for c := 0; c < 3; c++ {
		w := f.who(t, "alice", fmt.Sprintf("garden-%d", c))
		for i := 0; i < 6; i++ {
			role := "user"
			if i%2 == 1 {
				role = "assistant"
			}
			f.say(t, w, role, fmt.Sprintf("garden note c%d t%d about tomatoes and basil %s", c, i, strings.Repeat("soil ", i)), i)
		}
	}
	q := memory.FrameQuery{Who: f.who(t, "alice", "now"), Live: "what about tomatoes basil garden", Probe: true,
		Tools: true, Budget: 60, Now: time.Date(2026, 2, 1, 0, 0, 0, 0, time.UTC)}
	fr, err := f.eng.Frame(context.Background(), q)
	if err != nil {
		t.Fatal(err)
	}
	if !fr.Trimmed || len(fr.Retrieved) <= len(fr.Shown) {
		t.Fatalf("fixture frame not trimmed: shown %d of %d", len(fr.Shown), len(fr.Retrieved))
	}
	return f, q, fr, memory.NewToolState(q, fr)
}

var idLabel = regexp.MustCompile(`#(\d+)】`)

func ids(s string) []string {
	var out []string
	for _, m := range idLabel.FindAllStringSubmatch(s, -1) {
		out = append(out, m[1])
	}
	return out
}

func frameIDs(fr memory.Frame) map[string]bool {
	m := map[string]bool{}
	for _, id := range fr.Shown {
		m[fmt.Sprint(id)] = true
	}
	return m
}

func TestToolsReturnOnlyUnseen(t *testing.T) {
	t.Parallel()
	f, _, fr, st := toolFixture(t)
	ctx := context.Background()
	if !strings.Contains(frameText(fr), memory.ToolReopen+" reaches it") {
		t.Fatal("trimmed frame does not name the tool that reaches the rest")
	}
	shown := frameIDs(fr)
	seen := map[string]bool{}
	for k := range shown {
		seen[k] = true
	}
	calls := []struct {
		name, args string
	}{
		{memory.ToolSearch, `{"query":"tomatoes basil","limit":5}`},
		{memory.ToolReopen, `{}`},
		{memory.ToolSearch, `{"query":"tomatoes basil garden soil"}`},
	}
	total := 0
	for _, c := range calls {
		out, err := f.eng.RunTool(ctx, st, c.name, json.RawMessage(c.args))
		if err != nil {
			t.Fatal(err)
		}
		for _, id := range ids(out) {
			if seen[id] {
				t.Fatalf("%s returned #%s, shown before in this turn:\n%s", c.name, id, out)
			}
			seen[id] = true
			total++
		}
	}
	if total == 0 || len(seen) != 18 {
		t.Fatalf("tools reached %d items, %d seen in all; want all 18 stored turns", total, len(seen))
	}
	out, _ := f.eng.RunTool(ctx, st, memory.ToolReopen, nil)
	if ids(out) != nil {
		t.Fatalf("a second reopen repeated turns: %s", out)
	}
}

func TestToolChainAndCount(t *testing.T) {
	t.Parallel()
	f, _, _, st := toolFixture(t)
	ctx := context.Background()
	// A fresh turn state, so the anchor is not hidden as already shown.
	find := memory.NewToolState(memory.FrameQuery{Who: st.Who, Now: st.Now}, memory.Frame{})
	out, err := f.eng.RunTool(ctx, find, memory.ToolSearch, json.RawMessage(`{"query":"c1 t3"}`))
	if err != nil {
		t.Fatal(err)
	}
	var anchor string
	for _, line := range strings.Split(out, "\n") {
		if strings.Contains(line, "c1 t3") {
			anchor = ids(line)[0]
		}
	}
	if anchor == "" {
		t.Fatalf("search did not find the anchor turn:\n%s", out)
	}
	fresh := memory.NewToolState(memory.FrameQuery{Who: st.Who, Now: st.Now}, memory.Frame{})
	out, err = f.eng.RunTool(ctx, fresh, memory.ToolChain, json.RawMessage(`{"item":`+anchor+`,"direction":"after","depth":2}`))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out, "c1 t3") || !strings.Contains(out, "c1 t4") || !strings.Contains(out, "c1 t5") || strings.Contains(out, "c1 t2") {
		t.Fatalf("chain after #%s:\n%s", anchor, out)
	}
	out, err = f.eng.RunTool(ctx, fresh, memory.ToolCount, json.RawMessage(`{"query":"tomatoes","by":"speaker","examples":1}`))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out, "18 matching turns in 2 groups by speaker") {
		t.Fatalf("count by speaker:\n%s", out)
	}
	out, _ = f.eng.RunTool(ctx, fresh, memory.ToolChain, json.RawMessage(`{"item":999999999}`))
	if !strings.HasPrefix(out, "error:") {
		t.Fatalf("chain of a missing item: %s", out)
	}
}

// TestToolsOffLeavesNoTrace: with tools off, frames never mention them.
func TestToolsOffLeavesNoTrace(t *testing.T) {
	t.Parallel()
	_, q, _, _ := toolFixture(t)
	f := newFixture(t)
	w := f.who(t, "alice", "x")
	for i := 0; i < 10; i++ {
		f.say(t, w, "user", fmt.Sprintf("tomatoes basil note %d", i), i)
	}
	q.Who = f.who(t, "alice", "y")
	q.Tools = false
	fr, err := f.eng.Frame(context.Background(), q)
	if err != nil {
		t.Fatal(err)
	}
	txt := frameText(fr)
	for _, tool := range memory.Tools() {
		if strings.Contains(txt, tool.Name) {
			t.Fatalf("tools off, yet the frame names %s:\n%s", tool.Name, txt)
		}
	}
	if strings.Contains(txt, "#") {
		t.Fatalf("tools off, yet labels carry ids:\n%s", txt)
	}
}

// The model decides how many tool calls a reply makes and what their
// queries hold: a turn runs at most MaxToolScans scanning calls and
// MaxToolReads reading ones, and a
// query of any length is read as the frame reads a question (bounded),
// still finding its words.
func TestToolCallsBounded(t *testing.T) {
	t.Parallel()
	f, _, _, st := toolFixture(t)
	ctx := context.Background()
	wide := "tomatoes " + strings.Repeat("zebra quartz ", 50_000) + " basil"
	args, _ := json.Marshal(map[string]any{"query": wide, "limit": 1})
	for i := 1; i <= memory.MaxToolScans+2; i++ {
		tool := memory.ToolSearch
		if i%2 == 0 {
			tool = memory.ToolCount
		}
		res, err := f.eng.RunTool(ctx, st, tool, args)
		if err != nil {
			t.Fatal(err)
		}
		over := strings.HasPrefix(res, "error: at most")
		if over != (i > memory.MaxToolScans) {
			t.Fatalf("call %d of a turn: %q", i, res)
		}
		if i == 1 && len(ids(res)) != 1 {
			t.Fatalf("a wide query found nothing of its first and last words: %q", res)
		}
	}
	// The reading tools have their own bound, so the scans spent above
	// take none of it.
	for i := 1; i <= memory.MaxToolReads+2; i++ {
		tool, args := memory.ToolReopen, json.RawMessage(`{}`)
		if i%2 == 0 {
			tool, args = memory.ToolChain, json.RawMessage(`{"item":1,"direction":"after"}`)
		}
		res, err := f.eng.RunTool(ctx, st, tool, args)
		if err != nil {
			t.Fatal(err)
		}
		if over := strings.HasPrefix(res, "error: at most"); over != (i > memory.MaxToolReads) {
			t.Fatalf("reading call %d of a turn: %q", i, res)
		}
	}
}
