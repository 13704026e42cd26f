package e2e

import (
	"bufio"
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/anthropics/anthropic-sdk-go/v2"
	aoption "github.com/anthropics/anthropic-sdk-go/v2/option"
	"github.com/openai/openai-go/v3"
	ooption "github.com/openai/openai-go/v3/option"

	"github.com/perpetuity/perpetuity/e2e/fakeprovider"
)

// TestClientDisconnectMidStream: a client that hangs up mid-stream leaves
// the incoming turn stored and the partial reply stored and flagged, and the
// upstream call is cancelled.
func TestClientDisconnectMidStream(t *testing.T) {
	t.Parallel()
	for _, d := range []struct{ name, path, body string }{
		{"openai", "/chat/completions", `{"model":"gpt-4o","stream":true,"messages":[{"role":"user","content":"tell me a long story"}]}`},
		{"anthropic", "/messages", `{"model":"claude-sonnet-4-5","max_tokens":100,"stream":true,"messages":[{"role":"user","content":"tell me a long story"}]}`},
	} {
		t.Run(d.name, func(t *testing.T) {
			t.Parallel()
			s := startServer(t)
			words := strings.Repeat("once upon a time ", 40)
			s.Fake.Script(fakeprovider.Reply{Text: words, ChunkDelay: 20 * time.Millisecond})
			ctx, cancel := context.WithCancel(context.Background())
			req, _ := http.NewRequestWithContext(ctx, http.MethodPost, s.OpenAIBase()+d.path, strings.NewReader(d.body))
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Authorization", "Bearer sk-test")
			req.Header.Set("x-api-key", "sk-ant-test")
			req.Header.Set("anthropic-version", "2023-06-01")
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			if resp.StatusCode != http.StatusOK {
				b, _ := io.ReadAll(resp.Body)
				t.Fatalf("status %d: %s", resp.StatusCode, b)
			}
			// Read a few events, then hang up.
			br := bufio.NewReader(resp.Body)
			for i := 0; i < 12; i++ {
				if _, err := br.ReadString('\n'); err != nil {
					t.Fatal(err)
				}
			}
			cancel()
			resp.Body.Close()

			msgs := s.waitStored(2)
			if len(msgs) != 2 || msgs[0].Text != "tell me a long story" || msgs[0].Interrupted {
				t.Fatalf("incoming turn not stored intact: %+v", msgs)
			}
			if !msgs[1].Interrupted || msgs[1].Text == "" || !strings.HasPrefix(words, msgs[1].Text) || msgs[1].Text == words {
				t.Fatalf("partial reply not stored flagged: %+v", msgs[1])
			}
			wctx, wcancel := context.WithTimeout(context.Background(), time.Second)
			defer wcancel()
			if err := s.Fake.WaitClosed(wctx, 1); err != nil {
				t.Fatalf("upstream call not cancelled within 1s: %v", err)
			}
		})
	}
}

