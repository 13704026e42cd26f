package fakeprovider

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/perpetuity/perpetuity/proxy/sse"
)

func post(t *testing.T, url, body string, header map[string]string) (*http.Response, []byte) {
	t.Helper()
	resp := send(t, http.MethodPost, url, body, header)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("read: %v", err)
	}
	return resp, b
}

// send makes a request with header and returns the response, its body
// unread.
func send(t *testing.T, method, url, body string, header map[string]string) *http.Response {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

var (
	openaiAuth    = map[string]string{"Authorization": "Bearer sk-test"}
	anthropicAuth = map[string]string{"x-api-key": "sk-ant-test", "anthropic-version": "2023-06-01"}
)

func TestRejections(t *testing.T) {
	t.Parallel()
	msgs := `"messages":[{"role":"user","content":"hi"}]`
	tests := []struct {
		name   string
		method string
		path   string
		header map[string]string
		body   string
		status int
		want   string // substring of the body
	}{
		{"openai no key", "POST", "/v1/chat/completions", nil, `{"model":"gpt-4o",` + msgs + `}`, 401, `"message": "You didn't provide an API key.`},
		{"openai wrong scheme", "POST", "/v1/chat/completions", map[string]string{"Authorization": "Basic eDp5"}, `{}`, 401, `"type": "invalid_request_error"`},
		{"openai bad json", "POST", "/v1/chat/completions", openaiAuth, `{"model":`, 400, "We could not parse the JSON body of your request."},
		{"openai json not an object", "POST", "/v1/chat/completions", openaiAuth, `[1]`, 400, "We could not parse the JSON body"},
		{"openai no model", "POST", "/v1/chat/completions", openaiAuth, `{` + msgs + `}`, 400, "you must provide a model parameter"},
		{"openai no messages", "POST", "/v1/chat/completions", openaiAuth, `{"model":"gpt-4o"}`, 400, `"code": "missing_required_parameter"`},
		{"openai empty messages", "POST", "/v1/chat/completions", openaiAuth, `{"model":"gpt-4o","messages":[]}`, 400, `"code": "empty_array"`},
		{"responses no model", "POST", "/v1/responses", openaiAuth, `{"input":"hi"}`, 400, "Missing required parameter: 'model'."},
		{"anthropic no key", "POST", "/v1/messages", map[string]string{"anthropic-version": "2023-06-01"}, `{}`, 401, `{"type":"error","error":{"type":"authentication_error","message":"x-api-key header is required"},"request_id":"req_011C`},
		{"anthropic no version", "POST", "/v1/messages", map[string]string{"x-api-key": "k"}, `{}`, 400, `"message":"anthropic-version: header is required"`},
		{"anthropic bearer accepted", "POST", "/v1/messages", map[string]string{"Authorization": "Bearer k", "anthropic-version": "2023-06-01"}, `{"model":"claude-x",` + msgs + `}`, 400, `"message":"max_tokens: Field required"`},
		{"anthropic bad json", "POST", "/v1/messages", anthropicAuth, `{"model"`, 400, `"type":"invalid_request_error"`},
		{"anthropic no model", "POST", "/v1/messages", anthropicAuth, `{"max_tokens":5,` + msgs + `}`, 400, "model: Field required"},
		{"anthropic zero max_tokens", "POST", "/v1/messages", anthropicAuth, `{"model":"claude-x","max_tokens":0,` + msgs + `}`, 400, "max_tokens: Input should be"},
		{"anthropic system role", "POST", "/v1/messages", anthropicAuth, `{"model":"claude-x","max_tokens":5,"messages":[{"role":"system","content":"x"}]}`, 400, `Unexpected role \"system\"`},
		{"anthropic tool role", "POST", "/v1/messages", anthropicAuth, `{"model":"claude-x","max_tokens":5,"messages":[{"role":"user","content":"x"},{"role":"tool","content":"x"}]}`, 400, "messages.1.role: Input should be 'user' or 'assistant'"},
		{"count_tokens no key", "POST", "/v1/messages/count_tokens", nil, `{}`, 401, "authentication_error"},
		{"embeddings no input", "POST", "/v1/embeddings", openaiAuth, `{"model":"text-embedding-3-small"}`, 400, `"param": "input"`},
		{"unknown openai path", "POST", "/v1/assistants", openaiAuth, `{}`, 404, "Invalid URL (POST /v1/assistants)"},
		{"unknown anthropic path", "GET", "/v1/files", anthropicAuth, ``, 404, `"type":"not_found_error"`},
		{"wrong method", "GET", "/v1/chat/completions", openaiAuth, ``, 404, "Invalid URL (GET /v1/chat/completions)"},
		{"models no key", "GET", "/v1/models", nil, ``, 401, "You didn't provide an API key"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			p := New()
			p.Script(Reply{Text: "scripted"})
			srv := httptest.NewServer(p)
			defer srv.Close()
			resp := send(t, tt.method, srv.URL+tt.path, tt.body, tt.header)
			defer resp.Body.Close()
			body, _ := io.ReadAll(resp.Body)
			if resp.StatusCode != tt.status || !strings.Contains(string(body), tt.want) {
				t.Fatalf("%d %s; want %d containing %s", resp.StatusCode, body, tt.status, tt.want)
			}
			if !json.Valid(body) || resp.Header.Get("Content-Type") != "application/json" {
				t.Fatalf("error body is not JSON: %q", body)
			}
			if len(p.Requests()) != 1 {
				t.Fatalf("rejected request not recorded")
			}
			// The rejection must not have consumed the scripted reply.
			_, ok := post(t, srv.URL+"/v1/chat/completions", `{"model":"m",`+msgs+`}`, openaiAuth)
			if !strings.Contains(string(ok), `"content": "scripted"`) {
				t.Fatalf("script consumed by a rejected request: %s", ok)
			}
		})
	}
}

