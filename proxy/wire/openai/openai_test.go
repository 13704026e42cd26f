package openai

import (
	"bytes"
	"encoding/json"
	"testing"
)

const sampleRequest = `{"model":"gpt-4o","messages":[` +
	`{"role":"system","content":"Be brief."},` +
	`{"role":"developer","content":[{"type":"text","text":"No emoji."}]},` +
	`{"role":"user","content":[{"type":"text","text":"Hi"},{"type":"image_url","image_url":{"url":"https://x/y.png","detail":"low"}},{"type":"text","text":"there","vendor":1}],"name":"bob"},` +
	`{"role":"assistant","content":null,"tool_calls":[{"id":"call_1","type":"function","function":{"name":"f","arguments":"{}"}}],"audio":{"id":"a"}},` +
	`{"role":"tool","tool_call_id":"call_1","content":"ok"}],` +
	`"stop":"END","tool_choice":{"type":"function","function":{"name":"f"}},"user":"u1","seed":3,"response_format":{"type":"json_object"},` +
	`"stream":true,"stream_options":{"include_usage":true,"future":1}}`

func TestChatRequestRoundTrip(t *testing.T) {
	t.Parallel()
	r, err := ParseChatRequest([]byte(sampleRequest))
	if err != nil {
		t.Fatal(err)
	}
	checks := []struct {
		name string
		got  any
		want any
	}{
		{"system text", r.SystemText(), "Be brief.\n\nNo emoji."},
		{"user text", r.Messages[2].Text(), "Hi\nthere"},
		{"assistant content null", r.Messages[3].Content.IsNull(), true},
		{"tool text", r.Messages[4].Text(), "ok"},
		{"user hint", r.UserHint(), "u1"},
		{"include usage", r.IncludeUsage(), true},
		{"stop", len(r.Stop), 1},
		{"tool choice", r.ToolChoice.Mode + ":" + r.ToolChoice.Function, "function:f"},
		{"extra kept", string(r.Extra["seed"]), "3"},
		{"message extra kept", string(r.Messages[3].Extra["audio"]), `{"id":"a"}`},
		{"part extra kept", string(r.Messages[2].Content.Parts[2].Extra["vendor"]), "1"},
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
	for _, key := range []string{`"seed":3`, `"response_format":{"type":"json_object"}`, `"audio":{"id":"a"}`, `"vendor":1`, `"future":1`, `"content":null`, `"detail":"low"`} {
		if !bytes.Contains(out, []byte(key)) {
			t.Errorf("re-encoded request lost %s:\n%s", key, out)
		}
	}
	// Decoding the re-encoded request and encoding again is stable.
	r2, err := ParseChatRequest(out)
	if err != nil {
		t.Fatal(err)
	}
	out2, _ := json.Marshal(r2)
	if !bytes.Equal(out, out2) {
		t.Errorf("encoding is not stable:\n%s\n%s", out, out2)
	}
}

func TestContentUnion(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in      string
		out     string
		wantErr bool
	}{
		{`"hi"`, `"hi"`, false},
		{`""`, `""`, false},
		{`null`, `null`, false},
		{`[]`, `[]`, false},
		{`[{"type":"text","text":""}]`, `[{"type":"text","text":""}]`, false},
		{`5`, ``, true},
		{`{"a":1}`, ``, true},
	}
	for _, tt := range tests {
		var c Content
		err := json.Unmarshal([]byte(tt.in), &c)
		if (err != nil) != tt.wantErr {
			t.Errorf("%s: err %v", tt.in, err)
			continue
		}
		if err != nil {
			continue
		}
		out, _ := json.Marshal(c)
		if string(out) != tt.out {
			t.Errorf("%s re-encoded as %s, want %s", tt.in, out, tt.out)
		}
	}
}

func TestImageURLAsBareString(t *testing.T) {
	t.Parallel()
	in := `{"type":"image_url","image_url":"https://x/y.png"}`
	var p ContentPart
	if err := json.Unmarshal([]byte(in), &p); err != nil {
		t.Fatal(err)
	}
	if p.ImageURL != nil {
		t.Errorf("bare string decoded into ImageURL: %+v", p.ImageURL)
	}
	out, _ := json.Marshal(p)
	if string(out) != in {
		t.Errorf("re-encoded as %s, want %s", out, in)
	}
}

