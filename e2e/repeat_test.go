package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"
	ooption "github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/responses"

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
			if n := questionsOnceAnswered(t, s, 1); n != 1 {
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
	if n := questionsOnceAnswered(t, s, len(said)); n != int64(len(said)) {
		t.Fatalf("%d questions stored of %d said", n, len(said))
	}
	// A repeat waited for the reply before it, so its frame quotes it.
	reqs := s.Fake.Requests()
	for i := 1; i < len(said); i++ {
		if said[i] == said[i-1] && !strings.Contains(string(reqs[i].Body), fmt.Sprintf("Step %d done.", i)) {
			t.Fatalf("turn %d's frame lacks the reply it repeats after: %s", i+1, reqs[i].Body)
		}
	}
	// One more turn: its frame quotes every earlier step's reply, in order.
	s.Fake.Script(fakeprovider.Reply{Text: "All done."})
	if _, err := c.Chat.Completions.New(context.Background(), openai.ChatCompletionNewParams{Model: "gpt-4o-mini",
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("what did we do?")}}); err != nil {
		t.Fatal(err)
	}
	reqs = s.Fake.Requests()
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

// questionsOnceAnswered is how many questions the tenant has stored, read
// once its replies are (they are captured after their response).
func questionsOnceAnswered(t *testing.T, s *server, replies int) int64 {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); s.scalar(`SELECT count(*) FROM messages WHERE tenant_id = $1 AND role = 'assistant'`, s.TenantID) != int64(replies); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %d replies", replies)
		}
	}
	return s.scalar(`SELECT count(*) FROM messages WHERE tenant_id = $1 AND role = 'user'`, s.TenantID)
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
	if n := questionsOnceAnswered(t, s, 2); n != 1 {
		t.Fatalf("the question asked twice while unanswered stored %d times", n)
	}
}

// TestResponsesConversationRepeat: a Responses client on a conversation
// the provider stores sends only new items. Its question, the tool's
// output in the next request and the reply to that are stored in the
// order said, and "continue" said again once answered is a turn of its
// own.
func TestResponsesConversationRepeat(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	c := openai.NewClient(ooption.WithBaseURL(s.OpenAIBase()), ooption.WithAPIKey("sk-proj-e2e"), ooption.WithMaxRetries(0))
	conv := responses.ResponseNewParamsConversationUnion{OfString: openai.String("conv_e2e")}
	tools := []responses.ToolUnionParam{responses.ToolParamOfFunction("run_tests",
		map[string]any{"type": "object", "properties": map[string]any{}, "additionalProperties": false}, true)}
	ask := func(in responses.ResponseNewParamsInputUnion) *responses.Response {
		t.Helper()
		r, err := c.Responses.New(context.Background(), responses.ResponseNewParams{Model: "gpt-4.1", Conversation: conv, Tools: tools, Input: in})
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	continueTurn := func(i int) {
		t.Helper()
		s.Fake.Script(fakeprovider.Reply{ToolCalls: []fakeprovider.ToolCall{{ID: fmt.Sprintf("call_%d", i), Name: "run_tests", Arguments: `{}`}}},
			fakeprovider.Reply{Text: fmt.Sprintf("Round %d: the tests pass.", i)})
		r := ask(responses.ResponseNewParamsInputUnion{OfString: openai.String("continue")})
		var call responses.ResponseFunctionToolCall
		for _, item := range r.Output {
			if item.Type == "function_call" {
				call = item.AsFunctionCall()
			}
		}
		if call.CallID == "" {
			t.Fatalf("no function call: %s", r.RawJSON())
		}
		r = ask(responses.ResponseNewParamsInputUnion{OfInputItemList: responses.ResponseInputParam{
			{OfFunctionCallOutput: &responses.ResponseInputItemFunctionCallOutputParam{
				CallID: openai.String(call.CallID), Output: responses.ResponseInputItemFunctionCallOutputOutputUnionParam{OfString: openai.String("ok")}}}}})
		if want := fmt.Sprintf("Round %d: the tests pass.", i); r.OutputText() != want {
			t.Fatalf("round %d answered %s", i, r.RawJSON())
		}
		s.waitStored(2 * i)
	}
	continueTurn(1)
	continueTurn(2)
	var got []string
	for _, m := range s.waitStored(4) {
		got = append(got, m.Role+": "+m.Text)
	}
	want := []string{"user: continue", "assistant: Round 1: the tests pass.", "user: continue", "assistant: Round 2: the tests pass."}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("stored:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if n := s.scalar(`SELECT count(DISTINCT position) FROM messages WHERE tenant_id = $1`, s.TenantID); n != 4 {
		t.Fatalf("4 messages stored at %d positions", n)
	}
}
