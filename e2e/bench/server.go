package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/perpetuity/perpetuity/e2e/fakeprovider"
)

// StartFunc runs Perpetuity in-process against databaseURL, with
// openAIBase as its OpenAI upstream, and returns its base URL and a stop
// function.
type StartFunc func(ctx context.Context, databaseURL, openAIBase string) (baseURL string, stop func(), err error)

// rig is the fake provider and the server under test.
type rig struct {
	fake     *fakeprovider.Provider
	upstream *httptest.Server
	// hop is the plainest Go proxy (hop.go) in front of the fake provider:
	// what one more HTTP hop costs on this machine.
	hop    *httptest.Server
	base   string // Perpetuity's base URL
	stop   func()
	client *http.Client
	// served counts the requests the fake provider answered, whoever sent
	// them: how the bench knows a peer gateway really forwarded.
	served *atomic.Int64
	// lastBody is the body size of the request the fake provider answered
	// last: at concurrency 1, the one the last call made it send.
	lastBody *atomic.Int64
}

// replyWords is what the fake answers: Chunks words, streamed one per delta.
func replyWords(n int) string {
	ws := make([]string, n)
	for i := range ws {
		ws[i] = "word" + strconv.Itoa(i)
	}
	return strings.Join(ws, " ")
}

// startRig starts the fake provider with a fixed reply (the same for both
// sides of every comparison, so its own latency cancels out) and the server
// pointed at it.
func startRig(ctx context.Context, start StartFunc, dbURL string, chunks int, chunkDelay time.Duration) (*rig, error) {
	fake := fakeprovider.New()
	reply := fakeprovider.Reply{Text: replyWords(chunks), Chunks: chunks, ChunkDelay: chunkDelay}
	served, lastBody := new(atomic.Int64), new(atomic.Int64)
	slow := reply
	slow.FirstByteDelay = thinkingTime
	fake.SetDefault(func(rec fakeprovider.Recorded) fakeprovider.Reply {
		lastBody.Store(int64(len(rec.Body)))
		if served.Add(1)%256 == 0 {
			fake.Reset() // the fake records every request; the bench needs none of them
		}
		if rec.Model == thinkingModel {
			return slow
		}
		return reply
	})
	up := httptest.NewServer(fake)
	hop := httptest.NewServer(newHop(up.URL))
	base, stop, err := start(ctx, dbURL, up.URL+"/v1")
	if err != nil {
		hop.Close()
		up.Close()
		return nil, fmt.Errorf("start perpetuity: %w", err)
	}
	return &rig{fake: fake, upstream: up, hop: hop, base: base, stop: stop, client: newClient(128), served: served, lastBody: lastBody}, nil
}

func (r *rig) close() {
	r.client.CloseIdleConnections()
	r.stop()
	r.hop.Close()
	r.upstream.Close()
}

// direct is the fake provider's chat endpoint, called as a harness would.
func (r *rig) direct() Endpoint {
	return Endpoint{URL: r.upstream.URL + "/v1/chat/completions", Header: chatHeader()}
}

// viaHop is the same endpoint through the plainest Go proxy.
func (r *rig) viaHop() Endpoint {
	return Endpoint{URL: r.hop.URL + "/v1/chat/completions", Header: chatHeader()}
}

// proxied is the same endpoint through Perpetuity with key; extra headers
// are Perpetuity switches.
func (r *rig) proxied(key string, extra ...string) Endpoint {
	h := chatHeader()
	for i := 0; i+1 < len(extra); i += 2 {
		h.Set(extra[i], extra[i+1])
	}
	return Endpoint{URL: r.base + "/k/" + key + "/v1/chat/completions", Header: h}
}

func chatHeader() http.Header {
	h := http.Header{}
	h.Set("Content-Type", "application/json")
	h.Set("Authorization", "Bearer sk-bench-fake")
	return h
}

// thinkingModel is the model name for which the fake provider waits
// thinkingTime before it answers, as a real one takes time to answer
// (§2's row "provider answers in 20 ms"): whatever the server does after a
// reply then has the provider's time to be done in, as in use.
const (
	benchModel    = "gpt-4o-mini"
	thinkingModel = "gpt-4o-mini-thinking"
	thinkingTime  = 20 * time.Millisecond
)

// chatBody is a small but typical chat request: a system prompt, one
// earlier exchange and the live question.
func chatBody(live string, stream bool) []byte { return chatBodyFor(benchModel, live, stream) }

// paddedChatBody is chatBodyFor with a second system message of plain
// words making it size bytes (or as it is, if it is that long already): a
// direct request as large as the proxied one with its frame.
func paddedChatBody(model, live string, size int) []byte {
	base := chatBodyFor(model, live, false)
	pad := size - len(base) - len(`{"role":"system","content":""},`)
	if pad <= 0 {
		return base
	}
	return chatBodyWith(model, live, false, strings.Repeat("remembered earlier in the conversation ", pad/39+1)[:pad])
}

// chatBodyFor is chatBody asking for model.
func chatBodyFor(model, live string, stream bool) []byte {
	return chatBodyWith(model, live, stream, "")
}

// chatBodyWith is chatBodyFor with extra, when not empty, as a second
// system message.
func chatBodyWith(model, live string, stream bool, extra string) []byte {
	msgs := []map[string]string{{"role": "system", "content": "You are a helpful assistant. Answer briefly and cite what you remember."}}
	if extra != "" {
		msgs = append(msgs, map[string]string{"role": "system", "content": extra})
	}
	msgs = append(msgs,
		map[string]string{"role": "user", "content": "Good morning! Can you help me plan the week?"},
		map[string]string{"role": "assistant", "content": "Of course. Tell me what is on your calendar and what matters most."},
		map[string]string{"role": "user", "content": live})
	b, _ := json.Marshal(map[string]any{"model": model, "max_tokens": 256, "stream": stream, "messages": msgs})
	return b
}