// TestUpstreamFaults: a broken provider stream is an explicit error in the
// caller's dialect, never a clean-looking end, and the stored reply is flagged.
func TestUpstreamFaults(t *testing.T) {
	t.Parallel()
	faults := []struct {
		name  string
		reply fakeprovider.Reply
	}{
		{"early-close", fakeprovider.Reply{Text: "a b c d e f g h", FailAfter: 3}},
		{"in-band-error", fakeprovider.Reply{Text: "a b c d e f g h", InBandErrorAfter: 3}},
		{"missing-stop", fakeprovider.Reply{Text: "a b c d e f g h", OmitStopReason: true}},
	}
	for _, f := range faults {
		t.Run(f.name, func(t *testing.T) {
			t.Parallel()
			s := startServer(t)
			s.Fake.Script(f.reply, f.reply)

			oc := openai.NewClient(ooption.WithBaseURL(s.OpenAIBase()), ooption.WithAPIKey("sk-x"), ooption.WithMaxRetries(0))
			st := oc.Chat.Completions.NewStreaming(context.Background(), openai.ChatCompletionNewParams{
				Model: "gpt-4o", Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("openai " + f.name)}})
			for st.Next() {
			}
			if st.Err() == nil {
				t.Fatal("openai SDK saw a clean end")
			}

			ac := anthropic.NewClient(aoption.WithBaseURL(s.AnthropicBase()), aoption.WithAPIKey("sk-ant-x"), aoption.WithMaxRetries(0))
			as := ac.Messages.NewStreaming(context.Background(), anthropic.MessageNewParams{Model: "claude-sonnet-4-5", MaxTokens: 50,
				Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("anthropic " + f.name))}})
			m := anthropic.Message{}
			var accErr error
			for as.Next() {
				if err := m.Accumulate(as.Current()); err != nil {
					accErr = err
				}
			}
			if as.Err() == nil && accErr == nil {
				t.Fatal("anthropic SDK saw a clean end")
			}
			msgs := s.waitStored(4)
			var flagged int
			for _, m := range msgs {
				if m.Role == "assistant" && m.Interrupted {
					flagged++
				}
				if m.Role == "assistant" && !m.Interrupted {
					t.Fatalf("a broken reply was stored as complete: %+v", m)
				}
			}
			if flagged != 2 {
				t.Fatalf("want 2 flagged partial replies, got %+v", msgs)
			}
		})
	}
}

// TestUpstreamErrorStatus: provider error statuses reach the caller with
// the provider's own error body and status.
func TestUpstreamErrorStatus(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	for _, status := range []int{429, 500, 529} {
		s.Fake.Script(fakeprovider.Reply{Status: status})
		req, _ := http.NewRequest(http.MethodPost, s.AnthropicBase()+"/v1/messages",
			strings.NewReader(`{"model":"claude-sonnet-4-5","max_tokens":5,"messages":[{"role":"user","content":"hi `+http.StatusText(status)+`"}]}`))
		req.Header.Set("x-api-key", "sk-ant-x")
		req.Header.Set("anthropic-version", "2023-06-01")
		resp, err := httpClient().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != status || !strings.Contains(string(b), `"type":"error"`) {
			t.Fatalf("status %d: got %d %s", status, resp.StatusCode, b)
		}
		if status == 429 && resp.Header.Get("Retry-After") == "" {
			t.Fatal("429 lost its Retry-After")
		}
	}
}

// TestPassthrough: other provider paths reach the provider unchanged.
func TestPassthrough(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	for _, c := range []struct{ method, path, body, auth string }{
		{http.MethodGet, "/v1/models", "", "openai"},
		{http.MethodPost, "/v1/messages/count_tokens", `{"model":"claude-sonnet-4-5","messages":[{"role":"user","content":"count me"}]}`, "anthropic"},
		{http.MethodPost, "/v1/embeddings", `{"model":"text-embedding-3-small","input":"hello"}`, "openai"},
	} {
		req, _ := http.NewRequest(c.method, s.URL+"/k/"+s.Key+c.path, strings.NewReader(c.body))
		if c.auth == "openai" {
			req.Header.Set("Authorization", "Bearer sk-x")
		} else {
			req.Header.Set("x-api-key", "sk-ant-x")
			req.Header.Set("anthropic-version", "2023-06-01")
		}
		resp, err := httpClient().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Fatalf("%s: %d %s", c.path, resp.StatusCode, b)
		}
		reqs := s.Fake.Requests()
		last := reqs[len(reqs)-1]
		if last.Path != c.path || string(last.Body) != c.body {
			t.Fatalf("%s reached the provider as %s %q", c.path, last.Path, last.Body)
		}
	}
	// Without a valid key the proxy is not an open relay.
	resp, err := httpClient().Get(s.URL + "/k/ppk_wrong/v1/models")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("passthrough without a valid key: %d", resp.StatusCode)
	}
}
