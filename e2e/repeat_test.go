package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"
	ooption "github.com/openai/openai-go/v3/option"

	"github.com/perpetuity/perpetuity/e2e/fakeprovider"
	"github.com/perpetuity/perpetuity/proxy"
)

// TestRetryStoresOnce: the SDK sends a request again when the provider
// failed it; the question is stored once, and the reply that came back.
func TestRetryStoresOnce(t *testing.T) {
	t.Parallel()
	for _, history := range []bool{true, false} {
		t.Run(fmt.Sprintf("history %v", history), func(t *testing.T) {
			t.Parallel()
			s := startServer(t)
			s.Fake.Script(fakeprovider.Reply{Status: 500}, fakeprovider.Reply{Text: "7141 noted."})
			opts := []ooption.RequestOption{ooption.WithBaseURL(s.OpenAIBase()), ooption.WithAPIKey("sk-test-openai"), ooption.WithMaxRetries(1)}
			msgs := []openai.ChatCompletionMessageParamUnion{openai.UserMessage("remember the number 7141")}
			if history {
				msgs = append([]openai.ChatCompletionMessageParamUnion{openai.UserMessage("hello"), openai.AssistantMessage("Hi.")}, msgs...)
			} else {
				opts = append(opts, ooption.WithHeader(proxy.HeaderConversation, "retry"))
			}
			c := openai.NewClient(opts...)
			r, err := c.Chat.Completions.New(context.Background(), openai.ChatCompletionNewParams{Model: "gpt-4o-mini", Messages: msgs})
			if err != nil || r.Choices[0].Message.Content != "7141 noted." {
				t.Fatalf("retried request: %v %+v", err, r)
			}
			if n := len(s.Fake.Requests()); n != 2 {
				t.Fatalf("provider saw %d requests, want the failed one and its retry", n)
			}
			waitFor(t, func() bool {
				return s.scalar(`SELECT count(*) FROM messages WHERE tenant_id = $1 AND role = 'assistant'`, s.TenantID) == 1
			})
			if n := s.scalar(`SELECT count(*) FROM messages WHERE tenant_id = $1 AND role = 'user'`, s.TenantID); n != 1 {
				t.Fatalf("retried question stored %d times", n)
			}
		})
	}
}

// TestRepeatStoresAgain: a client that sends only its newest message,
// naming its conversation, says the same thing twice; each was answered,
// so each is a turn, and the frame quotes both in the order said. A quick
// client's repeat reaches the proxy while the first reply's capture may
// still run: it waits for it rather than being taken for a retry.
func TestRepeatStoresAgain(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	c := openai.NewClient(ooption.WithBaseURL(s.OpenAIBase()), ooption.WithAPIKey("sk-test-openai"), ooption.WithMaxRetries(0),
		ooption.WithHeader(proxy.HeaderConversation, "deploy-chat"))
	said := []string{"continue", "continue", "continue", "stop at the migration step", "continue"}
	for i, q := range said {
		s.Fake.Script(fakeprovider.Reply{Text: fmt.Sprintf("Step %d done.", i+1)})
		r, err := c.Chat.Completions.New(context.Background(), openai.ChatCompletionNewParams{Model: "gpt-4o-mini",
			Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage(q)}})
		if err != nil {
			t.Fatalf("turn %d: %v", i+1, err)
		}
		if got := r.Choices[0].Message.Content; got != fmt.Sprintf("Step %d done.", i+1) {
			t.Fatalf("turn %d answered %q", i+1, got)
		}
	}
	waitFor(t, func() bool {
		return s.scalar(`SELECT count(*) FROM messages WHERE tenant_id = $1 AND role = 'assistant'`, s.TenantID) == int64(len(said))
	})
	if n := s.scalar(`SELECT count(*) FROM messages WHERE tenant_id = $1 AND role = 'user'`, s.TenantID); n != int64(len(said)) {
		t.Fatalf("%d questions stored of %d said", n, len(said))
	}
	// One more turn: its frame quotes every earlier step's reply, in order.
	s.Fake.Script(fakeprovider.Reply{Text: "All done."})
	if _, err := c.Chat.Completions.New(context.Background(), openai.ChatCompletionNewParams{Model: "gpt-4o-mini",
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("what did we do?")}}); err != nil {
		t.Fatal(err)
	}
	reqs := s.Fake.Requests()
	last := string(reqs[len(reqs)-1].Body)
	at := -1
	for i := range said {
		j := strings.Index(last, fmt.Sprintf("Step %d done.", i+1))
		if j <= at {
			t.Fatalf("the frame quotes step %d at %d, after %d: %s", i+1, j, at, last)
		}
		at = j
	}
}

// waitFor polls cond for up to ten seconds: replies are captured after
// their response.
func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); !cond(); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("timed out waiting")
		}
	}
}

// TestRepeatWhileAnswering: the same question sent again while the first
// asking is still being answered is a retry (a client does not repeat
// what it has no answer to; Claude Code's side requests quote its prompt
// too): stored once, and not held until the first reply ends.
func TestRepeatWhileAnswering(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	s.Fake.Script(fakeprovider.Reply{Text: "Slow answer.", FirstByteDelay: 3 * time.Second}, fakeprovider.Reply{Text: "Quick answer."})
	c := openai.NewClient(ooption.WithBaseURL(s.OpenAIBase()), ooption.WithAPIKey("sk-test-openai"), ooption.WithMaxRetries(0),
		ooption.WithHeader(proxy.HeaderConversation, "side"))
	ask := func() (string, error) {
		r, err := c.Chat.Completions.New(context.Background(), openai.ChatCompletionNewParams{Model: "gpt-4o-mini",
			Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("summarise the failing tests")}})
		if err != nil {
			return "", err
		}
		return r.Choices[0].Message.Content, nil
	}
	first := make(chan string, 1)
	go func() {
		got, err := ask()
		if err != nil {
			got = err.Error()
		}
		first <- got
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := s.Fake.WaitRequests(ctx, 1); err != nil {
		t.Fatal(err)
	}
	if got, err := ask(); err != nil || got != "Quick answer." {
		t.Fatalf("the repeat: %q %v", got, err)
	}
	select {
	case got := <-first:
		t.Fatalf("the repeat came back after the first asking (%q): it waited for it", got)
	default:
	}
	if got := <-first; got != "Slow answer." {
		t.Fatalf("the first asking: %q", got)
	}
	waitFor(t, func() bool {
		return s.scalar(`SELECT count(*) FROM messages WHERE tenant_id = $1 AND role = 'assistant'`, s.TenantID) == 2
	})
	if n := s.scalar(`SELECT count(*) FROM messages WHERE tenant_id = $1 AND role = 'user'`, s.TenantID); n != 1 {
		t.Fatalf("the question asked twice while unanswered stored %d times", n)
	}
}
