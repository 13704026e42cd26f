package toolloop

import (
	"encoding/json"
	"testing"

	"github.com/perpetuity/perpetuity/proxy/dialect"
)

// TestMergeKeepsContentAnArray: a tool loop whose last round held only a
// memory call (dropped: it ran nowhere) merges into a reply whose content
// is an empty array, never null. The Messages API always sends an array,
// and clients (the SDKs, Claude Code) loop over it: null broke them.
func TestMergeKeepsContentAnArray(t *testing.T) {
	t.Parallel()
	call := `{"type":"tool_use","id":"toolu_1","name":"memory_search","input":{"query":"q"}}`
	cases := []struct {
		name   string
		rounds []string
		blocks int
	}{
		{"every round only memory calls", []string{
			`{"content":[` + call + `],"stop_reason":"tool_use","usage":{"input_tokens":1,"output_tokens":1}}`,
			`{"content":[` + call + `],"stop_reason":"tool_use","usage":{"input_tokens":1,"output_tokens":1}}`,
		}, 0},
		{"a round without content", []string{`{"content":[],"stop_reason":"end_turn"}`}, 0},
		{"text before the last round's call", []string{
			`{"content":[{"type":"text","text":"looking"},` + call + `],"stop_reason":"tool_use"}`,
			`{"content":[` + call + `],"stop_reason":"tool_use"}`,
		}, 1},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			bodies := make([][]byte, len(c.rounds))
			for i, r := range c.rounds {
				bodies[i] = []byte(r)
			}
			out, err := testLoop(dialect.AnthropicMessages).Merge(bodies)
			if err != nil {
				t.Fatal(err)
			}
			var got struct {
				Content    *[]json.RawMessage `json:"content"`
				StopReason string             `json:"stop_reason"`
			}
			if err := json.Unmarshal(out, &got); err != nil {
				t.Fatal(err)
			}
			if got.Content == nil || len(*got.Content) != c.blocks || got.StopReason != "end_turn" {
				t.Fatalf("merged %s: want a content array of %d blocks and end_turn", out, c.blocks)
			}
		})
	}
}
