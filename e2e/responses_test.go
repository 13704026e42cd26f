package e2e

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3"
	ooption "github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/responses"

	"github.com/perpetuity/perpetuity/e2e/fakeprovider"
)

// responsesWire is the part of a Responses request body the tests read.
type responsesWire struct {
	Model        string `json:"model"`
	Instructions string `json:"instructions"`
	Input        []struct {
		Type    string          `json:"type"`
		Role    string          `json:"role"`
		Content json.RawMessage `json:"content"`
		CallID  string          `json:"call_id"`
		Output  string          `json:"output"`
	} `json:"input"`
}

// responsesTurn asks through client.Responses, streaming or not, and
// returns the output items' text and function calls.
func responsesTurn(t *testing.T, c openai.Client, stream bool, p responses.ResponseNewParams) responses.Response {
	t.Helper()
	if !stream {
		r, err := c.Responses.New(context.Background(), p)
		if err != nil {
			t.Fatalf("responses: %v", err)
		}
		return *r
	}
	st := c.Responses.NewStreaming(context.Background(), p)
	var text strings.Builder
	var done responses.Response
	for st.Next() {
		ev := st.Current()
		switch ev.Type {
		case "response.output_text.delta":
			text.WriteString(ev.AsResponseOutputTextDelta().Delta)
		case "response.completed":
			done = ev.AsResponseCompleted().Response
		case "error":
			t.Fatalf("error event %s", ev.RawJSON())
		}
	}
	if err := st.Err(); err != nil {
		t.Fatalf("responses stream: %v", err)
	}
	if done.OutputText() != text.String() {
		t.Fatalf("deltas %q, completed output %q", text.String(), done.OutputText())
	}
	return done
}

// TestResponsesAPI: a harness on the OpenAI Responses API gets memory and
// a round trip of its own tool, call ids intact, streaming and not.
func TestResponsesAPI(t *testing.T) {
	t.Parallel()
	for _, stream := range []bool{false, true} {
		name := map[bool]string{false: "json", true: "stream"}[stream]
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			s := startServer(t)
			c := openai.NewClient(ooption.WithBaseURL(s.OpenAIBase()), ooption.WithAPIKey("sk-proj-e2e"), ooption.WithMaxRetries(0))
			tools := []responses.ToolUnionParam{responses.ToolParamOfFunction("get_weather",
				map[string]any{"type": "object", "properties": map[string]any{"city": map[string]any{"type": "string"}}, "required": []string{"city"}, "additionalProperties": false}, true)}

			// Turn 1: a plain question, remembered.
			s.Fake.Script(fakeprovider.Reply{Text: "Noted: you live in Paris."})
			r := responsesTurn(t, c, stream, responses.ResponseNewParams{Model: "gpt-4.1", Instructions: openai.String("Be brief."),
				Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("I live in Paris.")}})
			if r.OutputText() != "Noted: you live in Paris." || r.Status != "completed" {
				t.Fatalf("turn 1: %s", r.RawJSON())
			}
			s.waitStored(2)

			// Turn 2: the harness resends an altered history; the provider
			// gets the stored one, then a tool call round trip.
			s.Fake.Script(
				fakeprovider.Reply{ToolCalls: []fakeprovider.ToolCall{{ID: "call_E2EResp", Name: "get_weather", Arguments: `{"city":"Paris"}`}}},
				fakeprovider.Reply{Text: weatherAnswer},
			)
			input := responses.ResponseInputParam{
				responses.ResponseInputItemParamOfMessage("I live in Paris.", responses.EasyInputMessageRoleUser),
				responses.ResponseInputItemParamOfMessage("HARNESS COPY THAT WAS NEVER SAID", responses.EasyInputMessageRoleAssistant),
				responses.ResponseInputItemParamOfMessage(weatherQuestion, responses.EasyInputMessageRoleUser),
			}
			p := responses.ResponseNewParams{Model: "gpt-4.1", Instructions: openai.String("Be brief."), Tools: tools,
				Input: responses.ResponseNewParamsInputUnion{OfInputItemList: input}}
			r = responsesTurn(t, c, stream, p)
			var call responses.ResponseFunctionToolCall
			for _, item := range r.Output {
				if item.Type == "function_call" {
					call = item.AsFunctionCall()
				}
			}
			if call.CallID != "call_E2EResp" || call.Name != "get_weather" || call.Arguments != `{"city":"Paris"}` {
				t.Fatalf("function call %s", r.RawJSON())
			}
			p.Input.OfInputItemList = append(input,
				responses.ResponseInputItemParamOfFunctionCall(call.Arguments, call.CallID, call.Name),
				responses.ResponseInputItemUnionParam{OfFunctionCallOutput: &responses.ResponseInputItemFunctionCallOutputParam{
					CallID: openai.String(call.CallID), Output: responses.ResponseInputItemFunctionCallOutputOutputUnionParam{OfString: openai.String(weatherResult)}}},
			)
			if r = responsesTurn(t, c, stream, p); r.OutputText() != weatherAnswer {
				t.Fatalf("final: %s", r.RawJSON())
			}

			reqs := s.Fake.Requests()
			if len(reqs) != 3 {
				t.Fatalf("provider got %d requests", len(reqs))
			}
			for _, rq := range reqs {
				if rq.Dialect != fakeprovider.DialectOpenAIResponses || rq.Header.Get("Authorization") != "Bearer sk-proj-e2e" || rq.Stream != stream {
					t.Fatalf("provider request %s headers %v", rq.Path, rq.Header)
				}
			}
			last := string(reqs[2].Body)
			if strings.Contains(last, "HARNESS COPY") || !strings.Contains(last, "Noted: you live in Paris.") {
				t.Fatalf("provider did not get the stored history: %s", last)
			}
			var sent responsesWire
			if err := json.Unmarshal(reqs[2].Body, &sent); err != nil {
				t.Fatal(err)
			}
			n := len(sent.Input)
			if sent.Instructions != "Be brief." || n < 3 || sent.Input[n-2].Type != "function_call" || sent.Input[n-2].CallID != "call_E2EResp" ||
				sent.Input[n-1].Type != "function_call_output" || sent.Input[n-1].CallID != "call_E2EResp" || sent.Input[n-1].Output != weatherResult ||
				!strings.Contains(string(sent.Input[n-3].Content), weatherQuestion) {
				t.Fatalf("tool exchange not native after the live question: %s", last)
			}
			msgs := s.waitStored(4)
			if len(msgs) != 4 || msgs[2].Text != weatherQuestion || msgs[3].Text != weatherAnswer || msgs[3].Interrupted {
				t.Fatalf("stored %+v", msgs)
			}
		})
	}
}

