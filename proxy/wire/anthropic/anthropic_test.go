package anthropic

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/perpetuity/perpetuity/proxy/wire/jsonx"
)

const sampleRequest = `{"model":"claude-sonnet-4-5","max_tokens":1024,` +
	`"system":[{"type":"text","text":"You are Claude Code."},{"type":"text","text":"Rules.","cache_control":{"type":"ephemeral"}}],` +
	`"messages":[` +
	`{"role":"user","content":[{"type":"text","text":"<system-reminder>r</system-reminder>"},{"type":"text","text":"Hi"},{"type":"image","source":{"type":"base64","media_type":"image/png","data":"AA"}}]},` +
	`{"role":"assistant","content":[{"type":"thinking","thinking":"t","signature":"s"},{"type":"text","text":"Let me"},{"type":"tool_use","id":"toolu_1","name":"f","input":{"a":1}},{"type":"server_tool_use","id":"srv_1","name":"web_search","input":{}}]},` +
	`{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_1","content":[{"type":"text","text":"done"}],"is_error":false},{"type":"search_result","source":"s","title":"t","content":[]}]}],` +
	`"metadata":{"user_id":"{\"session_id\":\"abc\"}"},"tools":[{"name":"f","input_schema":{"type":"object"}},{"type":"web_search_20250305","name":"web_search","max_uses":2}],` +
	`"tool_choice":{"type":"auto","disable_parallel_tool_use":true},"thinking":{"type":"enabled","budget_tokens":1024},"service_tier":"auto"}`

func TestMessagesRequestRoundTrip(t *testing.T) {
	t.Parallel()
	r, err := ParseMessagesRequest([]byte(sampleRequest))
	if err != nil {
		t.Fatal(err)
	}
	checks := []struct {
		name string
		got  any
		want any
	}{
		{"system text", r.SystemText(), "You are Claude Code.\n\nRules."},
		{"user text", r.Messages[0].Text(), "<system-reminder>r</system-reminder>\nHi"},
		{"assistant text", r.Messages[1].Text(), "Let me"},
		{"user hint", r.UserHint(), `{"session_id":"abc"}`},
		{"server tool", r.Tools[1].IsClient(), false},
		{"client tool", r.Tools[0].IsClient(), true},
		{"tool result text", r.Messages[2].Content.Blocks[0].Content.Text(), "done"},
		{"extra kept", string(r.Extra["service_tier"]), `"auto"`},
		{"unknown block kept", string(r.Messages[2].Content.Blocks[1].Extra["title"]), `"t"`},
	}
	for _, c := range checks {
		if c.got != c.want {
			t.Errorf("%s: got %v, want %v", c.name, c.got, c.want)
		}
	}
	out, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	for _, key := range []string{`"service_tier":"auto"`, `"max_uses":2`, `{"type":"server_tool_use","id":"srv_1","name":"web_search","input":{}}`,
		`"cache_control":{"type":"ephemeral"}`, `"is_error":false`, `"title":"t"`, `"budget_tokens":1024`, `{"type":"thinking","thinking":"t","signature":"s"}`} {
		if !bytes.Contains(out, []byte(key)) {
			t.Errorf("re-encoded request lost %s:\n%s", key, out)
		}
	}
	r2, err := ParseMessagesRequest(out)
	if err != nil {
		t.Fatal(err)
	}
	out2, _ := json.Marshal(r2)
	if !bytes.Equal(out, out2) {
		t.Errorf("encoding is not stable:\n%s\n%s", out, out2)
	}
}

