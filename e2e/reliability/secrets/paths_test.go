package secrets

import (
	"fmt"
	"net/http"
	"strings"
	"time"
)

// maxBody is the server's PERPETUITY_MAX_BODY_BYTES in this test: small,
// so the 413 path needs no large bodies.
const maxBody = 8192

// keyRPM is the server's PERPETUITY_KEY_RPM: above what any other path
// sends on its key, so only the rate-limit path meets it.
const keyRPM = 15

// failurePath is one way a request can end; run sends its requests with
// the path's own canaries.
type failurePath struct {
	name string
	run  func(w *world, c canaries)
}

func chatBody(model, text string, stream bool) string {
	return fmt.Sprintf(`{"model":%q,"stream":%v,"messages":[{"role":"user","content":%q}]}`, model, stream, text)
}

func messagesBody(model, text string, stream bool) string {
	return fmt.Sprintf(`{"model":%q,"max_tokens":64,"stream":%v,"messages":[{"role":"user","content":%q}]}`, model, stream, text)
}

// openai is an OpenAI-dialect request with the key in the URL path and the
// provider key as a Bearer token.
func openai(c canaries, _ string) http.Header {
	return jsonHeader("Authorization", "Bearer "+c.openai)
}

// anthropic is an Anthropic-dialect request with the key in
// X-Perpetuity-Key and the provider key in x-api-key.
func anthropic(c canaries, key string) http.Header {
	return jsonHeader("X-Perpetuity-Key", key, "x-api-key", c.anthropic, "anthropic-version", "2023-06-01")
}

const marker2xx = "secrets-2xx-marker-turn"

