package fakeprovider

import (
	"flag"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/perpetuity/perpetuity/proxy/sse"
)

var update = flag.Bool("update", false, "rewrite golden files under testdata/")

const (
	chatBody      = `{"model":"gpt-4o-mini","messages":[{"role":"system","content":"Be brief."},{"role":"user","content":"What is the weather in Paris?"}]%s}`
	anthropicBody = `{"model":"claude-sonnet-4-5-20250929","max_tokens":1024,"system":"Be brief.","messages":[{"role":"user","content":[{"type":"text","text":"What is the weather in Paris?"}]}]%s}`
	responsesBody = `{"model":"gpt-4.1","instructions":"Be brief.","input":[{"role":"user","content":[{"type":"input_text","text":"What is the weather in Paris?"}]}]%s}`
)

var weatherTools = []ToolCall{
	{Name: "get_weather", Arguments: `{"location":"Paris, France","unit":"celsius"}`},
	{ID: "call_supplied_by_script", Name: "get_time", Arguments: `{"tz":"Europe/Paris"}`},
}

type goldenCase struct {
	name  string
	path  string
	body  string
	reply Reply
}

func goldenCases() []goldenCase {
	withExtra := func(tmpl, extra string) string { return strings.Replace(tmpl, "%s", extra, 1) }
	tools := Reply{Text: "Let me check.", ToolCalls: weatherTools}
	toolsOnly := Reply{ToolCalls: weatherTools[:1]}
	return []goldenCase{
		{"openai_chat_text.json", "/v1/chat/completions", withExtra(chatBody, ""), Reply{}},
		{"openai_chat_tools.json", "/v1/chat/completions", withExtra(chatBody, ""), tools},
		{"openai_chat_text_stream.sse", "/v1/chat/completions", withExtra(chatBody, `,"stream":true,"stream_options":{"include_usage":true}`), Reply{}},
		{"openai_chat_text_stream_plain.sse", "/v1/chat/completions", withExtra(chatBody, `,"stream":true,"stream_options":{"include_obfuscation":false},"service_tier":"flex"`), Reply{Text: "Sunny, 24°C.", Chunks: 3}},
		{"openai_chat_tools_stream.sse", "/v1/chat/completions", withExtra(chatBody, `,"stream":true`), tools},
		{"openai_chat_tool_only_stream.sse", "/v1/chat/completions", withExtra(chatBody, `,"stream":true`), toolsOnly},
		{"openai_chat_inband_error.sse", "/v1/chat/completions", withExtra(chatBody, `,"stream":true`), Reply{InBandErrorAfter: 2}},
		{"openai_chat_omit_stop.sse", "/v1/chat/completions", withExtra(chatBody, `,"stream":true,"stream_options":{"include_usage":true}`), Reply{OmitStopReason: true}},
		{"openai_chat_429.json", "/v1/chat/completions", withExtra(chatBody, ""), Reply{Status: 429}},
		{"anthropic_text.json", "/v1/messages", withExtra(anthropicBody, ""), Reply{}},
		{"anthropic_tools.json", "/v1/messages", withExtra(anthropicBody, ""), tools},
		{"anthropic_text_stream.sse", "/v1/messages", withExtra(anthropicBody, `,"stream":true`), Reply{}},
		{"anthropic_tools_stream.sse", "/v1/messages", withExtra(anthropicBody, `,"stream":true`), tools},
		{"anthropic_tool_only_stream.sse", "/v1/messages", withExtra(anthropicBody, `,"stream":true`), toolsOnly},
		{"anthropic_inband_error.sse", "/v1/messages", withExtra(anthropicBody, `,"stream":true`), Reply{InBandErrorAfter: 2}},
		{"anthropic_omit_stop.sse", "/v1/messages", withExtra(anthropicBody, `,"stream":true`), Reply{OmitStopReason: true}},
		{"anthropic_529.json", "/v1/messages", withExtra(anthropicBody, ""), Reply{Status: 529}},
		{"responses_text.json", "/v1/responses", withExtra(responsesBody, ""), Reply{}},
		{"responses_tools.json", "/v1/responses", withExtra(responsesBody, `,"tools":[{"type":"function","name":"get_weather","parameters":{"type":"object","properties":{}}}],"temperature":0.2`), tools},
		{"responses_text_stream.sse", "/v1/responses", withExtra(responsesBody, `,"stream":true`), Reply{}},
		{"responses_tools_stream.sse", "/v1/responses", withExtra(responsesBody, `,"stream":true`), tools},
		{"responses_inband_error.sse", "/v1/responses", withExtra(responsesBody, `,"stream":true`), Reply{InBandErrorAfter: 1}},
	}
}

