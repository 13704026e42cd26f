package lab

import (
	"encoding/json"
	"fmt"
	"sync"

	"github.com/perpetuity/perpetuity/e2e/fakeprovider"
	"github.com/perpetuity/perpetuity/memory"
	"github.com/perpetuity/perpetuity/memory/importer/locomo"
)

// The --tools part of the recall benchmark: probes whose first round calls
// one memory tool, so the reach of each tool is measured through the real
// tool loop.

// toolProbe is one question asked with the memory tools on, its first
// round answered with calls of one tool and its second with text.
type toolProbe struct {
	probe
	tool string

	// Written by the fake provider's hook.
	missed   []string // evidence texts not in the frame
	calls    int      // tool calls the first round made
	followed bool     // the round carrying the tool results arrived
	reached  int      // missed evidence texts in the tool results
}

// buildToolProbes makes one probe per memory tool for each question of
// categories 1-4 (the only ones the reach figures count).
func buildToolProbes(probes []probe, budget int) []toolProbe {
	var out []toolProbe
	for _, p := range probes {
		if p.budget != 0 || p.category < 1 || p.category > 4 {
			continue
		}
		for _, t := range evalTools {
			tp := toolProbe{probe: p, tool: t}
			tp.budget = budget
			out = append(out, tp)
		}
	}
	return out
}

// answer is the fake provider's reply to one round of a tool probe. The
// first round's request is the frame: what it misses is recorded, and the
// reply calls the probe's tool (no call when nothing was missed). The next
// round's request carries the tool results: what they hold of the missed
// evidence is recorded, and the reply is text.
func (p *toolProbe) answer(mu *sync.Mutex, body []byte) fakeprovider.Reply {
	results, followUp, err := locomo.ToolResults(body)
	if err == nil && followUp {
		mu.Lock()
		defer mu.Unlock()
		p.followed, p.reached = true, locomo.CountReached(results, p.missed)
		return fakeprovider.Reply{Text: "ok"}
	}
	var missed []string
	var calls []fakeprovider.ToolCall
	if err == nil {
		missed, err = locomo.Missing(body, p.question, p.evidence)
	}
	if err == nil && len(missed) > 0 {
		calls, err = p.toolCalls(body)
	}
	mu.Lock()
	p.seen, p.missed, p.calls, p.err = true, missed, len(calls), err
	mu.Unlock()
	if err != nil || len(calls) == 0 {
		return fakeprovider.Reply{Text: "ok"}
	}
	return fakeprovider.Reply{ToolCalls: calls}
}

// toolCalls are the first round's calls, with the arguments the engine's
// reach test uses: reopen everything it allows, search with the question,
// and a chain three turns each way around every turn the frame shows (the
// ids read from its labels), all in one round.
func (p *toolProbe) toolCalls(frame []byte) ([]fakeprovider.ToolCall, error) {
	switch p.tool {
	case memory.ToolReopen:
		return []fakeprovider.ToolCall{{Name: p.tool, Arguments: `{"limit":100}`}}, nil
	case memory.ToolSearch:
		args, err := json.Marshal(map[string]any{"query": p.question, "limit": 20})
		if err != nil {
			return nil, err
		}
		return []fakeprovider.ToolCall{{Name: p.tool, Arguments: string(args)}}, nil
	case memory.ToolChain:
		ids, err := locomo.FrameIDs(frame)
		if err != nil {
			return nil, err
		}
		calls := make([]fakeprovider.ToolCall, 0, len(ids))
		for _, id := range ids {
			calls = append(calls, fakeprovider.ToolCall{Name: p.tool, Arguments: fmt.Sprintf(`{"item":%d,"depth":3}`, id)})
		}
		return calls, nil
	}
	return nil, fmt.Errorf("eval has no probe for memory tool %q", p.tool)
}
