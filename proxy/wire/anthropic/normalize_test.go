package anthropic

import (
	"encoding/json"
	"testing"

	"github.com/perpetuity/perpetuity/proxy/wire/jsonx"
)

func TestNormalizeMessages(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		in   string
		want string
	}{
		{"already fine", `[{"role":"user","content":"hi"},{"role":"assistant","content":"yo"}]`,
			`[{"role":"user","content":"hi"},{"role":"assistant","content":"yo"}]`},
		{"starts with assistant", `[{"role":"assistant","content":"Hello"},{"role":"user","content":"hi"}]`,
			`[{"role":"user","content":"..."},{"role":"assistant","content":"Hello"},{"role":"user","content":"hi"}]`},
		{"consecutive users merge", `[{"role":"user","content":"a"},{"role":"user","content":[{"type":"text","text":"b"}]}]`,
			`[{"role":"user","content":[{"type":"text","text":"a"},{"type":"text","text":"b"}]}]`},
		{"empty messages dropped before merging", `[{"role":"user","content":"a"},{"role":"assistant","content":""},{"role":"user","content":"b"}]`,
			`[{"role":"user","content":[{"type":"text","text":"a"},{"type":"text","text":"b"}]}]`},
		{"tool results lead", `[{"role":"assistant","content":[{"type":"tool_use","id":"t1","name":"f","input":{}}]},{"role":"user","content":"note"},{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":"ok"}]}]`,
			`[{"role":"user","content":"..."},{"role":"assistant","content":[{"type":"tool_use","id":"t1","name":"f","input":{}}]},{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":"ok"},{"type":"text","text":"note"}]}]`},
		{"final assistant trimmed", `[{"role":"user","content":"a"},{"role":"assistant","content":"b  \n"}]`,
			`[{"role":"user","content":"a"},{"role":"assistant","content":"b"}]`},
		{"final assistant whitespace dropped", `[{"role":"user","content":"a"},{"role":"assistant","content":[{"type":"text","text":"x"},{"type":"text","text":" \n"}]},{"role":"assistant","content":"   "}]`,
			`[{"role":"user","content":"a"},{"role":"assistant","content":"x"}]`},
		{"cached single block stays a block", `[{"role":"user","content":[{"type":"text","text":"a","cache_control":{"type":"ephemeral"}}]}]`,
			`[{"role":"user","content":[{"type":"text","text":"a","cache_control":{"type":"ephemeral"}}]}]`},
		{"other roles dropped", `[{"role":"system","content":"s"},{"role":"user","content":"a"}]`,
			`[{"role":"user","content":"a"}]`},
		{"empty", `[]`, `[]`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var in []Message
			if err := json.Unmarshal([]byte(tt.in), &in); err != nil {
				t.Fatal(err)
			}
			before, _ := jsonx.Marshal(in)
			got, err := jsonx.Marshal(NormalizeMessages(in))
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != tt.want {
				t.Errorf("\n got %s\nwant %s", got, tt.want)
			}
			if after, _ := jsonx.Marshal(in); string(after) != string(before) {
				t.Errorf("input modified:\n%s\n%s", before, after)
			}
		})
	}
}
