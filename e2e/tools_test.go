package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/anthropics/anthropic-sdk-go/v2"
	aoption "github.com/anthropics/anthropic-sdk-go/v2/option"
	"github.com/openai/openai-go/v3"
	ooption "github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/shared"

	"github.com/perpetuity/perpetuity/e2e/fakeprovider"
	"github.com/perpetuity/perpetuity/memory"
)

// ask is one question through an official SDK, as a harness would send it.
type ask struct {
	question string
	stream   bool
	headers  map[string]string
	weather  bool   // offer the harness's own get_weather tool
	model    string // empty: the SDK's usual model
}

// heard is what the SDK handed the harness.
type heard struct {
	text   string
	calls  []string // tool calls, by name
	stop   string   // "answer" or "tool"
	in     int64
	out    int64
	header http.Header
}

// sdk asks through one SDK.
type sdk struct {
	name string
	ask  func(t *testing.T, s *server, a ask) heard
}

var toolSDKs = []sdk{{"openai", askOpenAI}, {"anthropic", askAnthropic}}

func askOpenAI(t *testing.T, s *server, a ask) heard {
	t.Helper()
	key := "sk-proj-e2e"
	if strings.HasPrefix(a.model, "claude") {
		key = "sk-ant-api03-e2e"
	}
	var resp *http.Response
	opts := []ooption.RequestOption{ooption.WithBaseURL(s.OpenAIBase()), ooption.WithAPIKey(key), ooption.WithMaxRetries(0), ooption.WithResponseInto(&resp)}
	for k, v := range a.headers {
		opts = append(opts, ooption.WithHeader(k, v))
	}
	c := openai.NewClient(opts...)
	model := a.model
	if model == "" {
		model = "gpt-4o-mini"
	}
	p := openai.ChatCompletionNewParams{Model: model, Messages: []openai.ChatCompletionMessageParamUnion{
		openai.SystemMessage("You are a careful assistant."), openai.UserMessage(a.question)}}
	if a.weather {
		p.Tools = []openai.ChatCompletionToolUnionParam{openai.ChatCompletionFunctionTool(shared.FunctionDefinitionParam{
			Name: "get_weather", Parameters: shared.FunctionParameters{"type": "object", "properties": map[string]any{"city": map[string]any{"type": "string"}}},
		})}
	}
	var msg openai.ChatCompletionMessage
	var h heard
	if !a.stream {
		r, err := c.Chat.Completions.New(context.Background(), p)
		if err != nil {
			t.Fatalf("openai sdk: %v", err)
		}
		msg, h.stop = r.Choices[0].Message, r.Choices[0].FinishReason
		h.in, h.out = r.Usage.PromptTokens, r.Usage.CompletionTokens
	} else {
		p.StreamOptions = openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)}
		st := c.Chat.Completions.NewStreaming(context.Background(), p)
		acc := openai.ChatCompletionAccumulator{}
		for st.Next() {
			if !acc.AddChunk(st.Current()) {
				t.Fatalf("the accumulator refused chunk %s", st.Current().RawJSON())
			}
		}
		if err := st.Err(); err != nil {
			t.Fatalf("openai sdk stream: %v", err)
		}
		msg, h.stop = acc.Choices[0].Message, acc.Choices[0].FinishReason
		h.in, h.out = acc.Usage.PromptTokens, acc.Usage.CompletionTokens
	}
	h.text = msg.Content
	for _, tc := range msg.ToolCalls {
		h.calls = append(h.calls, tc.Function.Name)
	}
	h.stop = map[string]string{"stop": "answer", "tool_calls": "tool"}[h.stop]
	h.header = resp.Header
	return h
}

