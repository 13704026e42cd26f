package provider

import (
	"fmt"
	"net/http"
	"slices"
	"strings"

	"github.com/perpetuity/perpetuity/memory/store"
	"github.com/perpetuity/perpetuity/proxy/dialect"
)

// Provider is one upstream from the configuration.
type Provider struct {
	Name    string          // "openai", "anthropic", "openrouter" or a declared name
	Base    string          // base URL from configuration
	Dialect dialect.Dialect // OpenAIChat (OpenAI-compatible) or AnthropicMessages
	NoTools bool            // never offer the memory tools (Upstream.NoTools)
	// Paths are the endpoints pass-through relays to it (paths.go); none
	// for declared upstreams, which pass-through never picks.
	Paths []PathShape
}

// Config is where the providers live: the operator's configuration only.
type Config struct {
	OpenAIBaseURL    string // includes /v1
	AnthropicBaseURL string // without /v1
	// OpenRouterBaseURL includes /api/v1; empty means DefaultOpenRouterBaseURL.
	OpenRouterBaseURL string
	Upstreams         []Upstream
}

// Set is the configured providers, built once by the proxy.
type Set struct {
	openai, anthropic, openrouter Provider
	declared                      []declaredPrefix // longest prefix first
}

type declaredPrefix struct {
	prefix string
	prov   Provider
}

