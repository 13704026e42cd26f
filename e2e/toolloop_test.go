package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/anthropics/anthropic-sdk-go/v2"
	aoption "github.com/anthropics/anthropic-sdk-go/v2/option"
	"github.com/openai/openai-go/v3"
	ooption "github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/shared"

	"github.com/perpetuity/perpetuity/e2e/fakeprovider"
)

// A coding agent's tool loop: the model says what it will do and calls the
// harness's tool; the harness runs it and sends the question again with the
// model's turn and the tool's result after it. The proxy stored the
// question in round one and the model's words after its reply; in round two
// the frame must still end with the question, and must not quote the
// model's words that follow it in the request anyway.
const (
	loopQuestion = "Why does the parser reject trailing commas? Asked through "
	loopSaid     = "I'll read parser.go first, for "
	loopResult   = "package parser // func parseList: a comma must be followed by a value"
)

var loopTool = fakeprovider.ToolCall{Name: "read_file", Arguments: `{"path":"parser.go"}`}

// loopNote is stored memory the loop's question recalls; a redaction
// between rounds removes it.
const loopNote = "Note for later: the parser's comma rule came from ticket PARSE-4512 about trailing commas."

// TestHarnessToolLoopKeepsTheQuestionLast runs two rounds of a harness's
// own tool through each SDK and reads what the provider got in round two:
// the frame ends with the question and quotes nothing of the loop, and it
// is round one's frame byte for byte though memory grew between the rounds
// (the provider's prompt cache holds past it), unless an erasure came
// between them.
func TestHarnessToolLoopKeepsTheQuestionLast(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	s.Fake.Script(fakeprovider.Reply{Text: "Noted."})
	askAnthropic(t, s, ask{question: loopNote})
	waitReply(t, s, "Noted.")
	for _, tc := range []struct {
		name    string
		round   func(t *testing.T, s *server, question, said string, between func())
		redact  bool // the note is redacted between the rounds
		sameAs1 bool
	}{
		{"anthropic", anthropicToolLoop, false, true},
		{"openai", openAIToolLoop, false, true},
		{"anthropic, the note redacted between the rounds", anthropicToolLoop, true, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s.Fake.Reset()
			// A conversation of its own, and words of its own: the other
			// loops are memory this one may recall.
			question, said := loopQuestion+tc.name, loopSaid+tc.name+"."
			// Between the rounds memory grows by a turn the question would
			// recall (another session of the same user): a frame built
			// afresh would take it in and change before the exchange.
			between := func() {
				s.Fake.Script(fakeprovider.Reply{Text: "Noted too, " + tc.name + "."})
				askAnthropic(t, s, ask{question: "Another parser note on trailing commas, for " + tc.name + ": ticket PARSE-9000."})
				waitReply(t, s, "Noted too, "+tc.name+".")
			}
			if tc.redact {
				between = func() {
					id := s.scalar(`SELECT i.id FROM items i WHERE i.tenant_id = $1 AND i.body LIKE '%PARSE-4512%' AND i.role = 'user' ORDER BY i.id LIMIT 1`, s.TenantID)
					if out, err := runCLI(s.cliEnv(), "redact", "--tenant", strconv.FormatInt(s.TenantID, 10), "--yes", strconv.FormatInt(id, 10)); err != nil {
						t.Fatalf("redact: %v\n%s", err, out)
					}
				}
			}
			tc.round(t, s, question, said, between)
			reqs := s.Fake.Requests()
			if len(reqs) != 2+btoi(!tc.redact) {
				t.Fatalf("%d provider calls", len(reqs))
			}
			first, msgs := providerMessages(t, reqs[0]), providerMessages(t, reqs[len(reqs)-1])
			if !strings.Contains(fmt.Sprint(first), "PARSE-4512") {
				t.Fatalf("round one's frame does not recall the note: %+v", first)
			}
			call := -1
			for i, m := range msgs {
				if m.role == "assistant" && m.calls {
					call = i
				}
			}
			if call < 1 {
				t.Fatalf("no assistant tool call after a turn in round two: %+v", msgs)
			}
			if before := msgs[call-1]; before.role != "user" || !strings.Contains(before.text, question) {
				t.Fatalf("round two's frame does not end with the question: the turn before the model's call is %s %q", before.role, before.text)
			}
			for _, m := range msgs[:call] {
				if strings.Contains(m.text, said) {
					t.Fatalf("the frame quotes the model's turn that follows the question anyway: %s %q", m.role, m.text)
				}
			}
			for i := 1; i < len(msgs); i++ {
				if msgs[i].role == msgs[i-1].role && msgs[i].role != "system" {
					t.Fatalf("two %s turns in a row at %d: %+v", msgs[i].role, i, msgs)
				}
			}
			if !strings.Contains(msgs[len(msgs)-1].text, loopResult) {
				t.Fatalf("the tool's result is not last: %+v", msgs[len(msgs)-1])
			}
			same := len(first) == call
			for i := 0; same && i < call; i++ {
				same = string(first[i].raw) == string(msgs[i].raw)
			}
			switch {
			case tc.sameAs1 && !same:
				t.Fatalf("round two's frame is not round one's:\n%+v\n%+v", first, msgs[:call])
			case tc.redact && strings.Contains(fmt.Sprint(msgs), "PARSE-4512"):
				t.Fatalf("round two quotes the note redacted before it: %+v", msgs)
			}
		})
	}
}

