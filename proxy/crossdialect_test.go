package proxy

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/perpetuity/perpetuity/e2e/fakeprovider"
	"github.com/perpetuity/perpetuity/proxy/sse"
)

const (
	chatIn = `{"model":"claude-sonnet-4-5","messages":[` +
		`{"role":"system","content":"You are terse."},` +
		`{"role":"user","content":"Hi, I am ada."},` +
		`{"role":"assistant","content":"HARNESS COPY THAT WAS NEVER SAID"},` +
		`{"role":"user","content":"What is my cat called?"}],"temperature":0.3%s}`
	messagesIn = `{"model":"gpt-4o-mini","max_tokens":300,"system":"You are terse.","messages":[` +
		`{"role":"user","content":"Hi, I am ada."},` +
		`{"role":"assistant","content":[{"type":"text","text":"HARNESS COPY THAT WAS NEVER SAID"}]},` +
		`{"role":"user","content":[{"type":"text","text":"What is my cat called?"}]}]%s}`
	chatHeader     = "Authorization: Bearer sk-ant-api03-secret"
	toolsOff       = HeaderTools + ": off"
	messagesHeader = "X-Api-Key: sk-proj-secret"
)

func with(tmpl, extra string) string { return strings.Replace(tmpl, "%s", extra, 1) }

// events parses an SSE body.
func events(t *testing.T, body string) []sse.Event {
	t.Helper()
	rd := sse.NewReader(strings.NewReader(body))
	var out []sse.Event
	for {
		ev, err := rd.Next()
		if errors.Is(err, io.EOF) {
			return out
		}
		if err != nil {
			t.Fatalf("client stream: %v\n%s", err, body)
		}
		out = append(out, ev)
	}
}

