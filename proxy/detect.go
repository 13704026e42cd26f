package proxy

import (
	"fmt"
	"net/http"
	"strings"

	"github.com/perpetuity/perpetuity/memory/store"
	"github.com/perpetuity/perpetuity/proxy/dialect"
)

// Provider detection (DESIGN §3). Which provider a request is for is read
// from the credential's shape and the model name's shape; where each
// provider lives comes from the operator's configuration only. Nothing in a
// request (api_base or base_url fields, a URL as the model name, odd
// headers) can name a host.
//
// The rules, first match wins:
//
//  1. A model name that looks like a URL is refused.
//  2. A model matching a declared upstream's prefix (PERPETUITY_UPSTREAMS,
//     longest prefix) goes there, with whatever credential came.
//  3. An OpenRouter key (sk-or-) goes to OpenRouter, whatever the model:
//     the key is good nowhere else.
//  4. claude-* goes to Anthropic.
//  5. gpt-*, chatgpt-*, o<digit>*, codex-*, ft:* go to OpenAI.
//  6. vendor/model goes to OpenRouter.
//  7. Any other model goes where an unmistakable key points (sk-ant- to
//     Anthropic; sk-proj-, sk-svcacct-, sk-admin- to OpenAI). A bare sk- key
//     is not unmistakable: DeepSeek and many OpenAI-compatible servers issue
//     those too.
//  8. Anything else is a 400 naming the model and the credential's shape.
//
// A credential is never sent to a provider it visibly belongs to another
// of: a claude-* model with an OpenAI-looking key (Bearer sk-..., sk-proj-
// ...), a gpt-* model with an Anthropic key, a vendor/model name with an
// OpenAI or Anthropic key are 400s rather than forwarded. Keys of no known
// shape go wherever the model points (Anthropic OAuth tokens, local
// servers' keys). When both x-api-key and Authorization are sent, the one
// the chosen provider reads is used and the other is not forwarded:
// Anthropic reads x-api-key (else a Bearer token), OpenAI-compatible
// servers read the Bearer token (else x-api-key, moved to Authorization).

// provider is one upstream from the configuration.
type provider struct {
	name    string          // "openai", "anthropic", "openrouter" or a declared name
	base    string          // base URL from configuration
	dialect dialect.Dialect // OpenAIChat (OpenAI-compatible) or AnthropicMessages
	noTools bool            // never offer the memory tools (Upstream.NoTools)
	// paths are the endpoints pass-through relays to it (passpath.go);
	// none for declared upstreams, which pass-through never picks.
	paths []pathShape
}

// providers is the configured set, built once by New.
type providers struct {
	openai, anthropic, openrouter provider
	declared                      []declaredPrefix // longest prefix first
}

type declaredPrefix struct {
	prefix string
	prov   provider
}

func newProviders(cfg Config) providers {
	or := cfg.OpenRouterBaseURL
	if or == "" {
		or = DefaultOpenRouterBaseURL
	}
	ps := providers{
		openai:     provider{name: "openai", base: strings.TrimRight(cfg.OpenAIBaseURL, "/"), dialect: dialect.OpenAIChat, paths: openAIPaths()},
		anthropic:  provider{name: "anthropic", base: strings.TrimRight(cfg.AnthropicBaseURL, "/"), dialect: dialect.AnthropicMessages, paths: anthropicPaths()},
		openrouter: provider{name: "openrouter", base: strings.TrimRight(or, "/"), dialect: dialect.OpenAIChat, paths: openRouterPaths()},
	}
	for _, u := range cfg.Upstreams {
		pr := provider{name: u.Name, base: strings.TrimRight(u.BaseURL, "/"), dialect: dialect.OpenAIChat, noTools: u.NoTools}
		for _, p := range u.Prefixes {
			ps.declared = append(ps.declared, declaredPrefix{prefix: strings.ToLower(p), prov: pr})
		}
	}
	// Longest prefix first, so "gpt-oss" beats "gpt".
	for i := 1; i < len(ps.declared); i++ {
		for j := i; j > 0 && len(ps.declared[j].prefix) > len(ps.declared[j-1].prefix); j-- {
			ps.declared[j], ps.declared[j-1] = ps.declared[j-1], ps.declared[j]
		}
	}
	return ps
}

