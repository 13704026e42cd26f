package proxy

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/perpetuity/perpetuity/e2e/fakeprovider"
	"github.com/perpetuity/perpetuity/memory"
	"github.com/perpetuity/perpetuity/proxy/dialect"
)

// The non-text parts the live messages below carry, as the provider must
// receive them: byte for byte, once.
const (
	anthropicImage = `{"type":"image","source":{"type":"base64","media_type":"image/png","data":"iVBORw0KGgo="}}`
	chatImage      = `{"type":"image_url","image_url":{"url":"data:image/png;base64,iVBORw0KGgo="}}`
	chatAudio      = `{"type":"input_audio","input_audio":{"data":"UklGRg==","format":"wav"}}`
	responsesImage = `{"type":"input_image","image_url":"data:image/png;base64,iVBORw0KGgo="}`
)

// textlessRoute is a client dialect's endpoint, key and model, and the
// fake provider its requests reach.
type textlessRoute struct {
	path, header, model string
	d, out              dialect.Dialect // the client's, the provider's
	upstream            func(*testProxy) upstreamServer
}

var (
	textlessMessages  = textlessRoute{"/v1/messages", "X-Api-Key: sk-ant-api03-secret", "claude-sonnet-4-5", dialect.AnthropicMessages, dialect.AnthropicMessages, func(tp *testProxy) upstreamServer { return tp.anthropic }}
	textlessChat      = textlessRoute{"/v1/chat/completions", "Authorization: Bearer sk-proj-secret", "gpt-4o", dialect.OpenAIChat, dialect.OpenAIChat, func(tp *testProxy) upstreamServer { return tp.openai }}
	textlessResponses = textlessRoute{"/v1/responses", "Authorization: Bearer sk-proj-secret", "gpt-4.1", dialect.OpenAIResponses, dialect.OpenAIResponses, func(tp *testProxy) upstreamServer { return tp.openai }}
	// Crossing: the rendered chat request is translated for Anthropic.
	textlessChatToAnthropic = textlessRoute{"/v1/chat/completions", chatHeader, "claude-sonnet-4-5", dialect.OpenAIChat, dialect.AnthropicMessages, func(tp *testProxy) upstreamServer { return tp.anthropic }}
)

// body is a request of the route's dialect with the given messages.
func (r textlessRoute) body(msgs ...string) string {
	list := strings.Join(msgs, ",")
	switch r.d {
	case dialect.AnthropicMessages:
		return fmt.Sprintf(`{"model":%q,"max_tokens":300,"system":"You are terse.","messages":[%s]}`, r.model, list)
	case dialect.OpenAIResponses:
		return fmt.Sprintf(`{"model":%q,"instructions":"You are terse.","input":[%s]}`, r.model, list)
	}
	return fmt.Sprintf(`{"model":%q,"messages":[{"role":"system","content":"You are terse."},%s]}`, r.model, list)
}

func userParts(parts ...string) string {
	return `{"role":"user","content":[` + strings.Join(parts, ",") + `]}`
}