// NewSet builds the configured providers.
func NewSet(cfg Config) Set {
	or := cfg.OpenRouterBaseURL
	if or == "" {
		or = DefaultOpenRouterBaseURL
	}
	ps := Set{
		openai:     Provider{Name: "openai", Base: strings.TrimRight(cfg.OpenAIBaseURL, "/"), Dialect: dialect.OpenAIChat, Paths: openAIPaths()},
		anthropic:  Provider{Name: "anthropic", Base: strings.TrimRight(cfg.AnthropicBaseURL, "/"), Dialect: dialect.AnthropicMessages, Paths: anthropicPaths()},
		openrouter: Provider{Name: "openrouter", Base: strings.TrimRight(or, "/"), Dialect: dialect.OpenAIChat, Paths: openRouterPaths()},
	}
	for _, u := range cfg.Upstreams {
		pr := Provider{Name: u.Name, Base: strings.TrimRight(u.BaseURL, "/"), Dialect: dialect.OpenAIChat, NoTools: u.NoTools}
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

// Error is a request that cannot be routed: the proxy answers it with a
// 400, or with a 401 when KeyIn is set.
type Error struct {
	Message string
	// KeyIn names the credential header that carries a Perpetuity key.
	KeyIn string
}

func (e *Error) Error() string { return e.Message }

func errBadRequest(format string, args ...any) *Error {
	return &Error{Message: fmt.Sprintf(format, args...)}
}

// CheckCredential refuses a Perpetuity key sent where the provider
// credential goes (Authorization or x-api-key): an SDK that insists on an
// api_key is easily handed the Perpetuity key. It is this service's secret
// and no provider's, so it is never passed on. The error names the header,
// never the key.
func CheckCredential(h http.Header) error {
	for _, name := range []string{"Authorization", "X-Api-Key"} {
		for _, v := range h.Values(name) {
			v = strings.TrimSpace(v)
			if len(v) > 7 && strings.EqualFold(v[:7], "bearer ") {
				v = strings.TrimSpace(v[7:])
			}
			if strings.HasPrefix(v, store.KeyPrefix) {
				return &Error{KeyIn: name, Message: "the provider credential (" + name + ") is a Perpetuity key"}
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

// Target is where one request goes and with which credential.
type Target struct {
	Provider Provider
	cred     credential
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

// Detect applies the rules of the package comment (doc.go).
func (ps *Set) Detect(model string, h http.Header) (Target, error) {
	if looksLikeURL(model) {
		return Target{}, errBadRequest("model: %q looks like a URL or address; upstreams are set by the operator's configuration only", model)
	}
	if err := CheckCredential(h); err != nil {
		return Target{}, err
	}
	creds := readCredentials(h)
	m := strings.ToLower(model)
	for _, d := range ps.declared {
		if strings.HasPrefix(m, d.prefix) {
			return Target{Provider: d.prov, cred: creds.forDialect(dialect.OpenAIChat)}, nil
		}
	}
	if c := creds.forDialect(dialect.OpenAIChat); c.kind == keyOpenRouter {
		return Target{Provider: ps.openrouter, cred: c}, nil
	}
	switch classifyModel(model) {
	case familyAnthropic:
		return ps.checked(ps.anthropic, model, creds, keyOpenAI, keyOpenAILike)
	case familyOpenAI:
		return ps.checked(ps.openai, model, creds, keyAnthropic)
	case familyVendor:
		return ps.checked(ps.openrouter, model, creds, keyAnthropic, keyOpenAI, keyOpenAILike)
	}
	var found []Provider
	for _, c := range []credential{creds.bearer, creds.apiKey} {
		switch c.kind {
		case keyAnthropic:
			found = append(found, ps.anthropic)
		case keyOpenAI:
			found = append(found, ps.openai)
		}
	}
	if len(found) == 1 || len(found) == 2 && found[0].Name == found[1].Name {
		return Target{Provider: found[0], cred: creds.forDialect(found[0].Dialect)}, nil
	}
	return Target{}, errBadRequest("cannot tell which provider serves model %q with %s: use a claude-*, gpt-*, o<digit>* or vendor/model name, "+
		"a provider's own key, or ask the operator to declare the model's upstream (PERPETUITY_UPSTREAMS)", model, creds)
}

// checked sends the request to pr unless the credential it would carry
// visibly belongs to another provider.
func (ps *Set) checked(pr Provider, model string, creds credentials, foreign ...keyKind) (Target, error) {
	c := creds.forDialect(pr.Dialect)
	for _, k := range foreign {
		if c.kind == k {
			return Target{}, errBadRequest("model %q is served by %s, but the request carries %s; send a %s credential "+
				"(the key is not forwarded to a provider it does not belong to)", model, Title(pr.Name), c, Title(pr.Name))
		}
	}
	return Target{Provider: pr, cred: c}, nil
}

// Title is a provider's name as messages write it.
func Title(name string) string {
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

// PassthroughTarget picks the provider of a pass-through request and the
// credential it gets, refusing one that visibly belongs to another
// provider, as Detect does. These bodies need not name a model: an
// OpenRouter key goes to OpenRouter, an Anthropic-style caller to
// Anthropic, anything else to OpenAI.
func (ps *Set) PassthroughTarget(h http.Header) (Target, error) {
	creds := readCredentials(h)
	if c := creds.forDialect(dialect.OpenAIChat); c.kind == keyOpenRouter {
		return Target{Provider: ps.openrouter, cred: c}, nil
	}
	pr, foreign := ps.openai, []keyKind{keyAnthropic}
	if isAnthropic(h) {
		pr, foreign = ps.anthropic, []keyKind{keyOpenAI, keyOpenAILike}
	}
	c := creds.forDialect(pr.Dialect)
	if slices.Contains(foreign, c.kind) {
		return Target{}, errBadRequest("this request goes to %s (by its headers), but carries %s; send a %s credential "+
			"(the key is not forwarded to a provider it does not belong to)", Title(pr.Name), c, Title(pr.Name))
	}
	return Target{Provider: pr, cred: c}, nil
}

// isAnthropic tells an Anthropic-style caller by its headers.
func isAnthropic(h http.Header) bool {
	if h.Get("x-api-key") != "" || h.Get("anthropic-version") != "" {
		return true
	}
	return strings.HasPrefix(strings.TrimPrefix(h.Get("Authorization"), "Bearer "), "sk-ant-")
}