// keyKind is what a credential's shape says about its provider.
type keyKind int

const (
	keyNone       keyKind = iota
	keyUnknown            // no known shape
	keyAnthropic          // sk-ant-
	keyOpenRouter         // sk-or-
	keyOpenAI             // sk-proj-, sk-svcacct-, sk-admin-: OpenAI only
	keyOpenAILike         // another sk-: OpenAI's legacy shape, also used by others
)

func classifyKey(k string) keyKind {
	switch {
	case k == "":
		return keyNone
	case strings.HasPrefix(k, "sk-ant-"):
		return keyAnthropic
	case strings.HasPrefix(k, "sk-or-"):
		return keyOpenRouter
	case strings.HasPrefix(k, "sk-proj-"), strings.HasPrefix(k, "sk-svcacct-"), strings.HasPrefix(k, "sk-admin-"):
		return keyOpenAI
	case strings.HasPrefix(k, "sk-"):
		return keyOpenAILike
	}
	return keyUnknown
}

// perpetuityKeyAsCredential refuses a Perpetuity key sent where the
// provider credential goes (Authorization or x-api-key): an SDK that insists
// on an api_key is easily handed the Perpetuity key. It is this service's
// secret and no provider's, so it is never passed on. The message names the
// header, never the key.
func perpetuityKeyAsCredential(h http.Header) error {
	for _, name := range []string{"Authorization", "X-Api-Key"} {
		for _, v := range h.Values(name) {
			v = strings.TrimSpace(v)
			if len(v) > 7 && strings.EqualFold(v[:7], "bearer ") {
				v = strings.TrimSpace(v[7:])
			}
			if strings.HasPrefix(v, store.KeyPrefix) {
				return &APIError{Status: http.StatusUnauthorized, Kind: Authentication, Message: "the provider credential (" + name +
					") is a Perpetuity key; send the provider's own key there, and the Perpetuity key in the URL (/k/<key>/v1) or in " +
					HeaderKey + " (it is never passed on to a provider)"}
			}
		}
	}
	return nil
}

// credential is one provider key the caller sent.
type credential struct {
	bearer bool // came as Authorization: Bearer (else x-api-key)
	value  string
	kind   keyKind
}

func (c credential) present() bool { return c.value != "" }

// String names the credential's shape for error messages, never the key.
func (c credential) String() string {
	where := "x-api-key"
	if c.bearer {
		where = "Authorization: Bearer"
	}
	shape := "a key of no known shape"
	switch c.kind {
	case keyNone:
		return "no provider credential"
	case keyAnthropic:
		shape = "an Anthropic key (sk-ant-…)"
	case keyOpenRouter:
		shape = "an OpenRouter key (sk-or-…)"
	case keyOpenAI:
		kind, _, _ := strings.Cut(c.value[len("sk-"):], "-")
		shape = "an OpenAI key (sk-" + kind + "-…)"
	case keyOpenAILike:
		shape = "an OpenAI-style key (sk-…)"
	}
	return where + " with " + shape
}

// credentials reads the caller's provider keys.
type credentials struct {
	bearer, apiKey credential
}

func readCredentials(h http.Header) credentials {
	var c credentials
	if v := strings.TrimSpace(h.Get("Authorization")); len(v) > 7 && strings.EqualFold(v[:7], "bearer ") {
		k := strings.TrimSpace(v[7:])
		c.bearer = credential{bearer: true, value: k, kind: classifyKey(k)}
	}
	if k := strings.TrimSpace(h.Get("X-Api-Key")); k != "" {
		c.apiKey = credential{value: k, kind: classifyKey(k)}
	}
	return c
}

// forDialect is the credential a provider of dialect d reads.
func (c credentials) forDialect(d dialect.Dialect) credential {
	first, second := c.bearer, c.apiKey
	if d == dialect.AnthropicMessages {
		first, second = c.apiKey, c.bearer
	}
	if first.present() {
		return first
	}
	return second
}

func (c credentials) String() string {
	switch {
	case c.bearer.present() && c.apiKey.present():
		return c.bearer.String() + " and " + c.apiKey.String()
	case c.bearer.present():
		return c.bearer.String()
	}
	return c.apiKey.String()
}