// TestCrossDialect: OpenAI chat in to Anthropic out and Anthropic messages
// in to OpenAI out, streaming and not, text and tool calls. Goldens pin the
// request the provider received (frame in place of the history, rendered in
// the provider's dialect) and the reply the client received (in its own).
func TestCrossDialect(t *testing.T) {
	t.Parallel()
	text := fakeprovider.Reply{Text: "Your cat is called Miso."}
	tool := fakeprovider.Reply{ToolCalls: []fakeprovider.ToolCall{{ID: "toolu_01Weather", Name: "get_weather", Arguments: `{"city":"Paris"}`}}}
	cases := []struct {
		name, path, body, header string
		reply                    fakeprovider.Reply
		provider, reqDialect     string
	}{
		{"chat_to_anthropic", "/v1/chat/completions", with(chatIn, ""), chatHeader, text, "anthropic", fakeprovider.DialectAnthropic},
		{"chat_to_anthropic_stream", "/v1/chat/completions", with(chatIn, `,"stream":true,"stream_options":{"include_usage":true}`), chatHeader, text, "anthropic", fakeprovider.DialectAnthropic},
		{"chat_to_anthropic_tool", "/v1/chat/completions", with(chatIn, `,"tools":[{"type":"function","function":{"name":"get_weather","parameters":{"type":"object","properties":{"city":{"type":"string"}}}}}]`), chatHeader, tool, "anthropic", fakeprovider.DialectAnthropic},
		{"chat_to_anthropic_tool_stream", "/v1/chat/completions", with(chatIn, `,"stream":true,"tools":[{"type":"function","function":{"name":"get_weather","parameters":{"type":"object"}}}]`), chatHeader, tool, "anthropic", fakeprovider.DialectAnthropic},
		{"messages_to_openai", "/v1/messages", with(messagesIn, ""), messagesHeader, text, "openai", fakeprovider.DialectOpenAIChat},
		{"messages_to_openai_stream", "/v1/messages", with(messagesIn, `,"stream":true`), messagesHeader, text, "openai", fakeprovider.DialectOpenAIChat},
		{"messages_to_openai_tool", "/v1/messages", with(messagesIn, `,"tools":[{"name":"get_weather","input_schema":{"type":"object"}}]`), messagesHeader, tool, "openai", fakeprovider.DialectOpenAIChat},
		{"messages_to_openai_tool_stream", "/v1/messages", with(messagesIn, `,"stream":true,"tools":[{"name":"get_weather","input_schema":{"type":"object"}}]`), messagesHeader, tool, "openai", fakeprovider.DialectOpenAIChat},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			tp := newTestProxy(t)
			up := tp.anthropic
			if c.provider == "openai" {
				up = tp.openai
			}
			up.Script(c.reply)
			// The goldens pin the crossing itself; tools_test.go pins what
			// the memory tools add.
			status, h, body := tp.post(c.path, c.body, c.header, toolsOff)
			if status != http.StatusOK {
				t.Fatalf("status %d: %s", status, body)
			}
			tp.settle(1)
			got := tp.received()
			if len(got) != 1 || len(got[c.provider]) != 1 {
				t.Fatalf("requests by provider: %v", got)
			}
			rec := got[c.provider][0]
			if rec.Dialect != c.reqDialect {
				t.Fatalf("provider got dialect %s", rec.Dialect)
			}
			sent := string(rec.Body)
			if strings.Contains(sent, "HARNESS COPY") || !strings.Contains(sent, "her cat is called Miso") || !strings.Contains(sent, "You are terse.") {
				t.Fatalf("provider did not get the frame in place of the history: %s", sent)
			}
			switch hd := rec.Header; c.provider {
			case "anthropic":
				if hd.Get("X-Api-Key") != "sk-ant-api03-secret" || hd.Get("Authorization") != "" || hd.Get("Anthropic-Version") != "2023-06-01" {
					t.Fatalf("credential headers: %v", hd)
				}
			default:
				if hd.Get("Authorization") != "Bearer sk-proj-secret" || hd.Get("X-Api-Key") != "" {
					t.Fatalf("credential headers: %v", hd)
				}
			}
			golden(t, "crossdialect/"+c.name+".request.json", []byte(sent+"\n"))
			golden(t, "crossdialect/"+c.name+".reply", []byte(body))

			stream := strings.Contains(c.body, `"stream":true`)
			if isEventStream(h.Get("Content-Type")) != stream {
				t.Fatalf("content type %q for stream=%v", h.Get("Content-Type"), stream)
			}
			if stream {
				evs := events(t, body)
				last := evs[len(evs)-1]
				if c.provider == "anthropic" && string(last.Data) != "[DONE]" || c.provider == "openai" && last.Event != "message_stop" {
					t.Fatalf("translated stream ends with %q %q", last.Event, last.Data)
				}
			}
			stored := tp.mem.Stored()
			wantStored := 2
			if c.reply.Text == "" {
				wantStored = 1 // a reply of tool calls only has no text to keep
			}
			if len(stored) != wantStored || stored[0].Role != "user" || stored[0].Text != "What is my cat called?" ||
				wantStored == 2 && (stored[1].Role != "assistant" || stored[1].Text != c.reply.Text || stored[1].Interrupted) {
				t.Fatalf("stored %+v", stored)
			}
			// The question's capture refuses the request when it fails, so
			// it commits only once seen to succeed; the reply's, after the
			// response, goes with its COMMIT (store.Capture.CommitApart).
			if !stored[0].CommitApart || wantStored == 2 && stored[1].CommitApart {
				t.Fatalf("question commits apart %v, reply %v", stored[0].CommitApart, wantStored == 2 && stored[1].CommitApart)
			}
			recs := tp.dir.Records()
			if len(recs) != 1 || recs[0].Provider != c.provider || recs[0].Status != 200 || recs[0].TokensIn == 0 || recs[0].TokensOut == 0 {
				t.Fatalf("request records %+v", recs)
			}
			// The reply is said when it ended, not when its capture ran
			// (after the response, possibly after the next question).
			if wantStored == 2 && !stored[1].At.Equal(recs[0].At) {
				t.Fatalf("reply stamped %v, the request ended %v", stored[1].At, recs[0].At)
			}
		})
	}
}

