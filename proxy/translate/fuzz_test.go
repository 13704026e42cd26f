package translate

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"testing"

	anthropicsdk "github.com/anthropics/anthropic-sdk-go/v2"
	openaisdk "github.com/openai/openai-go/v3"

	"github.com/perpetuity/perpetuity/proxy/sse"
	"github.com/perpetuity/perpetuity/proxy/wire/anthropic"
	"github.com/perpetuity/perpetuity/proxy/wire/openai"
)

func addSeeds(f *testing.F, pattern string, extra ...string) {
	f.Helper()
	files, err := filepath.Glob(filepath.Join("testdata", pattern))
	if err != nil || len(files) == 0 {
		f.Fatalf("no seeds for %s: %v", pattern, err)
	}
	for _, name := range files {
		b, err := os.ReadFile(name)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	for _, s := range extra {
		f.Add([]byte(s))
	}
}

func FuzzChatRequestToMessages(f *testing.F) {
	addSeeds(f, "chat_request/*.json", `{}`, `{"messages":[{"role":"assistant","content":" "}]}`,
		`{"messages":[{"role":"tool","content":[{"type":"image_url","image_url":{"url":"data:;base64,"}}]}]}`)
	f.Fuzz(func(t *testing.T, body []byte) {
		tr, _ := newTestTranslator()
		out, err := tr.ChatRequestToMessages(body)
		if err != nil {
			return
		}
		// Whatever came in, what goes out must satisfy Anthropic's shape rules.
		checkMessagesRequest(t, out, false)
	})
}

func FuzzMessagesRequestToChat(f *testing.F) {
	addSeeds(f, "messages_request/*.json", `{}`, `{"system":[{"type":"image"}],"messages":[{"role":"user","content":[{"type":"tool_result"}]}]}`)
	f.Fuzz(func(t *testing.T, body []byte) {
		tr, _ := newTestTranslator()
		out, err := tr.MessagesRequestToChat(body)
		if err != nil {
			return
		}
		if _, err := openai.ParseChatRequest(out); err != nil {
			t.Fatalf("output does not parse back: %v\n%s", err, out)
		}
		var params openaisdk.ChatCompletionNewParams
		if err := json.Unmarshal(out, &params); err != nil {
			t.Fatalf("OpenAI SDK cannot decode the output: %v", err)
		}
	})
}

// fuzzStream pushes every event of the raw SSE text through s and checks the
// output: each event formatted, each data JSON (or [DONE]), and a clean End
// only after the dialect's terminator.
func fuzzStream(t *testing.T, s Stream, input []byte, accept func(sse.Event) error, terminator func(sse.Event) bool) {
	var all []sse.Event
	failed := false
	for _, ev := range splitSSE(t, string(input)) {
		evs, err := s.Push(ev)
		if err != nil {
			failed = true
			break
		}
		all = append(all, evs...)
	}
	if !failed {
		evs, err := s.End()
		all = append(all, evs...)
		if err == nil && (len(all) == 0 || !terminator(all[len(all)-1])) {
			t.Fatalf("End() = nil but the output does not end with the terminator")
		}
	}
	for _, ev := range all {
		if !bytes.HasSuffix(ev.Raw, []byte("\n\n")) || !bytes.Contains(ev.Raw, ev.Data) || bytes.Contains(ev.Data, []byte("\n")) {
			t.Fatalf("badly formatted event %q", ev.Raw)
		}
		if string(ev.Data) != doneData && !json.Valid(ev.Data) {
			t.Fatalf("event data is not JSON: %q", ev.Data)
		}
		if err := accept(ev); err != nil {
			t.Fatalf("SDK rejects %q: %v", ev.Raw, err)
		}
	}
}

func FuzzMessagesToChatStream(f *testing.F) {
	addSeeds(f, "messages_stream/*.sse", "event: error\ndata: {}\n\n", "data: {\"type\":\"message_stop\"}\n\n")
	f.Fuzz(func(t *testing.T, input []byte) {
		tr, _ := newTestTranslator()
		acc := openaisdk.ChatCompletionAccumulator{}
		accept := func(ev sse.Event) error {
			var probe struct {
				Error json.RawMessage `json:"error"`
			}
			if string(ev.Data) == doneData || (json.Unmarshal(ev.Data, &probe) == nil && probe.Error != nil) {
				return nil
			}
			var chunk openaisdk.ChatCompletionChunk
			if err := json.Unmarshal(ev.Data, &chunk); err != nil {
				return err
			}
			if !acc.AddChunk(chunk) {
				return errors.New("accumulator rejected the chunk")
			}
			return nil
		}
		fuzzStream(t, tr.NewMessagesToChatStream(StreamOptions{IncludeUsage: true}), input, accept,
			func(ev sse.Event) bool { return string(ev.Data) == doneData })
	})
}

func FuzzChatToMessagesStream(f *testing.F) {
	addSeeds(f, "chat_stream/*.sse", "data: [DONE]\n\n", "data: {\"error\":\"x\"}\n\n",
		"data: {\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":3,\"function\":{\"arguments\":\"{\"}}]}}]}\n\n")
	f.Fuzz(func(t *testing.T, input []byte) {
		tr, _ := newTestTranslator()
		var msg anthropicsdk.Message
		accept := func(ev sse.Event) error {
			if ev.Event == anthropic.EventError {
				return nil
			}
			var e anthropicsdk.MessageStreamEventUnion
			if err := json.Unmarshal(ev.Data, &e); err != nil {
				return err
			}
			return msg.Accumulate(e)
		}
		fuzzStream(t, tr.NewChatToMessagesStream(StreamOptions{}), input, accept,
			func(ev sse.Event) bool { return ev.Event == anthropic.EventMessageStop })
	})
}
