package e2e

import (
	"context"
	"encoding/json"
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

// TestHarnessToolLoopKeepsTheQuestionLast runs two rounds of a harness's
// own tool through each SDK and reads what the provider got in round two.
func TestHarnessToolLoopKeepsTheQuestionLast(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	for _, tc := range []struct {
		name  string
		round func(t *testing.T, s *server, question, said string)
	}{
		{"anthropic", anthropicToolLoop},
		{"openai", openAIToolLoop},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s.Fake.Reset()
			// A conversation of its own, and words of its own: the other
			// SDK's loop is memory this one may recall.
			question, said := loopQuestion+tc.name, loopSaid+tc.name+"."
			tc.round(t, s, question, said)
			reqs := s.Fake.Requests()
			if len(reqs) != 2 {
				t.Fatalf("%d provider calls", len(reqs))
			}
			msgs := providerMessages(t, reqs[1])
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
		})
	}
}

func anthropicToolLoop(t *testing.T, s *server, question, said string) {
	c := anthropic.NewClient(aoption.WithBaseURL(s.AnthropicBase()), aoption.WithAPIKey("sk-ant-e2e"), aoption.WithMaxRetries(0))
	p := anthropic.MessageNewParams{Model: "claude-sonnet-4-5", MaxTokens: 512,
		Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock(question))},
		Tools: []anthropic.ToolUnionParam{anthropic.ToolUnionParamOfTool(anthropic.ToolInputSchemaParam{
			Properties: map[string]any{"path": map[string]any{"type": "string"}}}, loopTool.Name)}}
	s.Fake.Script(fakeprovider.Reply{Text: said, ToolCalls: []fakeprovider.ToolCall{loopTool}},
		fakeprovider.Reply{Text: "A comma must be followed by a value."})
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
	p.Messages = append(p.Messages, r.ToParam(), anthropic.NewUserMessage(anthropic.NewToolResultBlock(id, loopResult, false)))
	if _, err := c.Messages.New(context.Background(), p); err != nil {
		t.Fatalf("round two: %v", err)
	}
}

func openAIToolLoop(t *testing.T, s *server, question, said string) {
	c := openai.NewClient(ooption.WithBaseURL(s.OpenAIBase()), ooption.WithAPIKey("sk-proj-e2e"), ooption.WithMaxRetries(0))
	p := openai.ChatCompletionNewParams{Model: "gpt-4o-mini", Messages: []openai.ChatCompletionMessageParamUnion{
		openai.SystemMessage("You are a coding agent."), openai.UserMessage(question)},
		Tools: []openai.ChatCompletionToolUnionParam{openai.ChatCompletionFunctionTool(shared.FunctionDefinitionParam{
			Name: loopTool.Name, Parameters: shared.FunctionParameters{"type": "object", "properties": map[string]any{"path": map[string]any{"type": "string"}}},
		})}}
	s.Fake.Script(fakeprovider.Reply{Text: said, ToolCalls: []fakeprovider.ToolCall{loopTool}},
		fakeprovider.Reply{Text: "A comma must be followed by a value."})
	r, err := c.Chat.Completions.New(context.Background(), p)
	if err != nil {
		t.Fatalf("round one: %v", err)
	}
	msg := r.Choices[0].Message
	if len(msg.ToolCalls) != 1 || msg.Content != said {
		t.Fatalf("round one heard %+v", msg)
	}
	waitReply(t, s, said)
	p.Messages = append(p.Messages, msg.ToParam(), openai.ToolMessage(loopResult, msg.ToolCalls[0].ID))
	if _, err := c.Chat.Completions.New(context.Background(), p); err != nil {
		t.Fatalf("round two: %v", err)
	}
}

// sentMessage is a message of a provider request, its text flattened.
type sentMessage struct {
	role  string
	text  string
	calls bool // an assistant turn calling tools
}

// providerMessages reads a provider request's messages in either dialect;
// a tool result counts as the user's turn (Anthropic's shape).
func providerMessages(t *testing.T, r fakeprovider.Recorded) []sentMessage {
	t.Helper()
	var req struct {
		Messages []struct {
			Role      string          `json:"role"`
			Content   json.RawMessage `json:"content"`
			ToolCalls []any           `json:"tool_calls"`
		} `json:"messages"`
	}
	if err := json.Unmarshal(r.Body, &req); err != nil {
		t.Fatal(err)
	}
	var out []sentMessage
	for _, m := range req.Messages {
		sm := sentMessage{role: m.Role, calls: len(m.ToolCalls) > 0}
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
