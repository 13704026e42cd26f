package proxy

import (
	"net/http"
	"regexp"
	"strconv"
	"testing"
	"time"

	"github.com/perpetuity/perpetuity/e2e/fakeprovider"
)

// TestServerTiming: a proxied answer says how long memory and the provider
// took, each measured apart from the other.
func TestServerTiming(t *testing.T) {
	t.Parallel()
	const frameTakes, providerTakes = 30 * time.Millisecond, 150 * time.Millisecond
	const openaiAuth, anthropicAuth = "Authorization: Bearer sk-test", "X-Api-Key: sk-ant-test"
	tests := []struct {
		name, path, body string
		headers          []string
		providerStatus   int // 0: the provider answers
		memory, frame    bool
	}{
		{"chat whole", "/v1/chat/completions", chatBody("gpt-4o", false), []string{openaiAuth}, 0, true, true},
		{"chat stream", "/v1/chat/completions", chatBody("gpt-4o", true), []string{openaiAuth}, 0, true, true},
		{"messages stream", "/v1/messages", messagesBody("claude-sonnet-4-5", true), []string{anthropicAuth}, 0, true, true},
		{"messages to an OpenAI model, translated", "/v1/messages", messagesBody("gpt-4o", true), []string{openaiAuth}, 0, true, true},
		{"messages whole, capture only", "/v1/messages", messagesBody("claude-sonnet-4-5", false), []string{anthropicAuth, HeaderRecall + ": off"}, 0, true, false},
		{"probe", "/v1/chat/completions", chatBody("gpt-4o", false), []string{openaiAuth, HeaderMode + ": probe"}, 0, true, true},
		{"no memory work", "/v1/chat/completions", chatBody("gpt-4o", true), []string{openaiAuth, HeaderRecall + ": off", HeaderCapture + ": off"}, 0, false, false},
		{"provider error", "/v1/chat/completions", chatBody("gpt-4o", false), []string{openaiAuth}, http.StatusInternalServerError, true, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			tp := newTestProxy(t)
			tp.mem.frameDelay = frameTakes
			for _, up := range []upstreamServer{tp.openai, tp.anthropic} {
				up.Script(fakeprovider.Reply{Text: "Miso is black.", FirstByteDelay: providerTakes, Status: tt.providerStatus})
			}
			status, h, body := tp.post(tt.path, tt.body, tt.headers...)
			defer tp.settle(1)
			st := h.Get(HeaderServerTiming)
			if tt.providerStatus != 0 {
				// An error is the proxy's answer, whatever the provider said.
				if status != tt.providerStatus || st != "" {
					t.Fatalf("status %d, Server-Timing %q; want %d and none", status, st, tt.providerStatus)
				}
				return
			}
			if status != http.StatusOK {
				t.Fatalf("status %d: %s", status, body)
			}
			got := map[string]float64{}
			for _, m := range regexp.MustCompile(`(\w+);dur=([0-9.]+)`).FindAllStringSubmatch(st, -1) {
				got[m[1]], _ = strconv.ParseFloat(m[2], 64)
			}
			up, ok := got["upstream"]
			if !ok || up < ms(providerTakes) {
				t.Errorf("Server-Timing %q: upstream must be there and at least the provider's %v", st, providerTakes)
			}
			fwd, ok := got["forward"]
			if !ok || fwd >= up || fwd < got["memory"] {
				t.Errorf("Server-Timing %q: forward must be there, hold memory's time and not the provider's", st)
			}
			mem, ok := got["memory"]
			if ok != tt.memory {
				t.Fatalf("Server-Timing %q: memory reported %v, want %v", st, ok, tt.memory)
			}
			// Capture alone builds no frame; with the frame, memory holds
			// its time and none of the provider's.
			if tt.frame && (mem < ms(frameTakes) || mem >= up) {
				t.Errorf("Server-Timing %q: memory must hold the frame's %v and not the provider's %v", st, frameTakes, providerTakes)
			}
		})
	}
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