func askAnthropic(t *testing.T, s *server, a ask) heard {
	t.Helper()
	key := "sk-ant-e2e"
	if strings.HasPrefix(a.model, "gpt") {
		key = "sk-proj-e2e"
	}
	var resp *http.Response
	opts := []aoption.RequestOption{aoption.WithBaseURL(s.AnthropicBase()), aoption.WithAPIKey(key), aoption.WithMaxRetries(0), aoption.WithResponseInto(&resp)}
	for k, v := range a.headers {
		opts = append(opts, aoption.WithHeader(k, v))
	}
	c := anthropic.NewClient(opts...)
	model := a.model
	if model == "" {
		model = "claude-sonnet-4-5"
	}
	p := anthropic.MessageNewParams{Model: anthropic.Model(model), MaxTokens: 512,
		Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock(a.question))},
		System:   []anthropic.TextBlockParam{{Text: "You are a careful assistant."}}}
	if a.weather {
		p.Tools = []anthropic.ToolUnionParam{anthropic.ToolUnionParamOfTool(anthropic.ToolInputSchemaParam{
			Properties: map[string]any{"city": map[string]any{"type": "string"}}}, "get_weather")}
	}
	var m anthropic.Message
	if !a.stream {
		r, err := c.Messages.New(context.Background(), p)
		if err != nil {
			t.Fatalf("anthropic sdk: %v", err)
		}
		m = *r
	} else {
		st := c.Messages.NewStreaming(context.Background(), p)
		for st.Next() {
			if err := m.Accumulate(st.Current()); err != nil {
				t.Fatalf("accumulate: %v", err)
			}
		}
		if err := st.Err(); err != nil {
			t.Fatalf("anthropic sdk stream: %v", err)
		}
	}
	h := heard{text: textOf(&m), in: m.Usage.InputTokens, out: m.Usage.OutputTokens, header: resp.Header}
	for _, b := range m.Content {
		if b.Type == "tool_use" {
			h.calls = append(h.calls, b.Name)
		}
	}
	h.stop = map[anthropic.StopReason]string{anthropic.StopReasonEndTurn: "answer", anthropic.StopReasonToolUse: "tool"}[m.StopReason]
	return h
}

// gardenNotes are the stored evidence: more than a small frame holds.
func gardenNotes() []string {
	var notes []string
	for i := range 8 {
		notes = append(notes, fmt.Sprintf("Garden note %d: the tomatoes and basil in bed %s grew %d cm this week.", i, string(rune('A'+i)), 10+i))
	}
	return notes
}

// seedGarden stores the notes, each in a conversation of its own, through
// the SDK with scripted replies.
func seedGarden(t *testing.T, s *server, via sdk) {
	t.Helper()
	for _, n := range gardenNotes() {
		s.Fake.Script(fakeprovider.Reply{Text: "Noted: " + n})
		via.ask(t, s, ask{question: n})
	}
	s.waitStored(2 * len(gardenNotes()))
}

const gardenQuestion = "How did the tomatoes and basil in the garden beds grow?"

// smallFrame leaves most of the garden out of the frame.
var smallFrame = map[string]string{"X-Perpetuity-Frame-Budget": "60"}

var labelID = regexp.MustCompile(`#(\d+)】`)

// TestMemoryToolsThroughSDKs: both SDKs, streaming and not, against the
// scripted fake: a reopen reaches the trimmed evidence, a search returns
// nothing already shown, the round limit forces an answer, the harness's
// own tool calls still reach it, and tools off leaves no trace of them.
func TestMemoryToolsThroughSDKs(t *testing.T) {
	t.Parallel()
	for _, via := range toolSDKs {
		t.Run(via.name, func(t *testing.T) {
			t.Parallel()
			s := startServer(t)
			seedGarden(t, s, via)
			for _, stream := range []bool{false, true} {
				mode := map[bool]string{false: "json", true: "stream"}[stream]
				t.Run("reopen_trimmed/"+mode, func(t *testing.T) { reopenTrimmed(t, s, via, stream, "") })
				t.Run("search_unseen/"+mode, func(t *testing.T) { searchUnseen(t, s, via, stream) })
				t.Run("round_limit/"+mode, func(t *testing.T) { roundLimit(t, s, via, stream) })
				t.Run("harness_tools/"+mode, func(t *testing.T) { harnessTools(t, s, via, stream) })
				t.Run("tools_off/"+mode, func(t *testing.T) { toolsOff(t, s, via, stream) })
				if via.name == "openai" {
					t.Run("reopen_trimmed_claude/"+mode, func(t *testing.T) { reopenTrimmed(t, s, via, stream, "claude-sonnet-4-5") })
				} else {
					t.Run("reopen_trimmed_gpt/"+mode, func(t *testing.T) { reopenTrimmed(t, s, via, stream, "gpt-4o-mini") })
				}
			}
		})
	}
}