func TestScriptDefaultAndRecording(t *testing.T) {
	t.Parallel()
	p := New()
	srv := httptest.NewServer(p)
	defer srv.Close()
	body := func(text string) string {
		return `{"model":"claude-x","max_tokens":10,"unknown_field":{"kept":true},"messages":[{"role":"user","content":"first"},{"role":"assistant","content":"a"},{"role":"user","content":[{"type":"tool_result","tool_use_id":"t","content":"r"},{"type":"text","text":"` + text + `"}]}]}`
	}
	text := func(b []byte) string {
		var m struct {
			Content []struct{ Text string } `json:"content"`
		}
		if err := json.Unmarshal(b, &m); err != nil || len(m.Content) == 0 {
			t.Fatalf("bad body %s", b)
		}
		return m.Content[0].Text
	}
	p.Script(Reply{Text: "one"}, Reply{Text: "two"})
	p.SetDefault(func(r Recorded) Reply { return Reply{Text: "default for " + r.Model} })
	long := strings.Repeat("é", 70)
	var got []string
	for _, in := range []string{"a", "b", "c"} {
		_, b := post(t, srv.URL+"/v1/messages", body(in), anthropicAuth)
		got = append(got, text(b))
	}
	p.SetDefault(nil)
	_, b := post(t, srv.URL+"/v1/messages", body(long), anthropicAuth)
	got = append(got, text(b))
	want := []string{"one", "two", "default for claude-x", "ok: " + strings.Repeat("é", 60)}
	if !slices.Equal(got, want) {
		t.Fatalf("replies %q, want %q", got, want)
	}
	recs := p.Requests()
	if len(recs) != 4 || string(recs[0].Body) != body("a") || recs[0].Path != "/v1/messages" || recs[0].Method != "POST" || recs[0].Stream || recs[0].Finished.Before(recs[0].Received) || recs[0].Canceled {
		t.Fatalf("recorded %+v", recs[0])
	}
	recs[0].Header.Set("x-api-key", "mutated")
	if p.Requests()[0].Header.Get("x-api-key") != "sk-ant-test" {
		t.Fatal("Requests returns the provider's own header map")
	}
	p.Reset()
	if len(p.Requests()) != 0 {
		t.Fatal("Reset kept requests")
	}
}