// TestResponsesAPIErrors: a claude-* model is refused in the OpenAI dialect;
// a provider error keeps its status; a failed stream ends in an error the
// SDK raises.
func TestResponsesAPIErrors(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	c := openai.NewClient(ooption.WithBaseURL(s.OpenAIBase()), ooption.WithAPIKey("sk-ant-api03-e2e"), ooption.WithMaxRetries(0))
	_, err := c.Responses.New(context.Background(), responses.ResponseNewParams{Model: "claude-sonnet-4-5",
		Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("hi")}})
	var oe *openai.Error
	if !errors.As(err, &oe) || oe.StatusCode != http.StatusBadRequest || !strings.Contains(oe.Message, "/v1/messages") {
		t.Fatalf("claude via responses: %v", err)
	}
	if len(s.Fake.Requests()) != 0 || len(s.stored()) != 0 {
		t.Fatal("refused request reached the provider or was stored")
	}

	c = openai.NewClient(ooption.WithBaseURL(s.OpenAIBase()), ooption.WithAPIKey("sk-proj-e2e"), ooption.WithMaxRetries(0))
	s.Fake.Script(fakeprovider.Reply{Status: http.StatusServiceUnavailable})
	_, err = c.Responses.New(context.Background(), responses.ResponseNewParams{Model: "gpt-4.1",
		Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("are you there?")}})
	if !errors.As(err, &oe) || oe.StatusCode != http.StatusServiceUnavailable {
		t.Fatalf("provider 503: %v", err)
	}

	s.Fake.Script(fakeprovider.Reply{Text: "one two three four", OmitStopReason: true})
	st := c.Responses.NewStreaming(context.Background(), responses.ResponseNewParams{Model: "gpt-4.1",
		Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("tell me more")}})
	for st.Next() {
		if st.Current().Type == "response.completed" {
			t.Fatal("a stream without its end completed")
		}
	}
	if st.Err() == nil || !strings.Contains(st.Err().Error(), "terminator") {
		t.Fatalf("stream error %v", st.Err())
	}
	msgs := s.waitStored(3)
	if len(msgs) != 3 || msgs[2].Role != "assistant" || !msgs[2].Interrupted || !strings.HasPrefix("one two three four", msgs[2].Text) {
		t.Fatalf("stored %+v", msgs)
	}
}