// reopenTrimmed: the frame was trimmed; the model reopens and answers;
// the second provider call carries evidence the first did not, as a tool
// result; the harness sees only the answer, which is stored alone.
func reopenTrimmed(t *testing.T, s *server, via sdk, stream bool, model string) {
	s.Fake.Reset()
	const answer = "Bed A grew 10 cm, bed H 17 cm."
	s.Fake.Script(fakeprovider.Reply{Text: "Let me look.", ToolCalls: []fakeprovider.ToolCall{{Name: memory.ToolReopen, Arguments: `{}`}}, Usage: &fakeprovider.Usage{InputTokens: 300, OutputTokens: 12}},
		fakeprovider.Reply{Text: answer, Usage: &fakeprovider.Usage{InputTokens: 700, OutputTokens: 20}})
	q := fmt.Sprintf("%s (%s %v)", gardenQuestion, model, stream)
	got := via.ask(t, s, ask{question: q, stream: stream, headers: smallFrame, model: model})
	if got.header.Get("X-Perpetuity-Frame-Trimmed") != "true" {
		t.Fatalf("the frame was not trimmed: %v", got.header)
	}
	if got.text != "Let me look.\n\n"+answer || len(got.calls) != 0 || got.stop != "answer" {
		t.Fatalf("the harness heard %+v", got)
	}
	if got.in != 1000 || got.out != 32 {
		t.Fatalf("usage %d/%d, want the rounds' sum 1000/32", got.in, got.out)
	}
	reqs := s.Fake.Requests()
	if len(reqs) != 2 {
		t.Fatalf("%d provider calls", len(reqs))
	}
	first, second := string(reqs[0].Body), string(reqs[1].Body)
	if !strings.Contains(first, memory.ToolInstructions) || !strings.Contains(first, memory.ToolReopen+" reaches it") {
		t.Fatalf("the first call lacks the instruction or the trimmed notice: %s", first)
	}
	result := toolResults(t, reqs[1])
	if len(result) != 1 {
		t.Fatalf("second call carries results %v: %s", result, second)
	}
	var reached []string
	for _, n := range gardenNotes() {
		if strings.Contains(result[0], n) && !strings.Contains(first, n) {
			reached = append(reached, n)
		}
	}
	if len(reached) == 0 {
		t.Fatalf("the reopen result brings no trimmed evidence: %q", result[0])
	}
	msgs := waitReply(t, s, "Let me look.\n\n"+answer)
	for _, m := range msgs {
		if strings.Contains(m.Text, "memory_") || strings.Contains(m.Text, "】") {
			t.Fatalf("a memory round was stored: %+v", m)
		}
	}
}

// searchUnseen: a search returns only items the frame did not show.
func searchUnseen(t *testing.T, s *server, via sdk, stream bool) {
	s.Fake.Reset()
	s.Fake.Script(fakeprovider.Reply{ToolCalls: []fakeprovider.ToolCall{{Name: memory.ToolSearch, Arguments: `{"query":"tomatoes basil garden bed","limit":50}`}}},
		fakeprovider.Reply{Text: "They all grew."})
	got := via.ask(t, s, ask{question: "Which garden beds had tomatoes and basil? " + fmt.Sprint(stream), stream: stream, headers: smallFrame})
	if got.text != "They all grew." || got.stop != "answer" {
		t.Fatalf("the harness heard %+v", got)
	}
	reqs := s.Fake.Requests()
	if len(reqs) != 2 {
		t.Fatalf("%d provider calls", len(reqs))
	}
	shown := map[string]bool{}
	for _, m := range labelID.FindAllStringSubmatch(string(reqs[0].Body), -1) {
		shown[m[1]] = true
	}
	res := toolResults(t, reqs[1])
	if len(shown) == 0 || len(res) != 1 {
		t.Fatalf("frame ids %v, results %v", shown, res)
	}
	found := labelID.FindAllStringSubmatch(res[0], -1)
	if len(found) == 0 {
		t.Fatalf("the search found nothing new: %q", res[0])
	}
	for _, m := range found {
		if shown[m[1]] {
			t.Fatalf("the search returned #%s, which the frame showed: %q", m[1], res[0])
		}
	}
}

// roundLimit: a model that calls memory every round is made to answer on
// the third; the harness still gets a clean reply.
func roundLimit(t *testing.T, s *server, via sdk, stream bool) {
	s.Fake.Reset()
	call := func(q string) []fakeprovider.ToolCall {
		return []fakeprovider.ToolCall{{Name: memory.ToolSearch, Arguments: fmt.Sprintf(`{"query":%q}`, q)}}
	}
	s.Fake.Script(fakeprovider.Reply{ToolCalls: call("tomatoes")}, fakeprovider.Reply{ToolCalls: call("basil")},
		fakeprovider.Reply{Text: "Both grew well.", ToolCalls: call("more")})
	got := via.ask(t, s, ask{question: "Tell me everything about the garden. " + fmt.Sprint(stream), stream: stream})
	if got.text != "Both grew well." || len(got.calls) != 0 || got.stop != "answer" {
		t.Fatalf("the harness heard %+v", got)
	}
	reqs := s.Fake.Requests()
	if len(reqs) != 3 {
		t.Fatalf("%d provider calls, want 3", len(reqs))
	}
	var last struct {
		ToolChoice json.RawMessage `json:"tool_choice"`
	}
	if err := json.Unmarshal(reqs[2].Body, &last); err != nil {
		t.Fatal(err)
	}
	if c := string(last.ToolChoice); c != `"none"` && c != `{"type":"none"}` {
		t.Fatalf("the last round's tool_choice is %s", c)
	}
	for i, r := range reqs[:2] {
		if strings.Contains(string(r.Body), `"tool_choice"`) {
			t.Fatalf("round %d already forced an answer", i+1)
		}
	}
}