func authed(req *http.Request) {
	req.Header.Set("Content-Type", "application/json")
	if strings.HasPrefix(req.URL.Path, "/v1/messages") {
		req.Header.Set("x-api-key", "sk-ant-test")
		req.Header.Set("anthropic-version", "2023-06-01")
	} else {
		req.Header.Set("Authorization", "Bearer sk-test")
	}
}

// renderResponse is the golden form: status, headers but Date, body.
func renderResponse(t *testing.T, resp *http.Response) []byte {
	t.Helper()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("read body: %v", err)
	}
	var b strings.Builder
	b.WriteString(resp.Status + "\n")
	keys := make([]string, 0, len(resp.Header))
	for k := range resp.Header {
		if k != "Date" {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	for _, k := range keys {
		b.WriteString(k + ": " + strings.Join(resp.Header[k], ", ") + "\n")
	}
	b.WriteString("\n")
	b.Write(body)
	return []byte(b.String())
}

// TestGoldenWire pins the exact bytes of every reply shape, so any change
// to the wire format shows up in review.
func TestGoldenWire(t *testing.T) {
	t.Parallel()
	for _, tc := range goldenCases() {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			p := New()
			p.Script(tc.reply)
			srv := httptest.NewServer(p)
			defer srv.Close()
			req, err := http.NewRequest(http.MethodPost, srv.URL+tc.path, strings.NewReader(tc.body))
			if err != nil {
				t.Fatal(err)
			}
			authed(req)
			resp, err := srv.Client().Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			got := renderResponse(t, resp)
			golden := filepath.Join("testdata", tc.name+".golden")
			if *update {
				if err := os.WriteFile(golden, got, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (run with -update to create)", err)
			}
			if string(got) != string(want) {
				t.Fatalf("wire bytes differ from %s:\n--- got\n%s\n--- want\n%s", golden, got, want)
			}
			if strings.HasSuffix(tc.name, ".sse") {
				_, rest, _ := strings.Cut(string(got), "\n\n")
				p := sse.NewParser()
				evs := p.Push([]byte(rest))
				if _, err := p.End(); err != nil || len(evs) < 3 {
					t.Fatalf("stream is not clean SSE: %d events, %v", len(evs), err)
				}
			}
		})
	}
}

// TestRepliesAreDeterministic proves Reset rewinds the id sequence and that
// two providers with the same seed agree.
func TestRepliesAreDeterministic(t *testing.T) {
	t.Parallel()
	p := New()
	srv := httptest.NewServer(p)
	defer srv.Close()
	do := func(url string) string {
		req, _ := http.NewRequest(http.MethodPost, url+"/v1/messages", strings.NewReader(strings.Replace(anthropicBody, "%s", `,"stream":true`, 1)))
		authed(req)
		resp, err := srv.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		return string(renderResponse(t, resp))
	}
	first := do(srv.URL)
	second := do(srv.URL)
	if first == second {
		t.Fatal("two replies share their ids")
	}
	p.Reset()
	if again := do(srv.URL); again != first {
		t.Fatalf("after Reset the first reply differs:\n%s\n---\n%s", again, first)
	}
	other := httptest.NewServer(New(WithSeed(2)))
	defer other.Close()
	if do(other.URL) == first {
		t.Fatal("a different seed gives the same ids")
	}
}
