package provider

import (
	"net/http"
	"strings"

	"github.com/perpetuity/perpetuity/proxy/dialect"
)

// anthropicVersion is sent to Anthropic when the caller did not say: OpenAI
// clients know nothing of the header, and the API requires it.
const anthropicVersion = "2023-06-01"

// Outbound is the one policy for what a provider gets of the
// caller's headers, on every route (chat, messages, responses and
// pass-through): the credential the provider reads, in the header it reads
// it from, and the few headers of its dialect that SDKs and harnesses send
// on purpose. Everything else stays here.
//
// It is an allowlist, not a list of what to strip, because what must not
// travel has no closed set of names: cookies (the console's session is on
// the same origin), Perpetuity's own headers, the other provider's key,
// credentials for other services in headers of every vendor's naming
// (api-key, x-goog-api-key, ...), where the client connected from
// (Forwarded, X-Forwarded-*, X-Real-Ip), and headers some gateways obey as
// another method or path (X-Http-Method-Override, X-Original-Url), which
// would undo the pass-through's path and method checks.
func Outbound(src http.Header, tg Target) http.Header {
	h := make(http.Header, 8)
	for k, vs := range src {
		if allowedOutbound(k, tg.Provider) {
			h[k] = append([]string(nil), vs...)
		}
	}
	switch tg.Provider.Dialect {
	case dialect.AnthropicMessages:
		switch {
		case !tg.cred.present():
		case !tg.cred.bearer || tg.cred.kind == keyAnthropic && !isAnthropicOAuth(tg.cred.value):
			h.Set("X-Api-Key", tg.cred.value)
		default:
			// A Bearer token of another shape (an OAuth access token) is
			// what Anthropic expects in Authorization.
			h.Set("Authorization", "Bearer "+tg.cred.value)
		}
		if h.Get("Anthropic-Version") == "" {
			h.Set("Anthropic-Version", anthropicVersion)
		}
	default:
		if tg.cred.present() {
			h.Set("Authorization", "Bearer "+tg.cred.value)
		}
	}
	return h
}

// allowedOutbound reports a caller header (canonical name) the provider
// may get. The credential headers are not among them: Outbound sets
// the one credential the provider reads.
func allowedOutbound(k string, pr Provider) bool {
	switch k {
	case "Accept", "User-Agent", "Content-Type", "Idempotency-Key":
		return true
	}
	// Stainless builds the official SDKs of both providers; these describe
	// the SDK (language, version, retry count, timeout).
	if strings.HasPrefix(k, "X-Stainless-") {
		return true
	}
	if pr.Dialect == dialect.AnthropicMessages {
		// anthropic-version, anthropic-beta, ...; X-App names the harness
		// (Claude Code sends it).
		return strings.HasPrefix(k, "Anthropic-") || k == "X-App"
	}
	switch k {
	case "X-Client-Request-Id":
		return true
	case "Http-Referer", "X-Title":
		// OpenRouter's documented app attribution.
		return pr.Name == "openrouter"
	}
	// openai-organization, openai-project, openai-beta.
	return strings.HasPrefix(k, "Openai-")
}

// UpstreamHeaders are the headers of a request the pipeline renders:
// Outbound, with the body's type, which is always JSON.
func UpstreamHeaders(src http.Header, tg Target) http.Header {
	h := Outbound(src, tg)
	h.Set("Content-Type", "application/json")
	return h
}

// isAnthropicOAuth tells Anthropic's OAuth access tokens, which go in
// Authorization, from its API keys, which go in x-api-key.
func isAnthropicOAuth(k string) bool { return strings.HasPrefix(k, "sk-ant-oat") }