// target is where one request goes and with which credential.
type target struct {
	prov provider
	cred credential
}

// modelFamily is what a model name's shape says.
type modelFamily int

const (
	familyUnknown modelFamily = iota
	familyAnthropic
	familyOpenAI
	familyVendor // vendor/model, OpenRouter's naming
)

func classifyModel(model string) modelFamily {
	m := strings.ToLower(model)
	switch {
	case strings.HasPrefix(m, "claude-"):
		return familyAnthropic
	case strings.HasPrefix(m, "gpt-"), strings.HasPrefix(m, "chatgpt-"), strings.HasPrefix(m, "codex-"),
		strings.HasPrefix(m, "ft:"), len(m) >= 2 && m[0] == 'o' && m[1] >= '0' && m[1] <= '9':
		return familyOpenAI
	case strings.Contains(m, "/"):
		return familyVendor
	}
	return familyUnknown
}

// looksLikeURL catches model names that try to name a host: they are
// refused outright rather than passed on as an odd model name.
func looksLikeURL(model string) bool {
	m := strings.ToLower(model)
	return strings.Contains(m, "://") || strings.HasPrefix(m, "/") || strings.HasPrefix(m, "\\") ||
		strings.HasPrefix(m, "http:") || strings.HasPrefix(m, "https:")
}

// detect applies the rules in the comment at the top of this file.
func (ps *providers) detect(model string, h http.Header) (target, error) {
	if looksLikeURL(model) {
		return target{}, errBadRequest("model: %q looks like a URL or address; upstreams are set by the operator's configuration only", model)
	}
	if err := perpetuityKeyAsCredential(h); err != nil {
		return target{}, err
	}
	creds := readCredentials(h)
	m := strings.ToLower(model)
	for _, d := range ps.declared {
		if strings.HasPrefix(m, d.prefix) {
			return target{prov: d.prov, cred: creds.forDialect(dialect.OpenAIChat)}, nil
		}
	}
	if c := creds.forDialect(dialect.OpenAIChat); c.kind == keyOpenRouter {
		return target{prov: ps.openrouter, cred: c}, nil
	}
	switch classifyModel(model) {
	case familyAnthropic:
		return ps.checked(ps.anthropic, model, creds, keyOpenAI, keyOpenAILike)
	case familyOpenAI:
		return ps.checked(ps.openai, model, creds, keyAnthropic)
	case familyVendor:
		return ps.checked(ps.openrouter, model, creds, keyAnthropic, keyOpenAI, keyOpenAILike)
	}
	var found []provider
	for _, c := range []credential{creds.bearer, creds.apiKey} {
		switch c.kind {
		case keyAnthropic:
			found = append(found, ps.anthropic)
		case keyOpenAI:
			found = append(found, ps.openai)
		}
	}
	if len(found) == 1 || len(found) == 2 && found[0].name == found[1].name {
		return target{prov: found[0], cred: creds.forDialect(found[0].dialect)}, nil
	}
	return target{}, errBadRequest("cannot tell which provider serves model %q with %s: use a claude-*, gpt-*, o<digit>* or vendor/model name, "+
		"a provider's own key, or ask the operator to declare the model's upstream (PERPETUITY_UPSTREAMS)", model, creds)
}

// checked sends the request to pr unless the credential it would carry
// visibly belongs to another provider.
func (ps *providers) checked(pr provider, model string, creds credentials, foreign ...keyKind) (target, error) {
	c := creds.forDialect(pr.dialect)
	for _, k := range foreign {
		if c.kind == k {
			return target{}, errBadRequest("model %q is served by %s, but the request carries %s; send a %s credential "+
				"(the key is not forwarded to a provider it does not belong to)", model, providerTitle(pr.name), c, providerTitle(pr.name))
		}
	}
	return target{prov: pr, cred: c}, nil
}

func providerTitle(name string) string {
	switch name {
	case "openai":
		return "OpenAI"
	case "anthropic":
		return "Anthropic"
	case "openrouter":
		return "OpenRouter"
	}
	return fmt.Sprintf("upstream %q", name)
}
