package locomo

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
)

func chatBody(t testing.TB, msgs ...map[string]any) []byte {
	t.Helper()
	b, err := json.Marshal(map[string]any{"model": "m", "messages": msgs})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func chatMsg(role string, content any) map[string]any {
	return map[string]any{"role": role, "content": content}
}

func TestToolReachScoring(t *testing.T) {
	t.Parallel()
	frame := chatBody(t,
		chatMsg("system", "Long-term memory: labels in 【】, turn ids as #id."),
		chatMsg("user", "【8 May 2023】\n【Caroline #12】 I went to the \"LGBTQ\" support group.\n【Melanie #7】 Nice!\n【Caroline #12】 again"),
		chatMsg("assistant", "【Melanie #301】 Biscuit is a great name!"),
		chatMsg("user", "When did Caroline go to the support group?"),
	)
	followUp := chatBody(t,
		chatMsg("user", "When did Caroline go?"),
		map[string]any{"role": "assistant", "content": nil, "tool_calls": []any{}},
		chatMsg("tool", "【Caroline #40】 I painted a sunrise."),
		chatMsg("tool", "【Melanie #41】 We went camping."),
	)
	cases := []struct {
		name      string
		body      []byte
		question  string
		evidence  []string
		missed    []string
		ids       []int64
		results   string
		followsUp bool
	}{
		{"frame", frame, "When did Caroline go to the support group?",
			[]string{`I went to the "LGBTQ" support group.`, "I painted a sunrise.", "", "support group?"},
			[]string{"I painted a sunrise.", "support group?"}, []int64{12, 7, 301}, "", false},
		{"tool results", followUp, "When did Caroline go?",
			[]string{"I painted a sunrise."}, nil, []int64{40, 41},
			"【Caroline #40】 I painted a sunrise.\n\n【Melanie #41】 We went camping.", true},
	}
	for _, tc := range cases {
		missed, err := Missing(tc.body, tc.question, tc.evidence)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if !reflect.DeepEqual(missed, tc.missed) {
			t.Errorf("%s: missed %q, want %q", tc.name, missed, tc.missed)
		}
		ids, err := FrameIDs(tc.body)
		if err != nil || !reflect.DeepEqual(ids, tc.ids) {
			t.Errorf("%s: ids %v %v, want %v", tc.name, ids, err, tc.ids)
		}
		res, ok, err := ToolResults(tc.body)
		if err != nil || ok != tc.followsUp || res != tc.results {
			t.Errorf("%s: results %q %v %v, want %q %v", tc.name, res, ok, err, tc.results, tc.followsUp)
		}
	}
	if n := CountReached("【Caroline #40】 I painted a sunrise.", []string{"I painted a sunrise.", "We went camping."}); n != 1 {
		t.Errorf("reached %d, want 1", n)
	}
	for _, bad := range [][]byte{[]byte("not json"), []byte(`{"messages":[{"role":"tool","content":7}]}`)} {
		if _, err := Missing(bad, "", []string{"x"}); err == nil {
			t.Errorf("Missing(%s) did not fail", bad)
		}
		if _, _, err := ToolResults(bad); err == nil {
			t.Errorf("ToolResults(%s) did not fail", bad)
		}
	}
}

func TestSummarizeTools(t *testing.T) {
	t.Parallel()
	all := []ToolScored{
		{Tool: "memory_reopen", Category: 1, Missed: 2, Reached: 1},
		{Tool: "memory_reopen", Category: 4, Missed: 1, Reached: 1},
		{Tool: "memory_reopen", Category: 5, Missed: 9, Reached: 9}, // not counted
		{Tool: "memory_search", Category: 2, Missed: 3, Reached: 5}, // capped at missed
		{Tool: "memory_chain", Category: 3},
	}
	want := map[string]Reach{
		"memory_reopen": {Missed: 3, Reached: 2, Share: 0.6667},
		"memory_search": {Missed: 3, Reached: 3, Share: 1},
		"memory_chain":  {},
	}
	if got := SummarizeTools(all); !reflect.DeepEqual(got, want) {
		t.Errorf("SummarizeTools = %+v, want %+v", got, want)
	}
	var b strings.Builder
	WriteToolTable(&b, all, []string{"memory_reopen", "memory_search", "memory_chain", "memory_count"}, 2000)
	for _, line := range []string{
		"memory tools at @2000",
		"memory_reopen         3        2   0.667",
		"memory_search         3        3   1.000",
		"memory_chain          0        0   0.000",
		"memory_count          0        0   0.000",
	} {
		if !strings.Contains(b.String(), line) {
			t.Errorf("table lacks %q:\n%s", line, b.String())
		}
	}
}

// FuzzToolReach: upstream bodies are decoded, never trusted to be well formed.
func FuzzToolReach(f *testing.F) {
	f.Add([]byte(`{"messages":[{"role":"user","content":"【a #1】 x"},{"role":"tool","content":"【b #2】 y"}]}`), "x")
	f.Add([]byte(`{"messages":[{"role":"tool","content":[{"type":"text","text":"#99999999999999999999】"}]}]}`), "")
	f.Add([]byte(`null`), "q")
	f.Fuzz(func(t *testing.T, body []byte, ev string) {
		missed, err := Missing(body, "q", []string{ev})
		if err == nil && len(missed) > 1 {
			t.Fatalf("missed %d of 1", len(missed))
		}
		ids, _ := FrameIDs(body)
		seen := map[int64]bool{}
		for _, id := range ids {
			if seen[id] {
				t.Fatalf("id %d twice", id)
			}
			seen[id] = true
		}
		res, _, _ := ToolResults(body)
		if n := CountReached(res, missed); n > len(missed) {
			t.Fatalf("reached %d of %d", n, len(missed))
		}
	})
}