// TestCrossDialectToolExchange: the in-flight exchange after the live
// question crosses natively, ids intact, and Anthropic gets strict
// alternation starting with the user.
func TestCrossDialectToolExchange(t *testing.T) {
	t.Parallel()
	t.Run("chat_to_anthropic", func(t *testing.T) {
		t.Parallel()
		tp := newTestProxy(t)
		tp.anthropic.Script(fakeprovider.Reply{Text: "Sunny in Paris."})
		body := `{"model":"claude-sonnet-4-5","messages":[{"role":"system","content":"S"},{"role":"user","content":"Weather in Paris?"},` +
			`{"role":"assistant","content":null,"tool_calls":[{"id":"toolu_01Weather","type":"function","function":{"name":"get_weather","arguments":"{\"city\":\"Paris\"}"}}]},` +
			`{"role":"tool","tool_call_id":"toolu_01Weather","content":"sunny, 24C"}],` +
			`"tools":[{"type":"function","function":{"name":"get_weather","parameters":{"type":"object"}}}]}`
		status, _, out := tp.post("/v1/chat/completions", body, chatHeader, toolsOff)
		if status != 200 || !strings.Contains(out, "Sunny in Paris.") {
			t.Fatalf("%d %s", status, out)
		}
		var sent struct {
			System   string `json:"system"`
			Messages []struct {
				Role    string          `json:"role"`
				Content json.RawMessage `json:"content"`
			} `json:"messages"`
		}
		rec := tp.anthropic.Requests()[0]
		if err := json.Unmarshal(rec.Body, &sent); err != nil {
			t.Fatal(err)
		}
		roles := ""
		for i, m := range sent.Messages {
			roles += m.Role[:1]
			if i > 0 && m.Role == sent.Messages[i-1].Role {
				t.Fatalf("roles do not alternate: %s", rec.Body)
			}
		}
		// recollection (user, assistant), the live question, then the
		// exchange (assistant tool_use, user tool_result).
		if sent.System != "S" || roles != "uauau" {
			t.Fatalf("system %q roles %s: %s", sent.System, roles, rec.Body)
		}
		n := len(sent.Messages)
		use, result := string(sent.Messages[n-2].Content), string(sent.Messages[n-1].Content)
		if !strings.Contains(use, `"type":"tool_use","id":"toolu_01Weather","name":"get_weather","input":{"city":"Paris"}`) ||
			!strings.Contains(result, `"type":"tool_result","tool_use_id":"toolu_01Weather"`) || !strings.Contains(result, "sunny, 24C") {
			t.Fatalf("tool exchange not native at the end: %s", rec.Body)
		}
		if !strings.Contains(string(sent.Messages[n-3].Content), "Weather in Paris?") {
			t.Fatalf("live question is not right before the exchange: %s", rec.Body)
		}
		golden(t, "crossdialect/chat_to_anthropic_tool_exchange.request.json", append(rec.Body, '\n'))
	})
	t.Run("messages_to_openai", func(t *testing.T) {
		t.Parallel()
		tp := newTestProxy(t)
		tp.openai.Script(fakeprovider.Reply{Text: "Sunny in Paris."})
		body := `{"model":"gpt-4o","max_tokens":100,"messages":[{"role":"user","content":"Weather in Paris?"},` +
			`{"role":"assistant","content":[{"type":"tool_use","id":"call_abc","name":"get_weather","input":{"city":"Paris"}}]},` +
			`{"role":"user","content":[{"type":"tool_result","tool_use_id":"call_abc","content":"sunny, 24C"},{"type":"text","text":"<reminder>be brief</reminder>"}]}],` +
			`"tools":[{"name":"get_weather","input_schema":{"type":"object"}}]}`
		status, _, out := tp.post("/v1/messages", body, messagesHeader, toolsOff)
		if status != 200 || !strings.Contains(out, "Sunny in Paris.") {
			t.Fatalf("%d %s", status, out)
		}
		rec := tp.openai.Requests()[0]
		s := string(rec.Body)
		call := strings.Index(s, `"tool_calls":[{"id":"call_abc","type":"function","function":{"name":"get_weather","arguments":"{\"city\":\"Paris\"}"}}]`)
		result := strings.Index(s, `{"role":"tool","content":"sunny, 24C","tool_call_id":"call_abc"}`)
		live := strings.Index(s, "Weather in Paris?")
		if call < 0 || result < 0 || !(live < call && call < result) || !strings.Contains(s, "be brief") {
			t.Fatalf("tool exchange not native after the live question: %s", s)
		}
		tp.settle(1)
		if st := tp.mem.Stored(); len(st) != 2 || st[0].Text != "Weather in Paris?" {
			t.Fatalf("stored %+v", st)
		}
		golden(t, "crossdialect/messages_to_openai_tool_exchange.request.json", append(rec.Body, '\n'))
	})
}

