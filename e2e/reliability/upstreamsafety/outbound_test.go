package upstreamsafety

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/perpetuity/perpetuity/e2e/reliability/figure"
)

const (
	openAISecret    = "sk-proj-openai-secret-106"
	anthropicSecret = "sk-ant-api03-anthropic-secret-106"
	cookieSecret    = "console-session-secret-106"
)

// carried are what a client may send that no provider should get: its
// cookies (the console's session is on the same origin), Perpetuity's own
// headers, where it connected from, headers gateways obey as another
// method or path, and credentials for other services.
var carried = []string{
	"Cookie: perpetuity_session=" + cookieSecret + "; theme=dark",
	"X-Perpetuity-User: default", // the user the key is bound to
	"X-Perpetuity-Conversation: trip-106",
	"X-Forwarded-For: 10.1.2.3",
	"X-Forwarded-Host: console.internal",
	"Forwarded: for=10.1.2.3;host=console.internal",
	"X-Real-Ip: 10.1.2.3",
	"X-Original-Url: /admin",
	"X-Http-Method-Override: DELETE",
	"Origin: http://console.internal",
	"Referer: http://console.internal/keys",
	"Api-Key: azure-secret-106",
	"X-Goog-Api-Key: google-secret-106",
}

// dropped names the headers of carried (and the credential headers) by
// canonical name, to tell them in what the provider got.
var dropped = []string{"Cookie", "Forwarded", "X-Forwarded-For", "X-Forwarded-Host", "X-Real-Ip", "X-Original-Url",
	"X-Http-Method-Override", "Origin", "Referer", "Api-Key", "X-Goog-Api-Key", "Proxy-Authorization"}

