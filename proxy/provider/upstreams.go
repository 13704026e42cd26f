package provider

import (
	"fmt"
	"net/url"
	"strings"
)

// DefaultOpenRouterBaseURL is OpenRouter's OpenAI-compatible API, used when
// Config.OpenRouterBaseURL is empty.
const DefaultOpenRouterBaseURL = "https://openrouter.ai/api/v1"

// Upstream is an OpenAI-compatible server the operator declared (vLLM,
// Ollama, llama.cpp, Gemini's OpenAI endpoint, ...): requests for a model
// whose name starts with one of Prefixes go to BaseURL.
type Upstream struct {
	Name     string
	BaseURL  string // includes the API version path, e.g. http://10.0.0.5:8000/v1
	Prefixes []string
	// NoTools keeps the memory tools out of every request to this upstream
	// (the "notools" option), for servers that reject tools or models that
	// cannot call them. The memory frame is still put in.
	NoTools bool
}

// reservedName reports the built-in providers' names, which a declared
// upstream cannot shadow.
func reservedName(s string) bool { return s == "openai" || s == "anthropic" || s == "openrouter" }

// ParseUpstreams reads PERPETUITY_UPSTREAMS:
//
//	name=base-url|prefix,prefix[|option,option];name=base-url|prefix
//
// for example
//
//	vllm=http://10.0.0.5:8000/v1|meta-llama/,qwen;ollama=http://127.0.0.1:11434/v1|llama3,gpt-oss|notools
//
// The one option is notools: requests to that upstream never get the memory
// tools (the frame is still put in).
// Entries are separated by ';' or newlines, whitespace around parts is
// ignored. Names are lowercase letters, digits, '-' and '_' and may not be
// openai, anthropic or openrouter. The base URL is http(s) with a host and
// no query, fragment or credentials. Prefixes match model names
// case-insensitively, the longest one wins, and a prefix may be declared
// once only; they are checked before the built-in rules, so an operator can
// serve gpt-oss locally while gpt-4o still goes to OpenAI.
func ParseUpstreams(s string) ([]Upstream, error) {
	var out []Upstream
	names := map[string]bool{}
	prefixes := map[string]string{}
	for _, entry := range strings.FieldsFunc(s, func(r rune) bool { return r == ';' || r == '\n' }) {
		entry = strings.TrimSpace(entry)
		if entry == "" {
			continue
		}
		name, rest, ok := strings.Cut(entry, "=")
		base, list, ok2 := strings.Cut(rest, "|")
		if !ok || !ok2 {
			return nil, fmt.Errorf("upstream %q: want name=base-url|prefix,prefix[|notools]", entry)
		}
		list, opts, _ := strings.Cut(list, "|")
		name, base = strings.TrimSpace(name), strings.TrimRight(strings.TrimSpace(base), "/")
		if !validUpstreamName(name) {
			return nil, fmt.Errorf("upstream %q: name must be lowercase letters, digits, '-' or '_'", name)
		}
		if reservedName(name) {
			return nil, fmt.Errorf("upstream %q: name is a built-in provider", name)
		}
		if names[name] {
			return nil, fmt.Errorf("upstream %q: declared twice", name)
		}
		names[name] = true
		u, err := url.Parse(base)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" ||
			u.RawQuery != "" || u.Fragment != "" || u.User != nil {
			return nil, fmt.Errorf("upstream %q: %q is not an http(s) base URL without query or credentials", name, base)
		}
		// The scheme is case-insensitive ("HTTP://h"); the stored base URL
		// carries it lowercased, as every later comparison expects.
		base = u.Scheme + base[len(u.Scheme):]
		up := Upstream{Name: name, BaseURL: base}
		for _, p := range strings.Split(list, ",") {
			p = strings.ToLower(strings.TrimSpace(p))
			if p == "" {
				continue
			}
			if strings.ContainsAny(p, " \t") {
				return nil, fmt.Errorf("upstream %q: prefix %q contains blanks", name, p)
			}
			if other, dup := prefixes[p]; dup {
				return nil, fmt.Errorf("upstream %q: prefix %q is already served by %q", name, p, other)
			}
			prefixes[p] = name
			up.Prefixes = append(up.Prefixes, p)
		}
		if len(up.Prefixes) == 0 {
			return nil, fmt.Errorf("upstream %q: no model prefixes", name)
		}
		for _, o := range strings.Split(opts, ",") {
			o = strings.ToLower(strings.TrimSpace(o))
			if o == "" {
				continue
			}
			switch o {
			case "notools":
				up.NoTools = true
			default:
				return nil, fmt.Errorf("upstream %q: unknown option %q (known: notools)", name, o)
			}
		}
		out = append(out, up)
	}
	return out, nil
}

func validUpstreamName(s string) bool {
	if s == "" || len(s) > 40 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
			return false
		}
	}
	return true
}