// TestCrossDialectErrors: provider errors reach the client in its own
// dialect with the provider's status; broken streams end in the client's
// error event, never its terminator, and the reply is stored flagged.
func TestCrossDialectErrors(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name, path, body, header string
		reply                    fakeprovider.Reply
		status                   int
		check                    func(t *testing.T, h http.Header, body string)
	}{
		{"anthropic 429 to openai client", "/v1/chat/completions", with(chatIn, ""), chatHeader, fakeprovider.Reply{Status: 429}, 429,
			func(t *testing.T, h http.Header, body string) {
				var e struct {
					Error struct{ Message, Type string } `json:"error"`
				}
				if json.Unmarshal([]byte(body), &e) != nil || e.Error.Message == "" || e.Error.Type == "" || h.Get("Retry-After") == "" {
					t.Fatalf("not an OpenAI error with Retry-After: %v %s", h, body)
				}
			}},
		{"anthropic 529 to openai client", "/v1/chat/completions", with(chatIn, ""), chatHeader, fakeprovider.Reply{Status: 529, ErrorMessage: "Overloaded"}, 529,
			func(t *testing.T, _ http.Header, body string) {
				if !strings.Contains(body, `"message":"Overloaded"`) || !strings.Contains(body, `"code":"overloaded"`) {
					t.Fatalf("body %s", body)
				}
			}},
		{"openai 401 to anthropic client", "/v1/messages", with(messagesIn, ""), messagesHeader, fakeprovider.Reply{Status: 401}, 401,
			func(t *testing.T, _ http.Header, body string) {
				if !strings.HasPrefix(body, `{"type":"error","error":{"type":"authentication_error"`) {
					t.Fatalf("not an Anthropic error: %s", body)
				}
			}},
		{"anthropic in-band error to openai stream", "/v1/chat/completions", with(chatIn, `,"stream":true`), chatHeader, fakeprovider.Reply{Text: "one two three four", InBandErrorAfter: 2}, 200,
			func(t *testing.T, _ http.Header, body string) {
				evs := events(t, body)
				if last := string(evs[len(evs)-1].Data); !strings.HasPrefix(last, `{"error":{`) || strings.Contains(body, "[DONE]") {
					t.Fatalf("stream %s", body)
				}
			}},
		{"openai in-band error to anthropic stream", "/v1/messages", with(messagesIn, `,"stream":true`), messagesHeader, fakeprovider.Reply{Text: "one two three four", InBandErrorAfter: 2}, 200,
			func(t *testing.T, _ http.Header, body string) {
				evs := events(t, body)
				if last := evs[len(evs)-1]; last.Event != "error" || strings.Contains(body, "message_stop") {
					t.Fatalf("stream %s", body)
				}
			}},
		{"anthropic stream without its stop", "/v1/chat/completions", with(chatIn, `,"stream":true`), chatHeader, fakeprovider.Reply{Text: "one two", OmitStopReason: true}, 200,
			func(t *testing.T, _ http.Header, body string) {
				evs := events(t, body)
				if last := string(evs[len(evs)-1].Data); !strings.Contains(last, "without its terminator") || strings.Contains(body, "[DONE]") {
					t.Fatalf("stream %s", body)
				}
			}},
		{"openai stream without its stop", "/v1/messages", with(messagesIn, `,"stream":true`), messagesHeader, fakeprovider.Reply{Text: "one two", OmitStopReason: true}, 200,
			func(t *testing.T, _ http.Header, body string) {
				evs := events(t, body)
				if last := evs[len(evs)-1]; last.Event != "error" || !strings.Contains(string(last.Data), "without its terminator") || strings.Contains(body, "message_stop") {
					t.Fatalf("stream %s", body)
				}
			}},
		{"anthropic stream cut", "/v1/chat/completions", with(chatIn, `,"stream":true`), chatHeader, fakeprovider.Reply{Text: "one two three", FailAfter: 1}, 200,
			func(t *testing.T, _ http.Header, body string) {
				evs := events(t, body)
				if last := string(evs[len(evs)-1].Data); !strings.HasPrefix(last, `{"error":{`) || strings.Contains(body, "[DONE]") {
					t.Fatalf("stream %s", body)
				}
			}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			tp := newTestProxy(t)
			tp.anthropic.Script(c.reply)
			tp.openai.Script(c.reply)
			status, h, body := tp.post(c.path, c.body, c.header)
			if status != c.status {
				t.Fatalf("status %d, want %d: %s", status, c.status, body)
			}
			c.check(t, h, body)
			tp.settle(1)
			st := tp.mem.Stored()
			if len(st) == 0 || st[0].Text != "What is my cat called?" {
				t.Fatalf("live question not stored: %+v", st)
			}
			if c.status == 200 && (len(st) != 2 || !st[1].Interrupted || st[1].Text == "") {
				t.Fatalf("partial reply not stored flagged: %+v", st)
			}
		})
	}
}

