package proxy

import (
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/perpetuity/perpetuity/e2e/fakeprovider"
	"github.com/perpetuity/perpetuity/memory"
)

// TestClientThatStopsReadingIsDropped: a client that asks for a reply (a
// stream, or whole) and never reads it fills the socket buffers; the stalled write must give up
// after WriteStall, rather than hold the handler (and, while the provider
// still generates, the upstream) until the client disconnects.
func TestClientThatStopsReadingIsDropped(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, path, body, headers string
		up                        func(tp *testProxy) *fakeprovider.Provider
	}{
		{"openai", "/v1/chat/completions", `{"model":"gpt-4o","stream":true,"messages":[{"role":"user","content":"tell me everything"}]}`,
			"Authorization: Bearer sk-proj-k\r\n",
			func(tp *testProxy) *fakeprovider.Provider { return tp.openai.Provider }},
		{"anthropic", "/v1/messages", `{"model":"claude-sonnet-4-5","max_tokens":100,"stream":true,"messages":[{"role":"user","content":"tell me everything"}]}`,
			"x-api-key: sk-ant-k\r\nanthropic-version: 2023-06-01\r\n",
			func(tp *testProxy) *fakeprovider.Provider { return tp.anthropic.Provider }},
		// A reply asked for whole is one write, under the same deadline.
		{"openai whole", "/v1/chat/completions", `{"model":"gpt-4o","messages":[{"role":"user","content":"tell me everything"}]}`,
			"Authorization: Bearer sk-proj-k\r\n",
			func(tp *testProxy) *fakeprovider.Provider { return tp.openai.Provider }},
		{"anthropic whole", "/v1/messages", `{"model":"claude-sonnet-4-5","max_tokens":100,"messages":[{"role":"user","content":"tell me everything"}]}`,
			"x-api-key: sk-ant-k\r\nanthropic-version: 2023-06-01\r\n",
			func(tp *testProxy) *fakeprovider.Provider { return tp.anthropic.Provider }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tp := newTestProxy(t)
			tp.px.cfg.WriteStall = 200 * time.Millisecond
			up := tc.up(tp)
			// Far more than loopback socket buffers hold, paced so the
			// provider is still generating when the writes stall.
			up.Script(fakeprovider.Reply{Text: strings.Repeat("all work and no play ", 1<<20), Chunks: 64, ChunkDelay: 20 * time.Millisecond})
			host := strings.TrimPrefix(strings.SplitN(tp.URL, "/k/", 2)[0], "http://")
			conn, err := net.Dial("tcp", host)
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			fmt.Fprintf(conn, "POST %s%s HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\n%sContent-Length: %d\r\n\r\n%s",
				strings.TrimPrefix(tp.URL, "http://"+host), tc.path, host, tc.headers, len(tc.body), tc.body)
			// The client never reads. The handler must give up: the reply it
			// had relayed is stored, flagged as cut short.
			deadline := time.Now().Add(20 * time.Second)
			for !interruptedReply(tp.mem.Stored()) {
				if time.Now().After(deadline) {
					t.Fatalf("the handler is still writing to a client that stopped reading (provider requests: %d)", len(up.Requests()))
				}
				time.Sleep(20 * time.Millisecond)
			}
		})
	}
}

func interruptedReply(ms []memory.Message) bool {
	for _, m := range ms {
		if m.Role == "assistant" && m.Interrupted {
			return true
		}
	}
	return false
}