func TestBlocksOfUnknownShapeSurvive(t *testing.T) {
	t.Parallel()
	in := `[{"type":"search_result","source":"https://x","title":"t","content":[{"type":"text","text":"a"}]},` +
		`{"type":"web_search_tool_result","tool_use_id":"srv_1","content":{"type":"web_search_tool_result_error","error_code":"max_uses_exceeded"}},` +
		`{"type":"image","source":{"type":"base64","media_type":"image/png","data":"AA","future":{"x":1}}}]`
	var c Content
	if err := json.Unmarshal([]byte(in), &c); err != nil {
		t.Fatal(err)
	}
	out, err := jsonx.Marshal(c)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"source":"https://x"`, `"content":{"type":"web_search_tool_result_error","error_code":"max_uses_exceeded"}`, `"future":{"x":1}`, `"tool_use_id":"srv_1"`} {
		if !bytes.Contains(out, []byte(want)) {
			t.Errorf("lost %s:\n%s", want, out)
		}
	}
	if c.Blocks[2].Source == nil || c.Blocks[2].Source.MediaType != "image/png" {
		t.Errorf("image source not decoded: %+v", c.Blocks[2].Source)
	}
}

func TestUserIDText(t *testing.T) {
	t.Parallel()
	tests := []struct{ raw, want string }{
		{`"u1"`, "u1"},
		{`{"device":"d"}`, `{"device":"d"}`},
		{`null`, ""},
		{``, ""},
	}
	for _, tt := range tests {
		if got := (Metadata{UserID: json.RawMessage(tt.raw)}).UserIDText(); got != tt.want {
			t.Errorf("%s: got %q, want %q", tt.raw, got, tt.want)
		}
	}
	if got := UserIDMetadata("a\"b").UserIDText(); got != "a\"b" {
		t.Errorf("UserIDMetadata round trip = %q", got)
	}
}

func TestStreamEventEncoding(t *testing.T) {
	t.Parallel()
	stop := StopEndTurn
	tests := []struct {
		name string
		ev   StreamEvent
		want string
	}{
		{"message_start", StreamEvent{Type: EventMessageStart, Message: &Response{ID: "msg_1", Type: "message", Role: RoleAssistant, Content: []ContentBlock{}, Model: "m"}},
			`{"type":"message_start","message":{"id":"msg_1","type":"message","role":"assistant","content":[],"model":"m","stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":0,"cache_creation_input_tokens":0,"cache_read_input_tokens":0,"output_tokens":0}}}`},
		{"text start", StreamEvent{Type: EventContentBlockStart, Index: 0, ContentBlock: &ContentBlock{Type: BlockText}},
			`{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`},
		{"tool start", StreamEvent{Type: EventContentBlockStart, Index: 1, ContentBlock: &ContentBlock{Type: BlockToolUse, ID: "toolu_1", Name: "f"}},
			`{"type":"content_block_start","index":1,"content_block":{"type":"tool_use","id":"toolu_1","name":"f","input":{}}}`},
		{"thinking start", StreamEvent{Type: EventContentBlockStart, Index: 0, ContentBlock: &ContentBlock{Type: BlockThinking}},
			`{"type":"content_block_start","index":0,"content_block":{"type":"thinking","thinking":"","signature":""}}`},
		{"text delta", StreamEvent{Type: EventContentBlockDelta, Index: 0, Delta: &EventDelta{Type: DeltaText, Text: "<hi>"}},
			`{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"<hi>"}}`},
		{"json delta", StreamEvent{Type: EventContentBlockDelta, Index: 2, Delta: &EventDelta{Type: DeltaInputJSON}},
			`{"type":"content_block_delta","index":2,"delta":{"type":"input_json_delta","partial_json":""}}`},
		{"block stop", StreamEvent{Type: EventContentBlockStop, Index: 3},
			`{"type":"content_block_stop","index":3}`},
		{"message delta", StreamEvent{Type: EventMessageDelta, Delta: &EventDelta{StopReason: &stop}, Usage: &Usage{OutputTokens: 5}},
			`{"type":"message_delta","delta":{"stop_reason":"end_turn","stop_sequence":null},"usage":{"input_tokens":0,"cache_creation_input_tokens":0,"cache_read_input_tokens":0,"output_tokens":5}}`},
		{"message stop", StreamEvent{Type: EventMessageStop}, `{"type":"message_stop"}`},
		{"ping", StreamEvent{Type: EventPing}, `{"type":"ping"}`},
		{"error", StreamEvent{Type: EventError, Error: &ErrorDetail{Type: ErrOverloaded, Message: "Overloaded"}},
			`{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`},
	}
	for _, tt := range tests {
		out, err := jsonx.Marshal(tt.ev)
		if err != nil {
			t.Fatal(err)
		}
		if string(out) != tt.want {
			t.Errorf("%s:\n got %s\nwant %s", tt.name, out, tt.want)
		}
		back, err := ParseStreamEvent(out)
		if err != nil || back.Type != tt.ev.Type || back.Index != tt.ev.Index {
			t.Errorf("%s does not decode back: %+v %v", tt.name, back, err)
		}
	}
}

// FuzzParseMessagesRequest: any accepted body re-encodes to JSON that
// decodes to the same encoding.
func FuzzParseMessagesRequest(f *testing.F) {
	f.Add([]byte(sampleRequest))
	f.Add([]byte(`{"system":"s","messages":[{"role":"user","content":"x"}],"metadata":{"user_id":{"a":1}}}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		r, err := ParseMessagesRequest(body)
		if err != nil {
			return
		}
		out, err := json.Marshal(r)
		if err != nil {
			t.Fatalf("re-encoding failed: %v", err)
		}
		r2, err := ParseMessagesRequest(out)
		if err != nil {
			t.Fatalf("re-encoded body does not parse: %v\n%s", err, out)
		}
		out2, _ := json.Marshal(r2)
		if !bytes.Equal(out, out2) {
			t.Fatalf("round trip not stable:\n%s\n%s", out, out2)
		}
	})
}