// TestUpstreamsFromConfigurationOnly: fields and headers naming a host, and
// URLs as model names, reach nothing but configured providers.
func TestUpstreamsFromConfigurationOnly(t *testing.T) {
	t.Parallel()
	var evil atomic.Int64
	es := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { evil.Add(1) }))
	defer es.Close()
	tp := newTestProxy(t)
	odd := []string{"X-Forwarded-Host: " + es.Listener.Addr().String(), "X-Base-Url: " + es.URL, "X-Api-Base: " + es.URL,
		"Forwarded: host=" + es.Listener.Addr().String(), "X-Original-Url: " + es.URL}
	cases := []struct {
		name, path, body, provider string
		headers                    []string
	}{
		{"api_base field", "/v1/chat/completions", `{"model":"gpt-4o","api_base":"` + es.URL + `","base_url":"` + es.URL + `","messages":[{"role":"user","content":"hi"}]}`, "openai", []string{"Authorization: Bearer sk-proj-k"}},
		{"anthropic base_url", "/v1/messages", `{"model":"claude-sonnet-4-5","max_tokens":5,"base_url":"` + es.URL + `","messages":[{"role":"user","content":"hi"}]}`, "anthropic", []string{"X-Api-Key: sk-ant-k"}},
		{"openrouter", "/v1/chat/completions", `{"model":"x-ai/grok-4","api_base":"` + es.URL + `","messages":[{"role":"user","content":"hi"}]}`, "openrouter", []string{"Authorization: Bearer sk-or-v1-k"}},
		{"declared upstream", "/v1/messages", `{"model":"llama-3.1-8b","max_tokens":5,"messages":[{"role":"user","content":"hi"}]}`, "vllm", []string{"X-Api-Key: local"}},
		{"url as model", "/v1/chat/completions", `{"model":"` + es.URL + `/v1","messages":[{"role":"user","content":"hi"}]}`, "", []string{"Authorization: Bearer sk-proj-k"}},
		{"responses url as model", "/v1/responses", `{"model":"` + es.URL + `","input":"hi"}`, "", []string{"Authorization: Bearer sk-proj-k"}},
	}
	for _, c := range cases {
		before := map[string]int{}
		for k, v := range tp.received() {
			before[k] = len(v)
		}
		status, _, body := tp.post(c.path, c.body, append(c.headers, odd...)...)
		if c.provider == "" {
			if status != http.StatusBadRequest || !strings.Contains(body, "looks like a URL") {
				t.Fatalf("%s: %d %s", c.name, status, body)
			}
			continue
		}
		if status != http.StatusOK {
			t.Fatalf("%s: %d %s", c.name, status, body)
		}
		if got := tp.received()[c.provider]; len(got) != before[c.provider]+1 {
			t.Fatalf("%s: %s did not get the request", c.name, c.provider)
		}
	}
	tp.settle(4)
	if n := evil.Load(); n != 0 {
		t.Fatalf("a host named by the request was contacted %d times", n)
	}
}

// TestCrossDialectDisconnect: a client hanging up mid translated stream
// cancels the provider call and leaves the partial reply stored, flagged.
func TestCrossDialectDisconnect(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ name, path, body, header, provider string }{
		{"chat_to_anthropic", "/v1/chat/completions", with(chatIn, `,"stream":true`), chatHeader, "anthropic"},
		{"messages_to_openai", "/v1/messages", with(messagesIn, `,"stream":true`), messagesHeader, "openai"},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			tp := newTestProxy(t)
			up := map[string]upstreamServer{"anthropic": tp.anthropic, "openai": tp.openai}[c.provider]
			words := strings.Repeat("once upon a time ", 30)
			up.Script(fakeprovider.Reply{Text: words, ChunkDelay: 20 * time.Millisecond})
			ctx, cancel := context.WithCancel(context.Background())
			req, _ := http.NewRequestWithContext(ctx, http.MethodPost, tp.URL+c.path, strings.NewReader(c.body))
			k, v, _ := strings.Cut(c.header, ": ")
			req.Header.Set(k, v)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			br := bufio.NewReader(resp.Body)
			for range 10 {
				if _, err := br.ReadString('\n'); err != nil {
					t.Fatal(err)
				}
			}
			cancel()
			resp.Body.Close()
			wctx, wcancel := context.WithTimeout(context.Background(), 2*time.Second)
			defer wcancel()
			if err := up.WaitClosed(wctx, 1); err != nil {
				t.Fatalf("provider call not cancelled: %v", err)
			}
			tp.settle(1)
			st := tp.mem.Stored()
			if len(st) != 2 || !st[1].Interrupted || st[1].Text == "" || !strings.HasPrefix(words, st[1].Text) || st[1].Text == words {
				t.Fatalf("stored %+v", st)
			}
		})
	}
}