// TestTextlessLiveMessage: a live user message with no text of its own
// (an image or audio alone) is stored as no turn, yet it is the question:
// it reaches the provider after the frame, as the last user message, on a
// first turn (no memory: the frame is empty) and a later one (the frame
// ends with a quoted reply), with every switch that still renders a frame.
// The Anthropic request alternates strictly from a user message, and so do
// the others' conversation messages. Goldens pin each forwarded request.
// What worked before holds as it was: recall off (the body as sent), a
// frame ending with a user turn (the parts join it), text beside the
// image, and the harness's own history or tool exchange after the live
// question.
func TestTextlessLiveMessage(t *testing.T) {
	t.Parallel()
	const toolUse = `{"role":"assistant","content":[{"type":"tool_use","id":"toolu_1","name":"shot","input":{}}]}`
	const toolResult = `{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_1","content":"taken"}]}`
	for _, tc := range []struct {
		name  string
		route textlessRoute
		// memory: "none" (nothing remembered: an empty frame), "earlier" (a
		// text turn asked before in the conversation; the frame ends with
		// its reply) or "pending" (the frame ends with a user turn).
		memory  string
		msgs    []string
		headers []string
		part    string
		// fromEnd is where the message holding part is, counted from the
		// last message (0); what follows it is the harness's tool exchange.
		fromEnd int
		// asSent: the harness's own tail goes as sent, its alternation too.
		asSent bool
	}{
		{name: "messages_first_turn", route: textlessMessages, memory: "none", msgs: []string{userParts(anthropicImage)}, part: anthropicImage},
		{name: "messages_later_turn", route: textlessMessages, memory: "earlier", msgs: []string{userParts(anthropicImage)}, part: anthropicImage},
		{name: "messages_later_turn_tools_on", route: textlessMessages, memory: "earlier", msgs: []string{userParts(anthropicImage)}, part: anthropicImage, headers: []string{HeaderTools + ": on"}},
		{name: "messages_frame_ends_with_user", route: textlessMessages, memory: "pending", msgs: []string{userParts(anthropicImage)}, part: anthropicImage},
		{name: "messages_capture_off", route: textlessMessages, memory: "earlier", msgs: []string{userParts(anthropicImage)}, part: anthropicImage, headers: []string{HeaderCapture + ": off"}},
		{name: "messages_probe", route: textlessMessages, memory: "earlier", msgs: []string{userParts(anthropicImage)}, part: anthropicImage, headers: []string{HeaderMode + ": probe"}},
		{name: "messages_recall_off", route: textlessMessages, memory: "earlier", msgs: []string{userParts(anthropicImage)}, part: anthropicImage, headers: []string{HeaderRecall + ": off"}},
		{name: "messages_whitespace_text", route: textlessMessages, memory: "earlier", msgs: []string{userParts(`{"type":"text","text":" \n"}`, anthropicImage)}, part: anthropicImage},
		{name: "messages_then_tool_exchange", route: textlessMessages, memory: "earlier", msgs: []string{userParts(anthropicImage), toolUse, toolResult}, part: anthropicImage, fromEnd: 2},
		// Already forwarded before: the history's question is the live one
		// and the image follows it as sent.
		{name: "messages_history_then_image", route: textlessMessages, memory: "none", part: anthropicImage,
			msgs: []string{`{"role":"user","content":"My cat is Miso."}`, `{"role":"assistant","content":"Noted."}`, userParts(anthropicImage)}},
		{name: "messages_screenshot_after_tool_result", route: textlessMessages, memory: "earlier", part: anthropicImage, asSent: true,
			msgs: []string{`{"role":"user","content":"look at the page"}`, toolUse, toolResult, userParts(anthropicImage)}},
		{name: "messages_text_and_image", route: textlessMessages, memory: "earlier", msgs: []string{userParts(`{"type":"text","text":"What is this?"}`, anthropicImage)}, part: anthropicImage},
		{name: "chat_first_turn", route: textlessChat, memory: "none", msgs: []string{userParts(chatImage)}, part: chatImage},
		{name: "chat_later_turn", route: textlessChat, memory: "earlier", msgs: []string{userParts(chatImage)}, part: chatImage},
		{name: "chat_audio_later_turn", route: textlessChat, memory: "earlier", msgs: []string{userParts(chatAudio)}, part: chatAudio},
		{name: "chat_frame_ends_with_user", route: textlessChat, memory: "pending", msgs: []string{userParts(chatImage)}, part: chatImage},
		{name: "chat_probe", route: textlessChat, memory: "earlier", msgs: []string{userParts(chatImage)}, part: chatImage, headers: []string{HeaderMode + ": probe"}},
		{name: "chat_to_anthropic_first_turn", route: textlessChatToAnthropic, memory: "none", msgs: []string{userParts(chatImage)}, part: anthropicImage},
		{name: "chat_to_anthropic_later_turn", route: textlessChatToAnthropic, memory: "earlier", msgs: []string{userParts(chatImage)}, part: anthropicImage},
		{name: "responses_first_turn", route: textlessResponses, memory: "none", msgs: []string{userParts(responsesImage)}, part: responsesImage},
		{name: "responses_later_turn", route: textlessResponses, memory: "earlier", msgs: []string{userParts(responsesImage)}, part: responsesImage},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tp := newTestProxy(t)
			up := tc.route.upstream(tp)
			conv := HeaderConversation + ": textless"
			headers := append([]string{tc.route.header, conv, HeaderTools + ": off"}, tc.headers...)
			switch tc.memory {
			case "none":
				tp.mem.recall = nil
			case "pending":
				tp.mem.recall = []memory.Turn{{Role: "user", Text: "[memory] ada asked about her cat."}}
			case "earlier":
				tp.mem.recall = nil
				up.Script(fakeprovider.Reply{Text: "Noted: Miso."})
				if status, _, body := tp.post(tc.route.path, tc.route.body(`{"role":"user","content":"My cat is Miso."}`), tc.route.header, conv, HeaderTools+": off"); status != http.StatusOK {
					t.Fatalf("earlier turn: %d %s", status, body)
				}
				tp.settle(1)
			}
			up.Script(fakeprovider.Reply{Text: "A grey cat."})
			status, _, body := tp.post(tc.route.path, tc.route.body(tc.msgs...), headers...)
			if status != http.StatusOK || !strings.Contains(body, "A grey cat.") {
				t.Fatalf("status %d: %s", status, body)
			}
			reqs := up.Requests()
			sent := reqs[len(reqs)-1].Body
			if n := strings.Count(string(sent), tc.part); n != 1 {
				t.Fatalf("the provider got the live message's part %d times:\n%s", n, sent)
			}
			msgs := conversationMessages(t, tc.route.out, sent)
			if len(msgs) <= tc.fromEnd {
				t.Fatalf("the provider got %d messages:\n%s", len(msgs), sent)
			}
			holder := msgs[len(msgs)-1-tc.fromEnd]
			if holder.Role != "user" || !strings.Contains(string(holder.Content), tc.part) {
				t.Fatalf("message %d from the end is not the user's holding the part:\n%s", tc.fromEnd, sent)
			}
			if !tc.asSent {
				for i, m := range msgs {
					if want := [2]string{"user", "assistant"}[i%2]; m.Role != want {
						t.Fatalf("message %d is the %s's, want the %s's: no alternation from a user message:\n%s", i, m.Role, want, sent)
					}
				}
			}
			golden(t, "textless/"+tc.name+".request.json", append(sent, '\n'))
		})
	}
}

type roleContent struct {
	Role    string          `json:"role"`
	Content json.RawMessage `json:"content"`
}

// conversationMessages are a forwarded request's messages after the
// system prompt (OpenAI's system and developer messages at the head; the
// Responses input's items).
func conversationMessages(t *testing.T, d dialect.Dialect, body []byte) []roleContent {
	t.Helper()
	var req struct {
		Messages []roleContent `json:"messages"`
		Input    []roleContent `json:"input"`
	}
	if err := json.Unmarshal(body, &req); err != nil {
		t.Fatalf("%v: %s", err, body)
	}
	msgs := req.Messages
	if d == dialect.OpenAIResponses {
		msgs = req.Input
	}
	for len(msgs) > 0 && d != dialect.AnthropicMessages && (msgs[0].Role == "system" || msgs[0].Role == "developer") {
		msgs = msgs[1:]
	}
	return msgs
}
