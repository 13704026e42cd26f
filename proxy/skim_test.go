package proxy

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/perpetuity/perpetuity/proxy/dialect"
)

// skimCases are bodies the walk reads itself and bodies where it must
// give way to the decoder, for both chat dialects.
var skimCases = []string{
	with(chatIn, ""), with(messagesIn, `,"stream":true`),
	`{"model":"m","messages":[{"role":"system","content":"be brief"},{"role":"developer","content":[{"type":"text","text":"a"},{"type":"text","text":"b"}]},{"role":"user","content":"q \u00e9 \"x\""}]}`,
	`{"model":"m","messages":[{"role":"user","content":[{"type":"tool_result","tool_use_id":"a","content":"file"},{"type":"text","text":"t"}]}]}`,
	`{"model":"m","messages":[{"role":"assistant","content":null,"tool_calls":[{"id":"c"}]},{"role":"tool","content":"r"},{"role":"user","content":"q"}]}`,
	`{"model":"m","messages":[{"role":"user","content":"q","tool_calls":null}],"user":"u1","metadata":{"user_id":"m1"}}`,
	` { "model" : "m" , "messages" : [ { "role" : "user" , "content" : [ { "type" : "image_url" } , { "text" : "t" , "type" : "text" } ] } ] } `,
	// repeated keys: the last wins, in the body and in a message
	`{"model":"a","messages":[{"role":"assistant","content":"x","role":"user"}],"model":"b"}`,
	`{"model":"m","system":[{"type":"text","text":"s1","cache_control":{"type":"ephemeral"}},{"type":"text","text":"s\u00e9"}],"messages":[{"role":"user","content":"q"}]}`,
	`{"model":"m","system":[{"type":"text","text":5}],"messages":[{"role":"user","content":"q"}]}`,
	// a string that is not UTF-8, which the decoder reads for the walk
	"{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":\"bad \xff byte\"}]}",
	// what the walk leaves to the decoder
	`{"model":"m","system":[{"type":"text","text":"s1","cache_control":{"type":"ephemeral"}},{"type":"text","text":"s2"}],"messages":[{"ROLE":"user","content":"q"}]}`,
	`{"model":"m","messages":[{"ROLE":"user","content":"q"}]}`,
	`{"model":"m","messages":[{"r\u006fle":"user","content":"q"}]}`,
	`{"m\u006fdel":"m","messages":[{"role":"user","content":"q"}]}`,
	`{"model":"m","messages":[{"role":"user","content":[{"Type":"text","text":"t"}]}]}`,
	`{"model":"m","messages":[{"role":"user","content":[null,{"type":"text","text":"t"}]}]}`,
	`{"model":"m","messages":[{"role":"user","content":[{"type":null,"text":"t"}]}]}`,
	// refused either way, with the decoder's words
	`{"model":"m","messages":[]}`, `{"model":"m","messages":{}}`, `{"model":"m","messages":[{"role":"robot","content":"q"}]}`,
	`{"model":"m","messages":[{"role":7,"content":"q"}]}`, `{"model":"m","messages":[{"role":"user","content":{"a":1}}]}`,
	`{"model":"m","messages":[{"role":"user","content":[{"type":"text","text":5}]}]}`, `{"model":"m","messages":["x"]}`,
	`{"model":"m"}`, `[]`, `null`, `{"model":"m",`, `{"model":1,"messages":[]}`,
	// Responses input items
	with(responsesIn, ""), `{"model":"m","input":"just a string"}`, `{"model":"m","input":[]}`,
	`{"model":"m","input":[{"type":"function_call","call_id":"c","name":"f"},{"type":"function_call_output","call_id":"c","output":"o"},{"role":"user","content":[{"type":"input_text","text":"q"},{"type":"input_image"}]}]}`,
	`{"model":"m","input":[{"type":"message","role":"robot","content":"q"}]}`, `{"model":"m","input":[{"role":"user","call_id":3}]}`,
	`{"model":"m","input":[{"Role":"user","content":"q"}]}`, `{"model":"m","input":{"role":"user"}}`,
}