// TestChunking checks Chunks, the per-word default and its cap through the
// wire.
func TestChunking(t *testing.T) {
	t.Parallel()
	words := strings.TrimSpace(strings.Repeat("w ", 100))
	tests := []struct {
		name  string
		reply Reply
		want  int
	}{
		{"per word", Reply{Text: "a b  c\nd"}, 4},
		{"explicit", Reply{Text: "abcdefgh", Chunks: 3}, 3},
		{"more chunks than runes", Reply{Text: "añb", Chunks: 10}, 3},
		{"capped at 64", Reply{Text: words}, 64},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			p := New()
			p.Script(tt.reply)
			srv := httptest.NewServer(p)
			defer srv.Close()
			_, b := post(t, srv.URL+"/v1/messages", strings.Replace(anthropicBody, "%s", `,"stream":true`, 1), anthropicAuth)
			var deltas []string
			for _, ev := range sse.NewParser().Push(b) {
				if ev.Event == "content_block_delta" {
					var d struct {
						Delta struct{ Text string } `json:"delta"`
					}
					_ = json.Unmarshal(ev.Data, &d)
					deltas = append(deltas, d.Delta.Text)
				}
			}
			if len(deltas) != tt.want || strings.Join(deltas, "") != tt.reply.Text {
				t.Fatalf("%d deltas %q, want %d joining to the text", len(deltas), deltas, tt.want)
			}
		})
	}
}

func TestSplitText(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in   string
		n    int
		want []string
	}{
		{"", 0, nil},
		{"hello", 0, []string{"hello"}},
		{"  lead and trail  ", 0, []string{"  lead", " and", " trail  "}},
		{"ok: What is it?", 0, []string{"ok:", " What", " is", " it?"}},
		{"abcdef", 2, []string{"abc", "def"}},
		{"日本語", 2, []string{"日", "本語"}},
	}
	for _, tt := range tests {
		if got := splitText(tt.in, tt.n); !slices.Equal(got, tt.want) {
			t.Errorf("splitText(%q, %d) = %q, want %q", tt.in, tt.n, got, tt.want)
		}
	}
}

// TestClientCancellationIsRecorded is the measurement the proxy's
// cancellation tests rely on: a client that hangs up mid-stream is seen by
// the fake promptly, and WaitClosed returns.
func TestClientCancellationIsRecorded(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		body  string
		path  string
		reply Reply
	}{
		{"mid-stream", strings.Replace(anthropicBody, "%s", `,"stream":true`, 1), "/v1/messages", Reply{Text: strings.Repeat("word ", 50), ChunkDelay: 20 * time.Millisecond}},
		{"before first byte", strings.Replace(chatBody, "%s", "", 1), "/v1/chat/completions", Reply{FirstByteDelay: time.Minute}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			p := New()
			p.Script(tt.reply)
			srv := httptest.NewServer(p)
			defer srv.Close()
			ctx, cancel := context.WithCancel(context.Background())
			req, _ := http.NewRequestWithContext(ctx, http.MethodPost, srv.URL+tt.path, strings.NewReader(tt.body))
			authed(req)
			done := make(chan struct{})
			go func() {
				defer close(done)
				resp, err := srv.Client().Do(req)
				if err != nil {
					return
				}
				defer resp.Body.Close()
				_, _ = bufio.NewReader(resp.Body).ReadString('\n')
				<-ctx.Done()
			}()
			if err := p.WaitRequests(context.Background(), 1); err != nil {
				t.Fatal(err)
			}
			time.Sleep(50 * time.Millisecond) // let the stream get going
			cancel()
			cancelAt := time.Now()
			<-done
			wctx, wcancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer wcancel()
			if err := p.WaitClosed(wctx, 1); err != nil {
				t.Fatalf("cancellation not seen: %v", err)
			}
			rec := p.Requests()[0]
			if !rec.Canceled || p.Canceled() != 1 || rec.CanceledAt.Before(cancelAt.Add(-time.Second)) {
				t.Fatalf("record %+v", rec)
			}
		})
	}
	t.Run("completed requests are not canceled", func(t *testing.T) {
		t.Parallel()
		p := New()
		srv := httptest.NewServer(p)
		defer srv.Close()
		post(t, srv.URL+"/v1/chat/completions", strings.Replace(chatBody, "%s", `,"stream":true`, 1), openaiAuth)
		if p.Canceled() != 0 || p.Requests()[0].Canceled {
			t.Fatal("a finished stream counted as canceled")
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
		defer cancel()
		if err := p.WaitClosed(ctx, 1); !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("WaitClosed = %v", err)
		}
	})
}

