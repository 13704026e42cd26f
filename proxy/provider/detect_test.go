package provider

import (
	"net/http"
	"strings"
	"testing"
)

func testProviders() Set {
	return NewSet(Config{
		OpenAIBaseURL: "http://openai.test/v1", AnthropicBaseURL: "http://anthropic.test", OpenRouterBaseURL: "http://openrouter.test/api/v1",
		Upstreams: []Upstream{
			{Name: "vllm", BaseURL: "http://vllm.test/v1", Prefixes: []string{"llama-", "meta-llama/", "gpt-oss"}},
			{Name: "gemini", BaseURL: "http://gemini.test/v1beta/openai", Prefixes: []string{"gemini-"}},
		},
	})
}

func hdr(kv ...string) http.Header {
	h := http.Header{}
	for i := 0; i+1 < len(kv); i += 2 {
		h.Set(kv[i], kv[i+1])
	}
	return h
}

// TestDetect covers every detection rule (see doc.go), the credential
// each provider is given, and the 400s.
func TestDetect(t *testing.T) {
	t.Parallel()
	const bearer, xkey = "Authorization", "X-Api-Key"
	cases := []struct {
		rule, model string
		h           http.Header
		provider    string // "" means a 400
		cred        string // the key that goes upstream
		credBearer  bool
		errHas      []string
	}{
		// 1. URL-looking model names are refused.
		{"url model", "http://evil.test/v1", hdr(bearer, "Bearer sk-proj-a"), "", "", false, []string{"looks like a URL", "configuration"}},
		{"scheme-relative model", "//evil.test/x", hdr(xkey, "sk-ant-a"), "", "", false, []string{"looks like a URL"}},
		{"https prefix", "https:evil.test", hdr(xkey, "sk-ant-a"), "", "", false, []string{"looks like a URL"}},
		// 2. Declared upstreams, longest prefix, before the built-in rules.
		{"declared prefix", "llama-3.1-8b", hdr(bearer, "Bearer local"), "vllm", "local", true, nil},
		{"declared beats openai family", "gpt-oss-20b", hdr(bearer, "Bearer sk-proj-a"), "vllm", "sk-proj-a", true, nil},
		{"declared beats vendor/model", "meta-llama/Llama-3.1-8B", hdr(), "vllm", "", false, nil},
		{"declared, case-insensitive", "Gemini-2.5-Flash", hdr(bearer, "Bearer AIzaXYZ"), "gemini", "AIzaXYZ", true, nil},
		{"declared, x-api-key moves to bearer", "gemini-2.5-pro", hdr(xkey, "AIzaXYZ"), "gemini", "AIzaXYZ", false, nil},
		// 3. An OpenRouter key goes to OpenRouter whatever the model.
		{"openrouter key, vendor model", "anthropic/claude-sonnet-4", hdr(bearer, "Bearer sk-or-v1-a"), "openrouter", "sk-or-v1-a", true, nil},
		{"openrouter key, claude model", "claude-sonnet-4-5", hdr(bearer, "Bearer sk-or-v1-a"), "openrouter", "sk-or-v1-a", true, nil},
		{"openrouter key in x-api-key", "gpt-4o", hdr(xkey, "sk-or-v1-a"), "openrouter", "sk-or-v1-a", false, nil},
		// 4. claude-* to Anthropic.
		{"claude, x-api-key", "claude-sonnet-4-5", hdr(xkey, "sk-ant-api03-a"), "anthropic", "sk-ant-api03-a", false, nil},
		{"claude, bearer sk-ant", "claude-opus-4-1", hdr(bearer, "Bearer sk-ant-api03-a"), "anthropic", "sk-ant-api03-a", true, nil},
		{"claude, oauth bearer", "claude-opus-4-1", hdr(bearer, "Bearer sk-ant-oat01-a"), "anthropic", "sk-ant-oat01-a", true, nil},
		{"claude, unknown-shape bearer", "claude-3-5-haiku-latest", hdr(bearer, "Bearer tok123"), "anthropic", "tok123", true, nil},
		{"claude, vertex-style version", "claude-opus-4-1@20250805", hdr(xkey, "sk-ant-a"), "anthropic", "sk-ant-a", false, nil},
		{"claude, no credential", "claude-sonnet-4-5", hdr(), "anthropic", "", false, nil},
		{"claude, both keys: x-api-key wins", "claude-sonnet-4-5", hdr(xkey, "sk-ant-a", bearer, "Bearer sk-test"), "anthropic", "sk-ant-a", false, nil},
		{"claude, openai project key", "claude-sonnet-4-5", hdr(bearer, "Bearer sk-proj-a"), "", "", false, []string{"claude-sonnet-4-5", "Anthropic", "an OpenAI key (sk-proj-…)"}},
		{"claude, openai-style key", "claude-sonnet-4-5", hdr(bearer, "Bearer sk-abc"), "", "", false, []string{"OpenAI-style key", "not forwarded"}},
		{"claude, openai key in x-api-key", "claude-sonnet-4-5", hdr(xkey, "sk-proj-a"), "", "", false, []string{"x-api-key with an OpenAI key"}},
		// 5. OpenAI families.
		{"gpt", "gpt-4o-mini", hdr(bearer, "Bearer sk-proj-a"), "openai", "sk-proj-a", true, nil},
		{"o-series", "o3-mini", hdr(bearer, "Bearer sk-a"), "openai", "sk-a", true, nil},
		{"o1", "o1", hdr(bearer, "Bearer sk-a"), "openai", "sk-a", true, nil},
		{"chatgpt", "chatgpt-4o-latest", hdr(bearer, "Bearer sk-svcacct-a"), "openai", "sk-svcacct-a", true, nil},
		{"codex", "codex-mini-latest", hdr(bearer, "Bearer sk-a"), "openai", "sk-a", true, nil},
		{"fine-tune", "ft:gpt-4o-mini:acme::abc", hdr(bearer, "Bearer sk-a"), "openai", "sk-a", true, nil},
		{"gpt, key in x-api-key", "gpt-4o", hdr(xkey, "sk-proj-a"), "openai", "sk-proj-a", false, nil},
		{"gpt, both keys: bearer wins", "gpt-4o", hdr(xkey, "sk-ant-test", bearer, "Bearer sk-test"), "openai", "sk-test", true, nil},
		{"gpt, unknown-shape key", "gpt-4o", hdr(bearer, "Bearer azure-abc"), "openai", "azure-abc", true, nil},
		{"gpt, no credential", "gpt-4o", hdr(), "openai", "", false, nil},
		{"gpt, anthropic key", "gpt-4o", hdr(xkey, "sk-ant-a"), "", "", false, []string{"gpt-4o", "OpenAI", "an Anthropic key"}},
		{"not an o-series model", "omni-moderation-latest", hdr(bearer, "Bearer sk-a"), "", "", false, []string{"cannot tell"}},
		// 6. vendor/model to OpenRouter.
		{"vendor/model", "mistralai/mistral-large", hdr(bearer, "Bearer or-token"), "openrouter", "or-token", true, nil},
		{"vendor/model, no credential", "qwen/qwen3-235b", hdr(), "openrouter", "", false, nil},
		{"vendor/model, anthropic key", "anthropic/claude-sonnet-4", hdr(xkey, "sk-ant-a"), "", "", false, []string{"OpenRouter", "Anthropic key"}},
		{"vendor/model, openai key", "openai/gpt-4o", hdr(bearer, "Bearer sk-proj-a"), "", "", false, []string{"OpenRouter", "OpenAI key"}},
		// 7. Other models follow an unmistakable key.
		{"unknown model, anthropic key", "some-model", hdr(xkey, "sk-ant-a"), "anthropic", "sk-ant-a", false, nil},
		{"unknown model, openai project key", "text-davinci-edit", hdr(bearer, "Bearer sk-proj-a"), "openai", "sk-proj-a", true, nil},
		{"unknown model, both keys agree", "some-model", hdr(bearer, "Bearer sk-proj-a", xkey, "sk-proj-b"), "openai", "sk-proj-a", true, nil},
		// 8. Everything else is a 400 naming what was seen.
		{"unknown model, bare sk- key", "deepseek-chat", hdr(bearer, "Bearer sk-abc"), "", "", false, []string{`"deepseek-chat"`, "OpenAI-style key", "PERPETUITY_UPSTREAMS"}},
		{"unknown model, unknown key", "mistral-large", hdr(xkey, "abc"), "", "", false, []string{"x-api-key with a key of no known shape"}},
		{"unknown model, no key", "mistral-large", hdr(), "", "", false, []string{"no provider credential"}},
		{"unknown model, keys disagree", "some-model", hdr(bearer, "Bearer sk-proj-a", xkey, "sk-ant-b"), "", "", false, []string{"an OpenAI key", "an Anthropic key"}},
	}
	ps := testProviders()
	for _, c := range cases {
		t.Run(c.rule, func(t *testing.T) {
			t.Parallel()
			tg, err := ps.Detect(c.model, c.h)
			if c.provider == "" {
				if err == nil {
					t.Fatalf("routed to %s, want a 400", tg.Provider.Name)
				}
				ae, ok := err.(*Error)
				if !ok || ae.KeyIn != "" { // a 400
					t.Fatalf("error %v is not a 400", err)
				}
				for _, want := range c.errHas {
					if !strings.Contains(ae.Message, want) {
						t.Fatalf("message %q lacks %q", ae.Message, want)
					}
				}
				for _, secret := range []string{"sk-proj-a", "sk-ant-a", "sk-abc", "sk-ant-b"} {
					if strings.Contains(ae.Message, secret) {
						t.Fatalf("message %q echoes the key", ae.Message)
					}
				}
				return
			}
			if err != nil {
				t.Fatalf("want %s, got %v", c.provider, err)
			}
			if tg.Provider.Name != c.provider || tg.cred.value != c.cred || (c.cred != "" && tg.cred.bearer != c.credBearer) {
				t.Fatalf("got %s with key %q (bearer %v), want %s with %q (bearer %v)", tg.Provider.Name, tg.cred.value, tg.cred.bearer, c.provider, c.cred, c.credBearer)
			}
		})
	}
}

