package proxy

import (
	"net/http"
	"strings"
)

// anthropicVersion is sent to Anthropic when the caller did not say: OpenAI
// clients know nothing of the header, and the API requires it.
const anthropicVersion = "2023-06-01"

// isHopHeader reports the headers never copied between client and provider.
func isHopHeader(k string) bool {
	switch k {
	case "Connection", "Proxy-Connection", "Keep-Alive", "Proxy-Authenticate", "Proxy-Authorization", "Te",
		"Trailer", "Transfer-Encoding", "Upgrade", "Host", "Content-Length", "Accept-Encoding", "Content-Encoding":
		return true
	}
	return false
}

// outboundHeaders copies the caller's headers for the provider: its
// credential passes through untouched; Perpetuity's own headers stay here.
func outboundHeaders(src http.Header) http.Header {
	dst := make(http.Header, len(src))
	for k, vs := range src {
		if isHopHeader(k) || strings.HasPrefix(k, "X-Perpetuity-") {
			continue
		}
		dst[k] = append([]string(nil), vs...)
	}
	return dst
}

// upstreamHeaders are the caller's headers as the chosen provider expects
// them: only the credential it reads, in the header it reads it from, and
// none of the other dialect's headers.
func upstreamHeaders(src http.Header, tg target) http.Header {
	h := outboundHeaders(src)
	h.Del("Authorization")
	h.Del("X-Api-Key")
	switch tg.prov.dialect {
	case AnthropicMessages:
		for k := range h {
			if strings.HasPrefix(k, "Openai-") {
				delete(h, k)
			}
		}
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
		for k := range h {
			if strings.HasPrefix(k, "Anthropic-") {
				delete(h, k)
			}
		}
		if tg.cred.present() {
			h.Set("Authorization", "Bearer "+tg.cred.value)
		}
	}
	h.Set("Content-Type", "application/json")
	return h
}

// isAnthropicOAuth tells Anthropic's OAuth access tokens, which go in
// Authorization, from its API keys, which go in x-api-key.
func isAnthropicOAuth(k string) bool { return strings.HasPrefix(k, "sk-ant-oat") }

func copyResponseHeaders(dst, src http.Header) {
	for k, vs := range src {
		if isHopHeader(k) {
			continue
		}
		dst[k] = append([]string(nil), vs...)
	}
}
