package proxy

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/perpetuity/perpetuity/e2e/fakeprovider"
)

// TestResponsesChainOneConversation: a Responses chain that sends only its
// new items (previous_response_id) is one conversation, its turns stored
// in order at positions that go on from the response each request
// continues, so the same words said again ("yes") are a new turn, while
// the same request sent again is a retry that stores nothing. Streamed and
// not; a chain that continues a response this process never relayed gets
// a conversation of its own.
func TestResponsesChainOneConversation(t *testing.T) {
	t.Parallel()
	for _, stream := range []bool{false, true} {
		t.Run(fmt.Sprintf("stream=%v", stream), func(t *testing.T) {
			t.Parallel()
			tp := newTestProxy(t)
			send := func(prev, text string) string {
				t.Helper()
				body := map[string]any{"model": "gpt-4.1", "stream": stream, "input": []map[string]any{{"role": "user", "content": text}}}
				if prev != "" {
					body["previous_response_id"] = prev
				}
				b, _ := json.Marshal(body)
				tp.openai.Script(fakeprovider.Reply{Text: "ok, " + text})
				status, _, got := tp.post("/v1/responses", string(b), "Authorization: Bearer sk-proj-k")
				if status != 200 {
					t.Fatalf("%d %s", status, got)
				}
				reqs := len(tp.openai.Requests())
				tp.settle(reqs)
				return responseID(t, got, stream)
			}
			r1 := send("", "deploy the site?")
			r2 := send(r1, "yes")
			r3 := send(r2, "yes")
			send(r2, "yes") // the same request again: a retry
			send("resp_from_elsewhere", "yes")

			keys := tp.dir.conversationKeys()
			if len(keys) != 2 || keys[1] != "r:resp_from_elsewhere" || !strings.HasPrefix(keys[0], "auto:") {
				t.Fatalf("conversations %q: want the chain's and the unknown response's", keys)
			}
			var got []string
			for _, m := range tp.mem.Stored() {
				got = append(got, fmt.Sprintf("%d %s %s", m.Position, m.Role, m.Text))
			}
			want := []string{"0 user deploy the site?", "1 assistant ok, deploy the site?", "2 user yes", "3 assistant ok, yes",
				"4 user yes", "5 assistant ok, yes", "0 user yes", "1 assistant ok, yes"}
			if strings.Join(got, "\n") != strings.Join(want, "\n") {
				t.Fatalf("stored:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
			}
			if r3 == r2 || r2 == r1 {
				t.Fatalf("response ids not distinct: %q %q %q", r1, r2, r3)
			}
		})
	}
}

// responseID is the id of a Responses reply, whole or streamed.
func responseID(t *testing.T, body string, stream bool) string {
	t.Helper()
	var r struct {
		ID       string `json:"id"`
		Response struct {
			ID string `json:"id"`
		} `json:"response"`
	}
	if !stream {
		if json.Unmarshal([]byte(body), &r) != nil || r.ID == "" {
			t.Fatalf("no id in %s", body)
		}
		return r.ID
	}
	for _, line := range strings.Split(body, "\n") {
		if data, ok := strings.CutPrefix(line, "data: "); ok && json.Unmarshal([]byte(data), &r) == nil && r.Response.ID != "" {
			return r.Response.ID
		}
	}
	t.Fatalf("no response id in the stream %s", body)
	return ""
}