// TestDetectBaseURLs: the base URL is always the configured one.
func TestDetectBaseURLs(t *testing.T) {
	t.Parallel()
	ps := testProviders()
	for model, want := range map[string]string{
		"claude-sonnet-4-5": "http://anthropic.test", "gpt-4o": "http://openai.test/v1",
		"x-ai/grok-4": "http://openrouter.test/api/v1", "llama-3": "http://vllm.test/v1", "gemini-2.5-pro": "http://gemini.test/v1beta/openai",
	} {
		tg, err := ps.Detect(model, hdr("Authorization", "Bearer tok", "X-Base-Url", "http://evil.test", "Host", "evil.test"))
		if err != nil || tg.Provider.Base != want {
			t.Fatalf("%s: base %q err %v, want %q", model, tg.Provider.Base, err, want)
		}
	}
	if NewSet(Config{}).openrouter.Base != DefaultOpenRouterBaseURL {
		t.Fatal("empty OpenRouter base URL does not default")
	}
}

// FuzzDetect: any model name and credentials give a provider from the
// configuration or a 400, never a panic, and never a base URL from the input.
func FuzzDetect(f *testing.F) {
	for _, s := range [][3]string{
		{"claude-sonnet-4-5", "", "sk-ant-a"}, {"gpt-4o", "Bearer sk-proj-a", ""}, {"a/b", "Bearer sk-or-v1", ""},
		{"http://x", "", ""}, {"o", "Bearer sk-", "sk-"}, {"llama-3", "bearer   ", "\x00"}, {"ft:", "Bearer sk-proj", "sk-ant-oat"},
	} {
		f.Add(s[0], s[1], s[2])
	}
	ps := testProviders()
	bases := map[string]bool{}
	for _, p := range []Provider{ps.openai, ps.anthropic, ps.openrouter} {
		bases[p.Base] = true
	}
	for _, d := range ps.declared {
		bases[d.prov.Base] = true
	}
	f.Fuzz(func(t *testing.T, model, auth, apiKey string) {
		h := http.Header{}
		h["Authorization"] = []string{auth}
		h["X-Api-Key"] = []string{apiKey}
		tg, err := ps.Detect(model, h)
		if err != nil {
			if ae, ok := err.(*Error); !ok || ae.KeyIn != "" { // a 400
				t.Fatalf("error %v is not a 400", err)
			}
			return
		}
		if !bases[tg.Provider.Base] {
			t.Fatalf("base %q is not configured", tg.Provider.Base)
		}
		_ = tg.cred.String()
		_ = UpstreamHeaders(h, tg)
	})
}