// harnessTools: the harness's own call reaches it untouched; a reply
// mixing it with a memory call runs the memory call, and the model's call
// made again reaches the harness.
func harnessTools(t *testing.T, s *server, via sdk, stream bool) {
	s.Fake.Reset()
	weather := fakeprovider.ToolCall{Name: "get_weather", Arguments: `{"city":"Paris"}`}
	s.Fake.Script(fakeprovider.Reply{ToolCalls: []fakeprovider.ToolCall{weather}})
	got := via.ask(t, s, ask{question: "Weather in Paris? " + fmt.Sprint(stream), stream: stream, weather: true})
	if len(got.calls) != 1 || got.calls[0] != "get_weather" || got.stop != "tool" || len(s.Fake.Requests()) != 1 {
		t.Fatalf("the harness heard %+v after %d calls", got, len(s.Fake.Requests()))
	}

	s.Fake.Reset()
	s.Fake.Script(fakeprovider.Reply{ToolCalls: []fakeprovider.ToolCall{weather, {Name: memory.ToolSearch, Arguments: `{"query":"Paris trip"}`}}},
		fakeprovider.Reply{Text: "Checking Paris.", ToolCalls: []fakeprovider.ToolCall{weather}})
	got = via.ask(t, s, ask{question: "Weather for my Paris trip? " + fmt.Sprint(stream), stream: stream, weather: true})
	if got.text != "Checking Paris." || len(got.calls) != 1 || got.calls[0] != "get_weather" || got.stop != "tool" {
		t.Fatalf("the harness heard %+v", got)
	}
	reqs := s.Fake.Requests()
	if len(reqs) != 2 {
		t.Fatalf("%d provider calls", len(reqs))
	}
	res := toolResults(t, reqs[1])
	if len(res) != 2 || !strings.HasPrefix(res[0], "Not run yet") || strings.HasPrefix(res[1], "Not run yet") {
		t.Fatalf("second call results %q", res)
	}
}

// toolsOff: no tool name or instruction anywhere in the provider request.
func toolsOff(t *testing.T, s *server, via sdk, stream bool) {
	s.Fake.Reset()
	s.Fake.Script(fakeprovider.Reply{Text: "Fine."})
	h := map[string]string{"X-Perpetuity-Tools": "off"}
	for k, v := range smallFrame {
		h[k] = v
	}
	got := via.ask(t, s, ask{question: gardenQuestion + " no tools " + fmt.Sprint(stream), stream: stream, headers: h, weather: true})
	if got.text != "Fine." {
		t.Fatalf("the harness heard %+v", got)
	}
	body := string(s.Fake.Requests()[0].Body)
	for _, w := range []string{memory.ToolSearch, memory.ToolReopen, memory.ToolChain, memory.ToolCount, "memory_", memory.ToolInstructions[:30], "#"} {
		if strings.Contains(body, w) {
			t.Fatalf("tools off, yet the provider request has %q: %s", w, body)
		}
	}
	if !strings.Contains(body, "get_weather") || !strings.Contains(body, "【memory") {
		t.Fatalf("the request lost the harness's tool or the frame: %s", body)
	}
}

// waitReply waits until a reply with exactly this text is stored, whole,
// and returns everything stored.
func waitReply(t *testing.T, s *server, text string) []storedMessage {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		msgs := s.stored()
		for _, m := range msgs {
			if m.Role == "assistant" && m.Text == text && !m.Interrupted {
				return msgs
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("reply %q not stored: %+v", text, msgs)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// toolResults reads the tool results at the end of a provider request, in
// either dialect, in order.
func toolResults(t *testing.T, r fakeprovider.Recorded) []string {
	t.Helper()
	var req struct {
		Messages []struct {
			Role    string          `json:"role"`
			Content json.RawMessage `json:"content"`
		} `json:"messages"`
	}
	if err := json.Unmarshal(r.Body, &req); err != nil {
		t.Fatal(err)
	}
	var out []string
	if r.Dialect == fakeprovider.DialectAnthropic {
		var blocks []struct {
			Type    string `json:"type"`
			Content string `json:"content"`
		}
		_ = json.Unmarshal(req.Messages[len(req.Messages)-1].Content, &blocks)
		for _, b := range blocks {
			if b.Type == "tool_result" {
				out = append(out, b.Content)
			}
		}
		return out
	}
	for i := len(req.Messages) - 1; i >= 0 && req.Messages[i].Role == "tool"; i-- {
		var s string
		_ = json.Unmarshal(req.Messages[i].Content, &s)
		out = append([]string{s}, out...)
	}
	return out
}