// TestSkimMatchesDecoder: the walk reads every body as the decoder does,
// including the ones it gives way on, and refuses the same ones with the
// same words.
func TestSkimMatchesDecoder(t *testing.T) {
	t.Parallel()
	bodies := append([]string{}, skimCases...)
	files, _ := filepath.Glob("testdata/*/*.request.json")
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		bodies = append(bodies, string(b))
	}
	if len(files) == 0 {
		t.Fatal("no request bodies under testdata")
	}
	bodies = append(bodies, string(agentBody(3)))
	// The walk reads the first eleven itself (and the agent's body), and
	// gives the next seven to the decoder.
	for i, b := range append(skimCases[:18:18], string(agentBody(3))) {
		if got, want := walks(dialect.OpenAIChat, []byte(b)), i < 11 || i == 18; got != want {
			t.Errorf("%.80s: the walk read it itself: %v, want %v", b, got, want)
		}
	}
	var fields map[string]json.RawMessage
	if body := []byte(with(responsesIn, "")); !json.Valid(body) || !skimFields(body, &fields) {
		t.Error("the walk does not read a Responses body's fields")
	} else if _, ok := skimResponsesItems(fields["input"]); !ok {
		t.Error("the walk does not read a Responses body's input items")
	}
	for _, b := range bodies {
		for _, d := range []dialect.Dialect{dialect.OpenAIChat, dialect.AnthropicMessages, dialect.OpenAIResponses} {
			if diff := skimDiff(d, []byte(b)); diff != "" {
				t.Errorf("%s %.80s: %s", d, b, diff)
			}
		}
	}
}

// FuzzSkimMatchesDecoder is TestSkimMatchesDecoder on any body.
func FuzzSkimMatchesDecoder(f *testing.F) {
	for _, s := range skimCases {
		for d := range 3 {
			f.Add(uint8(d), []byte(s))
		}
	}
	f.Fuzz(func(t *testing.T, d uint8, body []byte) {
		dl := []dialect.Dialect{dialect.OpenAIChat, dialect.AnthropicMessages, dialect.OpenAIResponses}[int(d)%3]
		if diff := skimDiff(dl, body); diff != "" {
			t.Fatalf("%s %q: %s", dl, body, diff)
		}
	})
}

// skimDiff says how parseInbound reads body differently from the decoder
// alone ("" when it does not).
func skimDiff(d dialect.Dialect, body []byte) string {
	got, gerr := parseInboundWith(d, body, true)
	want, werr := parseInboundWith(d, body, false)
	if fmt.Sprint(gerr) != fmt.Sprint(werr) {
		return fmt.Sprintf("error %v, the decoder's %v", gerr, werr)
	}
	if !reflect.DeepEqual(got, want) {
		return fmt.Sprintf("read\n%+v\nthe decoder read\n%+v", got, want)
	}
	return ""
}

// agentBody is an Anthropic request shaped like a coding agent's: a long
// system prompt, tool definitions, and a history of tool_use and
// tool_result exchanges carrying a file's contents (about 5 kB each).
func agentBody(exchanges int) []byte { return agentBodyAt(exchanges, true) }

// agentBodyAt is agentBody with the question last (asked), or first: a
// task under way, every exchange after it in flight.
func agentBodyAt(exchanges int, asked bool) []byte {
	file := strings.Repeat("\tfunc f(x int) int { return x * 2 } // \"doubled\" <here>\n", 80)
	var tools []map[string]any
	for i := range 20 {
		tools = append(tools, map[string]any{"name": fmt.Sprintf("tool_%d", i), "description": strings.Repeat("Does a thing with files. ", 60),
			"input_schema": map[string]any{"type": "object", "properties": map[string]any{"path": map[string]any{"type": "string"}}}})
	}
	msgs := []map[string]any{{"role": "user", "content": "Please refactor the package and run the tests."}}
	for i := range exchanges {
		id := fmt.Sprintf("toolu_%04d", i)
		msgs = append(msgs,
			map[string]any{"role": "assistant", "content": []any{map[string]any{"type": "text", "text": "Let me read the file."},
				map[string]any{"type": "tool_use", "id": id, "name": "tool_1", "input": map[string]any{"path": "a/b.go"}}}},
			map[string]any{"role": "user", "content": []any{map[string]any{"type": "tool_result", "tool_use_id": id, "content": file}}})
	}
	if asked {
		msgs = append(msgs, map[string]any{"role": "assistant", "content": "Done reading."},
			map[string]any{"role": "user", "content": "Now explain the change you made to f."})
	}
	b, err := json.Marshal(map[string]any{"model": "claude-x", "max_tokens": 4096, "stream": true,
		"system": strings.Repeat("You are a coding agent. Follow the rules. ", 250), "tools": tools, "messages": msgs})
	if err != nil {
		panic(err)
	}
	return b
}

// walks says whether the walk reads body's fields and messages itself.
func walks(d dialect.Dialect, body []byte) bool {
	var fields map[string]json.RawMessage
	if !json.Valid(body) || !skimFields(body, &fields) {
		return false
	}
	_, ok := skimMessages(d, fields["messages"])
	return ok
}