func TestToolChoiceForms(t *testing.T) {
	t.Parallel()
	for _, in := range []string{`"auto"`, `"required"`, `{"type":"function","function":{"name":"f"}}`, `{"type":"allowed_tools","allowed_tools":{"mode":"auto"}}`} {
		var c ToolChoice
		if err := json.Unmarshal([]byte(in), &c); err != nil {
			t.Fatalf("%s: %v", in, err)
		}
		out, _ := json.Marshal(c)
		if string(out) != in {
			t.Errorf("%s re-encoded as %s", in, out)
		}
	}
	out, _ := json.Marshal(ToolChoice{Mode: ToolChoiceFunction, Function: "g"})
	if string(out) != `{"function":{"name":"g"},"type":"function"}` {
		t.Errorf("built function choice = %s", out)
	}
}

func TestChunkEncoding(t *testing.T) {
	t.Parallel()
	empty, stop := "", "stop"
	tests := []struct {
		name  string
		chunk ChatCompletionChunk
		want  string
	}{
		{"role chunk", ChatCompletionChunk{ID: "c", Object: ObjectChatCompletionChunk, Created: 1, Model: "m", Choices: []ChunkChoice{{Delta: Delta{Role: "assistant", Content: &empty}}}},
			`{"id":"c","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"role":"assistant","content":"","refusal":null},"logprobs":null,"finish_reason":null}]}`},
		{"finish with usage null", ChatCompletionChunk{ID: "c", Object: ObjectChatCompletionChunk, Created: 1, Model: "m", UsageNull: true, Choices: []ChunkChoice{{FinishReason: &stop}}},
			`{"id":"c","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{},"logprobs":null,"finish_reason":"stop"}],"usage":null}`},
		{"usage chunk", ChatCompletionChunk{ID: "c", Object: ObjectChatCompletionChunk, Created: 1, Model: "m", SystemFingerprint: "fp", Usage: &Usage{PromptTokens: 1, CompletionTokens: 2, TotalTokens: 3}},
			`{"id":"c","object":"chat.completion.chunk","created":1,"model":"m","system_fingerprint":"fp","choices":[],"usage":{"prompt_tokens":1,"completion_tokens":2,"total_tokens":3}}`},
	}
	for _, tt := range tests {
		out, err := json.Marshal(tt.chunk)
		if err != nil {
			t.Fatal(err)
		}
		if string(out) != tt.want {
			t.Errorf("%s:\n got %s\nwant %s", tt.name, out, tt.want)
		}
	}
}

func TestParseErrorDetail(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in       string
		ok       bool
		msg      string
		code     string
		typeName string
	}{
		{`{"message":"m","type":"server_error","param":null,"code":"c1"}`, true, "m", "c1", "server_error"},
		{`{"message":"m","code":502}`, true, "m", "502", ""},
		{`"plain"`, true, "plain", "", ""},
		{`{"message":5,"type":"x"}`, true, "", "", "x"},
		{`null`, false, "", "", ""},
		{``, false, "", "", ""},
	}
	for _, tt := range tests {
		d, ok := ParseErrorDetail(json.RawMessage(tt.in))
		if ok != tt.ok || d.Message != tt.msg || d.CodeString() != tt.code || d.Type != tt.typeName {
			t.Errorf("%s: got %v %+v code %q", tt.in, ok, d, d.CodeString())
		}
	}
}

// FuzzParseChatRequest: any accepted body re-encodes to JSON that decodes
// to the same encoding (nothing is lost or invented on a round trip).
func FuzzParseChatRequest(f *testing.F) {
	f.Add([]byte(sampleRequest))
	f.Add([]byte(`{"messages":[{"role":"user","content":[{"type":"file","file":{"file_id":"f"}}]}]}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		r, err := ParseChatRequest(body)
		if err != nil {
			return
		}
		out, err := json.Marshal(r)
		if err != nil {
			t.Fatalf("re-encoding failed: %v", err)
		}
		r2, err := ParseChatRequest(out)
		if err != nil {
			t.Fatalf("re-encoded body does not parse: %v\n%s", err, out)
		}
		out2, _ := json.Marshal(r2)
		if !bytes.Equal(out, out2) {
			t.Fatalf("round trip not stable:\n%s\n%s", out, out2)
		}
	})
}