// TestOutboundHeaders (issue 15, finding 6): with both providers' keys, a
// cookie, Perpetuity's headers and forwarding headers on every request,
// the provider addressed gets only its own credential, on every route.
func TestOutboundHeaders(t *testing.T) {
	w := startWorld(t)
	w.up.Answer(w.fake.ServeHTTP)
	repeats := figure.N(30, 3)
	both := []string{"Authorization: Bearer " + openAISecret, "X-Api-Key: " + anthropicSecret}
	chat := func(model, extra string) string {
		return `{"model":"` + model + `","messages":[{"role":"user","content":"hello there"}]` + extra + `}`
	}
	msgs := func(model, extra string) string {
		return `{"model":"` + model + `","max_tokens":50,"messages":[{"role":"user","content":"hello there"}]` + extra + `}`
	}
	cases := []struct {
		name, method, path, body string
		creds                    []string
		toAnthropic              bool
	}{
		{"chat", "POST", "/v1/chat/completions", chat("gpt-4o", ""), both, false},
		{"chat stream", "POST", "/v1/chat/completions", chat("gpt-4o", `,"stream":true`), both, false},
		{"chat to anthropic", "POST", "/v1/chat/completions", chat("claude-sonnet-4-5", ""), both, true},
		{"messages", "POST", "/v1/messages", msgs("claude-sonnet-4-5", ""), append([]string{anthVersion}, both...), true},
		{"messages stream", "POST", "/v1/messages", msgs("claude-sonnet-4-5", `,"stream":true`), append([]string{anthVersion}, both...), true},
		{"messages to openai", "POST", "/v1/messages", msgs("gpt-4o", ""), both, false},
		{"responses", "POST", "/v1/responses", `{"model":"gpt-4o","input":"hello there"}`, both, false},
		// Pass-through reads the provider from the headers: an x-api-key
		// makes an Anthropic caller.
		{"pass-through count_tokens", "POST", "/v1/messages/count_tokens", msgs("claude-sonnet-4-5", ""), append([]string{anthVersion}, both...), true},
		{"pass-through models, both keys", "GET", "/v1/models", "", both, true},
		{"pass-through models", "GET", "/v1/models", "", []string{"Authorization: Bearer " + openAISecret}, false},
		{"pass-through embeddings", "POST", "/v1/embeddings", `{"model":"text-embedding-3-small","input":"x"}`, []string{"Authorization: Bearer " + openAISecret}, false},
	}
	var sent, foreignCred, cookies, perpetuity, others, rightCred int
	var problems []string
	note := func(format string, args ...any) {
		if len(problems) < 40 {
			problems = append(problems, fmt.Sprintf(format, args...))
		}
	}
	for range repeats {
		for _, c := range cases {
			headers := append(append([]string{jsonType, "User-Agent: upstreamsafety/1", "X-Stainless-Lang: go"}, c.creds...), carried...)
			before := w.up.Count()
			res := w.do(c.method, c.path, c.body, headers...)
			sent++
			if res.Status != http.StatusOK {
				note("%s: status %d %.200q", c.name, res.Status, res.Body)
			}
			hits := w.up.Hits(before)
			if len(hits) != 1 {
				note("%s: the provider got %d requests", c.name, len(hits))
			}
			for _, h := range hits {
				own, ownHeader, otherHeader, foreign := "Bearer "+openAISecret, "Authorization", "X-Api-Key", anthropicSecret
				if c.toAnthropic {
					own, ownHeader, otherHeader, foreign = anthropicSecret, "X-Api-Key", "Authorization", openAISecret
				}
				all := flatten(h.Header)
				if strings.Contains(all, foreign) || h.Header.Get(otherHeader) != "" {
					foreignCred++
					note("%s: the other provider's credential reached the provider (%s %q)", c.name, otherHeader, h.Header.Get(otherHeader))
				}
				if h.Header.Get(ownHeader) == own {
					rightCred++
				} else {
					note("%s: %s is %q, want the provider's own credential", c.name, ownHeader, h.Header.Get(ownHeader))
				}
				if h.Header.Get("Cookie") != "" || strings.Contains(all, cookieSecret) {
					cookies++
					note("%s: the cookie reached the provider", c.name)
				}
				for k := range h.Header {
					if strings.HasPrefix(k, "X-Perpetuity-") {
						perpetuity++
						note("%s: %s reached the provider", c.name, k)
					}
				}
				if strings.Contains(all, w.key) {
					perpetuity++
					note("%s: the Perpetuity key reached the provider", c.name)
				}
				for _, k := range dropped {
					if k != "Cookie" && h.Header.Get(k) != "" {
						others++
						note("%s: %s: %q reached the provider", c.name, k, h.Header.Get(k))
					}
				}
			}
		}
	}
	pass := foreignCred == 0 && cookies == 0 && perpetuity == 0 && others == 0 && rightCred == sent
	figure.Record(t, figure.Figure{
		Item: 106, Name: "Outbound header policy",
		Figure: fmt.Sprintf("%d requests (%d cases x %d) carrying both providers' keys or one, a cookie, X-Perpetuity-* and forwarding, "+
			"override and other services' credential headers: foreign credentials reaching the provider %d, cookies %d, Perpetuity headers or key %d, "+
			"other dropped headers %d; the provider's own credential in its header %d/%d",
			sent, len(cases), repeats, foreignCred, cookies, perpetuity, others, rightCred, sent),
		Target: "0 foreign credentials, 0 cookies, 0 Perpetuity headers reaching the provider; its own credential every time",
		Pass:   pass,
		Details: "Real binary, raw HTTP; every provider at one recording local listener answering like the fake provider. Each request carries " +
			"Authorization: Bearer (OpenAI key) and x-api-key (Anthropic key) together (or only the OpenAI key, for OpenAI pass-through), " +
			"Cookie (a console session), X-Perpetuity-User and -Conversation, X-Forwarded-For/-Host, Forwarded, X-Real-Ip, X-Original-Url, " +
			"X-Http-Method-Override, Origin, Referer, Api-Key and X-Goog-Api-Key, on chat (streamed and not), chat to Anthropic, messages (streamed " +
			"and not), messages to OpenAI, responses and pass-through count_tokens/models/embeddings. Checked in every request the provider got: " +
			"the other provider's key anywhere in its headers, a cookie, any X-Perpetuity-* header or the Perpetuity key, any of the other headers, " +
			"and the addressed provider's key in the header it reads.",
	})
	if !pass {
		t.Errorf("item 106 missed its target")
	}
	for _, p := range problems {
		t.Error(p)
	}
}

func flatten(h http.Header) string {
	var b strings.Builder
	for k, vs := range h {
		b.WriteString(k + ": " + strings.Join(vs, ", ") + "\n")
	}
	return b.String()
}