// TestFailAfterCutsTheConnection reads the raw body: the stream stops after
// the scripted deltas and the transport reports an unexpected EOF.
func TestFailAfterCutsTheConnection(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ path, body string }{
		{"/v1/chat/completions", strings.Replace(chatBody, "%s", `,"stream":true`, 1)},
		{"/v1/messages", strings.Replace(anthropicBody, "%s", `,"stream":true`, 1)},
		{"/v1/responses", strings.Replace(responsesBody, "%s", `,"stream":true`, 1)},
	} {
		t.Run(tc.path, func(t *testing.T) {
			t.Parallel()
			p := New()
			p.Script(Reply{Text: "a b c d e f", FailAfter: 2})
			srv := httptest.NewServer(p)
			defer srv.Close()
			req, _ := http.NewRequest(http.MethodPost, srv.URL+tc.path, strings.NewReader(tc.body))
			authed(req)
			resp, err := srv.Client().Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			r := sse.NewReader(resp.Body)
			var raw strings.Builder
			for {
				ev, err := r.Next()
				if err == nil {
					raw.Write(ev.Raw)
					continue
				}
				if !errors.Is(err, io.ErrUnexpectedEOF) {
					t.Fatalf("stream ended with %v, want unexpected EOF", err)
				}
				break
			}
			s := raw.String()
			if !strings.Contains(s, `" b"`) || strings.Contains(s, `" c"`) {
				t.Fatalf("wrong cut point:\n%s", s)
			}
		})
	}
}

func TestOmitStopReasonEndsWithoutTerminator(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ path, body, terminator string }{
		{"/v1/chat/completions", strings.Replace(chatBody, "%s", `,"stream":true`, 1), "[DONE]"},
		{"/v1/messages", strings.Replace(anthropicBody, "%s", `,"stream":true`, 1), "message_stop"},
		{"/v1/responses", strings.Replace(responsesBody, "%s", `,"stream":true`, 1), "response.completed"},
	} {
		t.Run(tc.path, func(t *testing.T) {
			t.Parallel()
			p := New()
			p.Script(Reply{OmitStopReason: true}, Reply{})
			srv := httptest.NewServer(p)
			defer srv.Close()
			resp, cut := post(t, srv.URL+tc.path, tc.body, map[string]string{"Authorization": "Bearer k", "anthropic-version": "2023-06-01"})
			_, full := post(t, srv.URL+tc.path, tc.body, map[string]string{"Authorization": "Bearer k", "anthropic-version": "2023-06-01"})
			if resp.StatusCode != 200 || strings.Contains(string(cut), tc.terminator) || !strings.Contains(string(full), tc.terminator) {
				t.Fatalf("terminator %q: omitted stream %d bytes, full %d bytes", tc.terminator, len(cut), len(full))
			}
			for _, bad := range []string{`"finish_reason":"stop"`, `"stop_reason":"end_turn"`} {
				if strings.Contains(string(cut), bad) {
					t.Fatalf("omitted stream still carries %s", bad)
				}
			}
		})
	}
}

func TestInvalidToolArgumentsAreReported(t *testing.T) {
	t.Parallel()
	p := New()
	p.Script(Reply{ToolCalls: []ToolCall{{Name: "f", Arguments: "not json"}}})
	srv := httptest.NewServer(p)
	defer srv.Close()
	resp, b := post(t, srv.URL+"/v1/messages", strings.Replace(anthropicBody, "%s", "", 1), anthropicAuth)
	if resp.StatusCode != 500 || !strings.Contains(string(b), "not a JSON object") {
		t.Fatalf("%d %s", resp.StatusCode, b)
	}
}