func paths() []failurePath {
	return []failurePath{
		{"2xx", func(w *world, c canaries) {
			k := c.ppk
			w.do(c.path, call{what: "chat", path: "/k/" + k + "/v1/chat/completions", header: openai(c, k), body: body(chatBody("gpt-4o-mini", marker2xx+" chat", false)), want: 200})
			w.do(c.path, call{what: "chat stream", path: "/k/" + k + "/v1/chat/completions", header: openai(c, k), body: body(chatBody("gpt-4o-mini", marker2xx+" chat stream", true)), want: 200})
			w.do(c.path, call{what: "messages", path: "/v1/messages", header: anthropic(c, k), body: body(messagesBody("claude-sonnet-4-5", marker2xx+" messages", false)), want: 200})
			w.do(c.path, call{what: "messages stream", path: "/v1/messages", header: anthropic(c, k), body: body(messagesBody("claude-sonnet-4-5", marker2xx+" messages stream", true)), want: 200})
			w.do(c.path, call{what: "responses", path: "/k/" + k + "/v1/responses", header: openai(c, k), body: body(`{"model":"gpt-4o","input":"` + marker2xx + ` responses"}`), want: 200})
			// Chat dialect for an Anthropic model: the x-api-key crosses over.
			h := openai(c, k)
			h.Set("X-Api-Key", c.anthropic)
			w.do(c.path, call{what: "chat to anthropic", path: "/k/" + k + "/v1/chat/completions", header: h, body: body(chatBody("claude-sonnet-4-5", marker2xx+" crossing", false)), want: 200})
			w.do(c.path, call{what: "models passthrough", method: http.MethodGet, path: "/k/" + k + "/v1/models", header: openai(c, k), want: 200})
			w.do(c.path, call{what: "count_tokens passthrough", path: "/v1/messages/count_tokens", header: anthropic(c, k), body: body(`{"model":"claude-sonnet-4-5","messages":[{"role":"user","content":"count me"}]}`), want: 200})
			imp := `{"conversation":"secrets-import","turns":[{"role":"user","text":"` + marker2xx + ` import","at":"2024-01-02T03:04:05Z"}]}` + "\n"
			w.do(c.path, call{what: "import", path: "/k/" + k + "/perpetuity/import", header: openai(c, k), body: body(imp), want: 200})
		}},
		{"401 bad key", func(w *world, c canaries) {
			f := c.fake
			w.do(c.path, call{what: "chat, fake key in path", path: "/k/" + f + "/v1/chat/completions", header: openai(c, f), body: body(chatBody("gpt-4o", "hello", false)), want: 401})
			w.do(c.path, call{what: "messages, fake key in header", path: "/v1/messages", header: anthropic(c, f), body: body(messagesBody("claude-sonnet-4-5", "hello", true)), want: 401})
			w.do(c.path, call{what: "responses, fake key", path: "/k/" + f + "/v1/responses", header: openai(c, f), body: body(`{"model":"gpt-4o","input":"hi"}`), want: 401})
			w.do(c.path, call{what: "models, fake key", method: http.MethodGet, path: "/k/" + f + "/v1/models", header: openai(c, f), want: 401})
			w.do(c.path, call{what: "import, fake key", path: "/k/" + f + "/perpetuity/import", header: openai(c, f), body: body("{}\n"), want: 401})
			// The real key where the provider key belongs, and none where
			// the Perpetuity key belongs: refused before anything is sent on.
			w.do(c.path, call{what: "real key as Bearer, no Perpetuity key", path: "/v1/chat/completions", header: jsonHeader("Authorization", "Bearer "+c.ppk), body: body(chatBody("gpt-4o", "hello", false)), want: 401})
			w.do(c.path, call{what: "real key as x-api-key, no Perpetuity key", path: "/v1/messages", header: jsonHeader("x-api-key", c.ppk, "anthropic-version", "2023-06-01"), body: body(messagesBody("claude-sonnet-4-5", "hello", false)), want: 401})
		}},
		{"404 unknown route", func(w *world, c canaries) {
			k := c.ppk
			w.do(c.path, call{what: "unknown under /k", method: http.MethodGet, path: "/k/" + k + "/nope", header: openai(c, k), want: 404})
			w.do(c.path, call{what: "v2 with fake key", path: "/k/" + c.fake + "/v2/chat/completions", header: openai(c, c.fake), body: body("{}"), want: 404})
			w.do(c.path, call{what: "unknown perpetuity route", method: http.MethodGet, path: "/k/" + k + "/perpetuity/nope", header: openai(c, k), want: 404})
			w.do(c.path, call{what: "key as a top-level path", method: http.MethodGet, path: "/" + k, header: anthropic(c, k), want: 404})
			// Passed through, and the provider's own 404 comes back.
			w.do(c.path, call{what: "unknown provider path", method: http.MethodGet, path: "/k/" + k + "/v1/nope", header: openai(c, k), want: 404})
		}},
		{"413 body too large", func(w *world, c canaries) {
			k := c.ppk
			big := strings.Repeat("x", 2*maxBody)
			w.do(c.path, call{what: "chat", path: "/k/" + k + "/v1/chat/completions", header: openai(c, k), body: body(chatBody("gpt-4o", big, false)), want: 413})
			w.do(c.path, call{what: "messages", path: "/v1/messages", header: anthropic(c, k), body: body(messagesBody("claude-sonnet-4-5", big, false)), want: 413})
			w.do(c.path, call{what: "responses", path: "/k/" + k + "/v1/responses", header: openai(c, k), body: body(`{"model":"gpt-4o","input":"` + big + `"}`), want: 413})
			w.do(c.path, call{what: "import", path: "/k/" + k + "/perpetuity/import", header: openai(c, k), body: body(big), want: 413})
			// A key that is not one is refused before its body is read.
			w.do(c.path, call{what: "fake key", path: "/k/" + c.fake + "/v1/chat/completions", header: openai(c, c.fake), body: body(chatBody("gpt-4o", big, false)), want: 401})
		}},
		{"429 upstream", func(w *world, c canaries) {
			k := c.ppk
			w.do(c.path, call{what: "chat", path: "/k/" + k + "/v1/chat/completions", header: openai(c, k), body: body(chatBody("gpt-4o", mark429, false)), want: 429})
			w.do(c.path, call{what: "chat stream", path: "/k/" + k + "/v1/chat/completions", header: openai(c, k), body: body(chatBody("gpt-4o", mark429, true)), want: 429})
			w.do(c.path, call{what: "messages", path: "/v1/messages", header: anthropic(c, k), body: body(messagesBody("claude-sonnet-4-5", mark429, false)), want: 429})
			w.do(c.path, call{what: "messages stream", path: "/v1/messages", header: anthropic(c, k), body: body(messagesBody("claude-sonnet-4-5", mark429, true)), want: 429})
		}},
		{"upstream 5xx", func(w *world, c canaries) {
			k := c.ppk
			w.do(c.path, call{what: "chat 500", path: "/k/" + k + "/v1/chat/completions", header: openai(c, k), body: body(chatBody("gpt-4o", mark500, false)), want: 500})
			w.do(c.path, call{what: "chat stream 503", path: "/k/" + k + "/v1/chat/completions", header: openai(c, k), body: body(chatBody("gpt-4o", mark503, true)), want: 503})
			w.do(c.path, call{what: "messages 529", path: "/v1/messages", header: anthropic(c, k), body: body(messagesBody("claude-sonnet-4-5", mark529, false)), want: 529})
			w.do(c.path, call{what: "messages stream 500", path: "/v1/messages", header: anthropic(c, k), body: body(messagesBody("claude-sonnet-4-5", mark500, true)), want: 500})
			w.do(c.path, call{what: "unreachable upstream", path: "/k/" + k + "/v1/chat/completions", header: openai(c, k), body: body(chatBody("dead-model", "hello", false)), want: 502})
			w.do(c.path, call{what: "stream cut mid-way", path: "/k/" + k + "/v1/chat/completions", header: openai(c, k), body: body(chatBody("gpt-4o", markCut, true)), want: 200})
			w.do(c.path, call{what: "in-band error", path: "/v1/messages", header: anthropic(c, k), body: body(messagesBody("claude-sonnet-4-5", markInBand, true)), want: 200})
		}},
		{"upstream timeout", func(w *world, c canaries) {
			// The proxy has no upstream timeout of its own (streams last as
			// long as the model talks); the client's deadline ends the call.
			k := c.ppk
			w.do(c.path, call{what: "chat", path: "/k/" + k + "/v1/chat/completions", header: openai(c, k), body: body(chatBody("gpt-4o", markSlow, false)), timeout: 500 * time.Millisecond, want: 0})
			w.do(c.path, call{what: "messages stream", path: "/v1/messages", header: anthropic(c, k), body: body(messagesBody("claude-sonnet-4-5", markSlow, true)), timeout: 500 * time.Millisecond, want: 0})
		}},
		{"malformed JSON", func(w *world, c canaries) {
			k := c.ppk
			w.do(c.path, call{what: "chat", path: "/k/" + k + "/v1/chat/completions", header: openai(c, k), body: body(`{"model":"gpt-4o","messages":[`), want: 400})
			w.do(c.path, call{what: "messages", path: "/v1/messages", header: anthropic(c, k), body: body(`{"model":`), want: 400})
			w.do(c.path, call{what: "responses", path: "/k/" + k + "/v1/responses", header: openai(c, k), body: body(`not json`), want: 400})
			w.do(c.path, call{what: "wrong types", path: "/k/" + k + "/v1/chat/completions", header: openai(c, k), body: body(`{"model":5,"messages":"hi"}`), want: 400})
			w.do(c.path, call{what: "import", path: "/k/" + k + "/perpetuity/import", header: openai(c, k), body: body("{not json\n"), want: 400})
			w.do(c.path, call{what: "fake key", path: "/k/" + c.fake + "/v1/chat/completions", header: openai(c, c.fake), body: body(`{"model"`), want: 401})
		}},
		{"Perpetuity key as the provider key", func(w *world, c canaries) {
			// An SDK wants an api_key; a user gives it the Perpetuity key.
			// The proxy knows its own key shape and must not pass it on to
			// a provider.
			k := c.ppk
			w.do(c.path, call{what: "chat, Bearer ppk", path: "/k/" + k + "/v1/chat/completions", header: jsonHeader("Authorization", "Bearer "+k), body: body(chatBody("gpt-4o", "hello", false)), want: 401})
			w.do(c.path, call{what: "messages, x-api-key ppk", path: "/v1/messages", header: jsonHeader("X-Perpetuity-Key", k, "x-api-key", k, "anthropic-version", "2023-06-01"), body: body(messagesBody("claude-sonnet-4-5", "hello", true)), want: 401})
			w.do(c.path, call{what: "responses, Bearer ppk", path: "/k/" + k + "/v1/responses", header: jsonHeader("Authorization", "Bearer "+k), body: body(`{"model":"gpt-4o","input":"hi"}`), want: 401})
			w.do(c.path, call{what: "models, Bearer ppk", method: http.MethodGet, path: "/k/" + k + "/v1/models", header: jsonHeader("Authorization", "Bearer "+k), want: 401})
			w.do(c.path, call{what: "count_tokens, x-api-key ppk", path: "/v1/messages/count_tokens", header: jsonHeader("X-Perpetuity-Key", k, "x-api-key", k, "anthropic-version", "2023-06-01"), body: body(`{"model":"claude-sonnet-4-5","messages":[{"role":"user","content":"count me"}]}`), want: 401})
			w.do(c.path, call{what: "chat, Bearer with another ppk", path: "/k/" + k + "/v1/chat/completions", header: jsonHeader("Authorization", "Bearer "+c.fake), body: body(chatBody("gpt-4o", "hello", false)), want: 401})
		}},
		{"429 proxy rate limit", func(w *world, c canaries) {
			// PERPETUITY_KEY_RPM is keyRPM: the key's bucket runs dry and
			// the proxy answers 429 itself, before anything is forwarded.
			k := c.ppk
			limited := false
			for i := 0; i < keyRPM+5 && !limited; i++ {
				x := w.do(c.path, call{what: "chat until limited", path: "/k/" + k + "/v1/chat/completions", header: openai(c, k), body: body(chatBody("gpt-4o", "spend", false)), any: true})
				limited = x.status == http.StatusTooManyRequests
			}
			if !limited {
				w.t.Errorf("429 proxy rate limit: %d requests on one key and no 429", keyRPM+5)
			}
			w.do(c.path, call{what: "messages", path: "/v1/messages", header: anthropic(c, k), body: body(messagesBody("claude-sonnet-4-5", "spend", true)), want: 429})
			w.do(c.path, call{what: "models", method: http.MethodGet, path: "/k/" + k + "/v1/models", header: openai(c, k), want: 429})
		}},
		{"upstream 401 echoing the credential", func(w *world, c canaries) {
			k := c.ppk
			w.do(c.path, call{what: "chat", path: "/k/" + k + "/v1/chat/completions", header: openai(c, k), body: body(chatBody("gpt-4o", markEchoAuth, false)), want: 401})
			w.do(c.path, call{what: "messages stream", path: "/v1/messages", header: anthropic(c, k), body: body(messagesBody("claude-sonnet-4-5", markEchoAuth, true)), want: 401})
		}},
	}
}

// echoPath's responses carry the provider key back to the client that sent
// it, because the upstream put it in its error body and the proxy relays
// upstream errors as they came; that one place is exempt for that one key.
const echoPath = "upstream 401 echoing the credential"