func anthropicToolLoop(t *testing.T, s *server, question, said string, between func()) {
	c := anthropic.NewClient(aoption.WithBaseURL(s.AnthropicBase()), aoption.WithAPIKey("sk-ant-e2e"), aoption.WithMaxRetries(0))
	p := anthropic.MessageNewParams{Model: "claude-sonnet-4-5", MaxTokens: 512,
		Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock(question))},
		Tools: []anthropic.ToolUnionParam{anthropic.ToolUnionParamOfTool(anthropic.ToolInputSchemaParam{
			Properties: map[string]any{"path": map[string]any{"type": "string"}}}, loopTool.Name)}}
	s.Fake.Script(fakeprovider.Reply{Text: said, ToolCalls: []fakeprovider.ToolCall{loopTool}})
	r, err := c.Messages.New(context.Background(), p)
	if err != nil {
		t.Fatalf("round one: %v", err)
	}
	var id string
	for _, b := range r.Content {
		if b.Type == "tool_use" {
			id = b.ID
		}
	}
	if id == "" || textOf(r) != said {
		t.Fatalf("round one heard %+v", r.Content)
	}
	waitReply(t, s, said) // the harness runs the tool meanwhile
	between()
	s.Fake.Script(fakeprovider.Reply{Text: "A comma must be followed by a value."})
	p.Messages = append(p.Messages, r.ToParam(), anthropic.NewUserMessage(anthropic.NewToolResultBlock(id, loopResult, false)))
	if _, err := c.Messages.New(context.Background(), p); err != nil {
		t.Fatalf("round two: %v", err)
	}
}

func openAIToolLoop(t *testing.T, s *server, question, said string, between func()) {
	c := openai.NewClient(ooption.WithBaseURL(s.OpenAIBase()), ooption.WithAPIKey("sk-proj-e2e"), ooption.WithMaxRetries(0))
	p := openai.ChatCompletionNewParams{Model: "gpt-4o-mini", Messages: []openai.ChatCompletionMessageParamUnion{
		openai.SystemMessage("You are a coding agent."), openai.UserMessage(question)},
		Tools: []openai.ChatCompletionToolUnionParam{openai.ChatCompletionFunctionTool(shared.FunctionDefinitionParam{
			Name: loopTool.Name, Parameters: shared.FunctionParameters{"type": "object", "properties": map[string]any{"path": map[string]any{"type": "string"}}},
		})}}
	s.Fake.Script(fakeprovider.Reply{Text: said, ToolCalls: []fakeprovider.ToolCall{loopTool}})
	r, err := c.Chat.Completions.New(context.Background(), p)
	if err != nil {
		t.Fatalf("round one: %v", err)
	}
	msg := r.Choices[0].Message
	if len(msg.ToolCalls) != 1 || msg.Content != said {
		t.Fatalf("round one heard %+v", msg)
	}
	waitReply(t, s, said)
	between()
	s.Fake.Script(fakeprovider.Reply{Text: "A comma must be followed by a value."})
	p.Messages = append(p.Messages, msg.ToParam(), openai.ToolMessage(loopResult, msg.ToolCalls[0].ID))
	if _, err := c.Chat.Completions.New(context.Background(), p); err != nil {
		t.Fatalf("round two: %v", err)
	}
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// sentMessage is a message of a provider request, its text flattened.
type sentMessage struct {
	role  string
	text  string
	calls bool // an assistant turn calling tools
	raw   string
}

// providerMessages reads a provider request's messages in either dialect;
// a tool result counts as the user's turn (Anthropic's shape).
func providerMessages(t *testing.T, r fakeprovider.Recorded) []sentMessage {
	t.Helper()
	var req struct {
		Messages []json.RawMessage `json:"messages"`
	}
	if err := json.Unmarshal(r.Body, &req); err != nil {
		t.Fatal(err)
	}
	var out []sentMessage
	for _, raw := range req.Messages {
		var m struct {
			Role      string          `json:"role"`
			Content   json.RawMessage `json:"content"`
			ToolCalls []any           `json:"tool_calls"`
			Raw       json.RawMessage `json:"-"`
		}
		if err := json.Unmarshal(raw, &m); err != nil {
			t.Fatal(err)
		}
		m.Raw = raw
		sm := sentMessage{role: m.Role, calls: len(m.ToolCalls) > 0, raw: string(m.Raw)}
		if sm.role == "tool" {
			sm.role = "user"
		}
		var s string
		if json.Unmarshal(m.Content, &s) == nil {
			sm.text = s
		} else {
			var blocks []struct {
				Type    string          `json:"type"`
				Text    string          `json:"text"`
				Content json.RawMessage `json:"content"`
			}
			_ = json.Unmarshal(m.Content, &blocks)
			for _, b := range blocks {
				switch b.Type {
				case "text":
					sm.text += b.Text
				case "tool_use":
					sm.calls = true
				case "tool_result": // its content a string or text blocks
					var c string
					if json.Unmarshal(b.Content, &c) != nil {
						var parts []struct {
							Text string `json:"text"`
						}
						_ = json.Unmarshal(b.Content, &parts)
						for _, p := range parts {
							c += p.Text
						}
					}
					sm.text += c
				}
			}
		}
		out = append(out, sm)
	}
	return out
}