func TestConcurrentRequests(t *testing.T) {
	t.Parallel()
	p := New()
	srv := httptest.NewServer(p)
	defer srv.Close()
	const n = 16
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := range n {
		wg.Go(func() {
			body := fmt.Sprintf(`{"model":"m","stream":true,"messages":[{"role":"user","content":"q%d"}]}`, i)
			req, _ := http.NewRequest(http.MethodPost, srv.URL+"/v1/chat/completions", strings.NewReader(body))
			req.Header.Set("Authorization", "Bearer k")
			resp, err := srv.Client().Do(req)
			if err != nil {
				errs <- err
				return
			}
			defer resp.Body.Close()
			b, _ := io.ReadAll(resp.Body)
			if !strings.Contains(string(b), fmt.Sprintf(`" q%d"`, i)) || !strings.HasSuffix(string(b), "data: [DONE]\n\n") {
				errs <- fmt.Errorf("request %d got %s", i, b)
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if got := len(p.Requests()); got != n {
		t.Fatalf("%d requests recorded, want %d", got, n)
	}
}

// TestSentTimes: a streamed reply's record holds the id its events carry
// and, for each event in order, when the provider began to write it, which
// no event reached the client before; the id finds them, until a Reset.
func TestSentTimes(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, path, body string
		header           map[string]string
		idOf             func(first sse.Event) string
	}{
		{"chat", "/v1/chat/completions", chatBody, openaiAuth, func(ev sse.Event) string {
			var c struct{ ID string }
			_ = json.Unmarshal(ev.Data, &c)
			return c.ID
		}},
		{"messages", "/v1/messages", anthropicBody, anthropicAuth, func(ev sse.Event) string {
			var m struct{ Message struct{ ID string } }
			_ = json.Unmarshal(ev.Data, &m)
			return m.Message.ID
		}},
		{"responses", "/v1/responses", responsesBody, openaiAuth, func(ev sse.Event) string {
			var r struct{ Response struct{ ID string } }
			_ = json.Unmarshal(ev.Data, &r)
			return r.Response.ID
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			p := New()
			p.SetDefault(func(Recorded) Reply { return Reply{Text: "one two three four", ChunkDelay: time.Millisecond} })
			srv := httptest.NewServer(p)
			defer srv.Close()
			resp := send(t, http.MethodPost, srv.URL+tt.path, strings.Replace(tt.body, "%s", `,"stream":true`, 1), tt.header)
			defer resp.Body.Close()
			// Each event's arrival, as a client reads them one by one.
			var evs []sse.Event
			var arrived []time.Time
			parser, buf := sse.NewParser(), make([]byte, 4096)
			for {
				n, err := resp.Body.Read(buf)
				now := time.Now()
				for _, ev := range parser.Push(buf[:n]) {
					evs, arrived = append(evs, ev), append(arrived, now)
				}
				if err != nil {
					break
				}
			}
			id := tt.idOf(evs[0])
			sent := p.SentTimes(id)
			if id == "" || len(sent) != len(evs) || len(evs) < 5 {
				t.Fatalf("reply %q: %d send times for %d events", id, len(sent), len(evs))
			}
			for k := range sent {
				if k > 0 && !sent[k].After(sent[k-1]) {
					t.Errorf("event %d noted at %v, not after event %d's %v", k, sent[k], k-1, sent[k-1])
				}
				if arrived[k].Before(sent[k]) {
					t.Errorf("event %d arrived %v before it was noted as sent", k, sent[k].Sub(arrived[k]))
				}
			}
			if recs := p.Requests(); len(recs) != 1 || recs[0].ReplyID != id || !slices.Equal(recs[0].Sent, sent) {
				t.Errorf("the record does not hold the reply's id and send times: %q, %d", recs[0].ReplyID, len(recs[0].Sent))
			}
			p.Reset()
			if p.SentTimes(id) != nil {
				t.Error("send times outlived a Reset")
			}
		})
	}
}
