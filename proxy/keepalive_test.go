package proxy

import (
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/perpetuity/perpetuity/e2e/fakeprovider"
	"github.com/perpetuity/perpetuity/proxy/dialect"
)

// TestKeepAliveWhileHeld: while a round's call of the harness's own tool is
// held back (its arguments streaming slowly, as a model writing a long
// file), the client gets its dialect's keepalive and still reads the call
// whole; a stream whose events go out as they come gets none.
func TestKeepAliveWhileHeld(t *testing.T) {
	t.Parallel()
	long := fakeprovider.ToolCall{Name: "get_weather", Arguments: `{"city":"` + strings.Repeat("Paris ", 40) + `"}`}
	for _, r := range toolRoutes {
		for _, held := range []bool{true, false} {
			name := r.name + "/held"
			if !held {
				name = r.name + "/flowing"
			}
			t.Run(name, func(t *testing.T) {
				t.Parallel()
				tp := newTestProxy(t)
				// Held: the call's events (its arguments come in four pieces)
				// well past the interval; flowing: events well inside it.
				tp.px.cfg.KeepAlive = 150 * time.Millisecond
				reply := fakeprovider.Reply{ToolCalls: []fakeprovider.ToolCall{long}, ChunkDelay: 100 * time.Millisecond}
				if !held {
					reply = fakeprovider.Reply{Text: strings.Repeat("word ", 24), Chunks: 24, ChunkDelay: 20 * time.Millisecond}
				}
				r.upstream(tp).Script(reply)
				status, _, body := tp.post(r.path, r.body(true, true), r.header)
				if status != http.StatusOK {
					t.Fatalf("status %d: %s", status, body)
				}
				// Anthropic's stream has a ping of its own after its start,
				// which reaches an Anthropic client; keepalives come beside it.
				ka, own := sseComment, 0
				if r.client == dialect.AnthropicMessages {
					ka = anthropicPing
					if r.provider == dialect.AnthropicMessages {
						own = 1
					}
				}
				if n := strings.Count(body, ka); (n > own) != held || n < own {
					t.Fatalf("%d keepalives (%d of the stream's own), want more: %v\n%s", n, own, held, body)
				}
				saw := clientSaw(t, r.client, true, body)
				if held && !slices.Equal(saw.calls, []string{"get_weather"}) {
					t.Fatalf("the harness read %+v", saw)
				}
			})
		}
	}
}
