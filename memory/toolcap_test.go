package memory_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/perpetuity/perpetuity/memory"
)

// TestCeilingHoldsBudgetAndToolResults: a forced budget far past the
// ceiling gets a frame within it, and no tool's arguments take one result
// past it; what a result leaves out is reached by calling again.
func TestCeilingHoldsBudgetAndToolResults(t *testing.T) {
	t.Parallel()
	const ceiling = 150
	f := newFixture(t)
	ctx := context.Background()
	w := f.who(t, "alice", "garden")
	for i := 0; i < 40; i++ {
		f.say(t, w, "user", fmt.Sprintf("garden note %d tomatoes basil %s", i, strings.Repeat("compost mulch ", 8)), i)
	}
	q := memory.FrameQuery{Who: f.who(t, "alice", "now"), Live: "what about tomatoes basil garden compost", Probe: true,
		Tools: true, Ceiling: ceiling, Budget: 1_000_000, Now: time.Date(2026, 2, 1, 0, 0, 0, 0, time.UTC)}
	fr, err := f.eng.Frame(ctx, q)
	if err != nil {
		t.Fatal(err)
	}
	count := wordAnalysis{}.Count
	if n := count(frameText(fr)); fr.Tokens > ceiling || !fr.Trimmed {
		t.Fatalf("budget 1,000,000 under ceiling %d: frame of %d tokens (%d by words), trimmed %v", ceiling, fr.Tokens, n, fr.Trimmed)
	}
	item := ids(frameText(fr))[0]
	for _, c := range []struct{ name, args string }{
		{memory.ToolReopen, `{"limit":100}`},
		{memory.ToolSearch, `{"query":"tomatoes basil compost","limit":50}`},
		{memory.ToolChain, `{"item":` + item + `,"depth":20}`},
		{memory.ToolCount, `{"query":"tomatoes","by":"month","examples":5}`},
	} {
		t.Run(c.name, func(t *testing.T) {
			st := memory.NewToolState(q, fr)
			seen := map[string]bool{}
			for call := 0; call < 2; call++ {
				res, err := f.eng.RunTool(ctx, st, c.name, []byte(c.args))
				if err != nil {
					t.Fatal(err)
				}
				if n := count(res); n > ceiling {
					t.Errorf("call %d %s: result of %d tokens, ceiling %d", call, c.args, n, ceiling)
				}
				got := ids(res)
				if len(got) == 0 && c.name != memory.ToolCount {
					t.Errorf("call %d: no turns in %q", call, res)
				}
				for _, id := range got {
					if seen[id] {
						t.Errorf("call %d repeats turn #%s", call, id)
					}
					seen[id] = true
				}
				if call == 0 && c.name != memory.ToolCount && !strings.Contains(res, "more turns left out") {
					t.Errorf("a cut result does not say so: %q", res)
				}
			}
		})
	}
}
