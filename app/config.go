package app

import (
	"fmt"
	"math"
	"net"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/perpetuity/perpetuity/memory"
	"github.com/perpetuity/perpetuity/proxy"
)

// Config is everything the service reads from its environment. Each field
// names its variable; the README lists them with their defaults.
type Config struct {
	DatabaseURL       string           // DATABASE_URL
	Addr              string           // PERPETUITY_ADDR
	PublicURL         string           // PERPETUITY_PUBLIC_URL
	OpenAIBaseURL     string           // PERPETUITY_OPENAI_BASE_URL
	AnthropicBaseURL  string           // PERPETUITY_ANTHROPIC_BASE_URL
	OpenRouterBaseURL string           // PERPETUITY_OPENROUTER_BASE_URL
	Upstreams         []proxy.Upstream // PERPETUITY_UPSTREAMS
	TrustedProxies    []*net.IPNet     // PERPETUITY_TRUSTED_PROXIES
	LogLevel          string           // PERPETUITY_LOG_LEVEL
	MaxBodyBytes      int64            // PERPETUITY_MAX_BODY_BYTES
	CaptureTimeout    time.Duration    // PERPETUITY_CAPTURE_TIMEOUT
	BodyTimeout       time.Duration    // PERPETUITY_BODY_TIMEOUT
	FrameCeiling      int              // PERPETUITY_FRAME_CEILING
	ArenaBudget       int64            // PERPETUITY_ARENA_BUDGET
	BodyBudget        int64            // PERPETUITY_BODY_BUDGET
	Shard             memory.Shard     // PERPETUITY_SHARD
	ToolRounds        int              // PERPETUITY_TOOL_ROUNDS
	KeyRPM            int              // PERPETUITY_KEY_RPM
	KeyTPM            int              // PERPETUITY_KEY_TPM
	KeyUsersPerDay    int              // PERPETUITY_KEY_USERS_PER_DAY
	DrainReadyDelay   time.Duration    // PERPETUITY_DRAIN_READY_DELAY
	DrainTimeout      time.Duration    // PERPETUITY_DRAIN_TIMEOUT
	InspectRetention  time.Duration    // PERPETUITY_INSPECT_RETENTION
	MetricsToken      string           // PERPETUITY_METRICS_TOKEN
}

type envVar struct {
	name, def, doc string
}

// envVars is the single list of variables, their defaults and meaning; the
// README table is written from it by hand and checked by a test.
var envVars = []envVar{
	{"DATABASE_URL", "", "PostgreSQL URL. `make run`/`make test` find or start a server when unset."},
	{"PERPETUITY_ADDR", ":8080", "Listen address for proxy and console (one port)."},
	{"PERPETUITY_PUBLIC_URL", "http://localhost:8080", "Base URL users reach the service at (http or https, no query); proxy URLs are built from it, and https turns on Secure `__Host-` cookies and HSTS."},
	{"PERPETUITY_OPENAI_BASE_URL", "https://api.openai.com/v1", "OpenAI upstream, including /v1 as the OpenAI SDKs expect."},
	{"PERPETUITY_ANTHROPIC_BASE_URL", "https://api.anthropic.com", "Anthropic upstream, without /v1 as the Anthropic SDKs expect."},
	{"PERPETUITY_OPENROUTER_BASE_URL", "https://openrouter.ai/api/v1", "OpenRouter upstream (OpenAI-compatible), including /api/v1."},
	{"PERPETUITY_UPSTREAMS", "", "More OpenAI-compatible upstreams: `name=base-url|prefix,prefix[|notools];...`; models starting with a prefix go there; `notools` keeps the memory tools out of that upstream's requests."},
	{"PERPETUITY_TRUSTED_PROXIES", "", "Comma-separated CIDRs (or addresses) of load balancers whose `X-Forwarded-For` names the client (sign-in throttling, audit log); empty trusts none and uses the connection's address."},
	{"PERPETUITY_LOG_LEVEL", "info", "debug, info, warn or error."},
	{"PERPETUITY_MAX_BODY_BYTES", "33554432", "Largest accepted request body in bytes."},
	{"PERPETUITY_BODY_BUDGET", "1GiB", "Most request body bytes the process takes in at once, over every request it is serving, in bytes or with a suffix (`512MiB`, `2GiB`); past it a body is refused with a 503 to retry, and each request's bytes count until it ends. 0 is unlimited; otherwise at least PERPETUITY_MAX_BODY_BYTES."},
	{"PERPETUITY_CAPTURE_TIMEOUT", "10s", "How long a capture may take, independent of the client connection."},
	{"PERPETUITY_BODY_TIMEOUT", "30s", "How long a request body may take to arrive, plus 1 s per 64 KiB received; a body slower than that, or never sent, is refused (408 on the proxy routes) and its connection closed. Replies, streams included, are not limited."},
	{"PERPETUITY_FRAME_CEILING", "8000", "Most tokens a memory frame may take."},
	{"PERPETUITY_DATA_DIR", ".data", "Where `make run` keeps its private PostgreSQL cluster and the demo tenant's key (development only)."},
	{"PERPETUITY_TOOL_ROUNDS", "3", "Most provider calls one request may take when the model uses the memory tools; the last must answer. 1 turns the tools off."},
	{"PERPETUITY_KEY_RPM", "0", "Requests per minute each key may make, for tenants without limits of their own (`perpetuity tenant limits`); 0 is unlimited. Counted per replica."},
	{"PERPETUITY_KEY_TPM", "0", "Provider tokens (input + output) per minute each key may spend, for tenants without limits of their own; 0 is unlimited. Counted per replica."},
	{"PERPETUITY_DRAIN_READY_DELAY", "2s", "On SIGTERM, how long `/readyz` answers 503 while the listener still takes requests, so that the balancer takes the replica out of rotation before it stops accepting; 0 closes the listener at once."},
	{"PERPETUITY_DRAIN_TIMEOUT", "30s", "On SIGTERM, how long requests in flight (streams included) may take to finish; past it each is cut with its dialect's error event and its partial reply is stored flagged interrupted."},
	{"PERPETUITY_KEY_USERS_PER_DAY", "1000", "New memory users each key may create per UTC day (`X-Perpetuity-User`, a user field that is the identity, an import line's `user`); past it such requests get a 429, existing users still work. 0 is unlimited."},
	{"PERPETUITY_INSPECT_RETENTION", "168h", "How long the console's request inspector keeps what each request's provider received from memory and answered (frame, tool calls, reply); 0 keeps none. Purged with the user."},
	{"PERPETUITY_ARENA_BUDGET", "0", "Most memory the resident arenas may take, in bytes or with a suffix (`512MiB`, `2GiB`, `4GB`); past it the least recently used tenant's arena is evicted and reloads on its next request. 0 is unlimited (every tenant used stays loaded). Otherwise at least 1MiB; see the README's Scaling out."},
	{"PERPETUITY_METRICS_TOKEN", "", "When set (at least 16 characters), `GET /metrics` answers only `Authorization: Bearer` with it, others 401; empty leaves it open, for a scraper on a private network."},
	{"PERPETUITY_SHARD", "", "`i/n` (e.g. `2/3`): this replica owns the tenants whose id hashes to share i of n and warms only those at start; it still serves any tenant it is sent. Empty owns (and warms) every tenant."},
}

// minArenaBudget is the smallest budget accepted: below it the value is
// more likely a number of MiB with the suffix forgotten than a choice.
const minArenaBudget = 1 << 20

// LoadConfig reads the configuration through getenv and validates it; an
// error names the variable at fault.
func LoadConfig(getenv func(string) string) (Config, error) {
	get := func(name string) string {
		if v := strings.TrimSpace(getenv(name)); v != "" {
			return v
		}
		for _, e := range envVars {
			if e.name == name {
				return e.def
			}
		}
		return ""
	}
	c := Config{
		DatabaseURL:       get("DATABASE_URL"),
		Addr:              get("PERPETUITY_ADDR"),
		OpenAIBaseURL:     strings.TrimRight(get("PERPETUITY_OPENAI_BASE_URL"), "/"),
		AnthropicBaseURL:  strings.TrimRight(get("PERPETUITY_ANTHROPIC_BASE_URL"), "/"),
		OpenRouterBaseURL: strings.TrimRight(get("PERPETUITY_OPENROUTER_BASE_URL"), "/"),
		LogLevel:          strings.ToLower(get("PERPETUITY_LOG_LEVEL")),
	}
	if c.DatabaseURL != "" {
		u, err := url.Parse(c.DatabaseURL)
		if err != nil || (u.Scheme != "postgres" && u.Scheme != "postgresql") {
			return c, fmt.Errorf("DATABASE_URL: want a postgres:// URL")
		}
	}
	if _, port, err := net.SplitHostPort(c.Addr); err != nil || port == "" {
		return c, fmt.Errorf("PERPETUITY_ADDR: %q is not host:port (e.g. :8080)", c.Addr)
	}
	pub, err := parsePublicURL(get("PERPETUITY_PUBLIC_URL"))
	if err != nil {
		return c, fmt.Errorf("PERPETUITY_PUBLIC_URL: %w", err)
	}
	c.PublicURL = pub
	for _, u := range []struct{ name, val string }{
		{"PERPETUITY_OPENAI_BASE_URL", c.OpenAIBaseURL},
		{"PERPETUITY_ANTHROPIC_BASE_URL", c.AnthropicBaseURL},
		{"PERPETUITY_OPENROUTER_BASE_URL", c.OpenRouterBaseURL},
	} {
		p, err := url.Parse(u.val)
		if err != nil || (p.Scheme != "http" && p.Scheme != "https") || p.Host == "" {
			return c, fmt.Errorf("%s: %q is not an http(s) URL", u.name, u.val)
		}
	}
	ups, err := proxy.ParseUpstreams(get("PERPETUITY_UPSTREAMS"))
	if err != nil {
		return c, fmt.Errorf("PERPETUITY_UPSTREAMS: %w", err)
	}
	c.Upstreams = ups
	if c.TrustedProxies, err = parseTrustedProxies(get("PERPETUITY_TRUSTED_PROXIES")); err != nil {
		return c, fmt.Errorf("PERPETUITY_TRUSTED_PROXIES: %w", err)
	}
	switch c.LogLevel {
	case "debug", "info", "warn", "error":
	default:
		return c, fmt.Errorf("PERPETUITY_LOG_LEVEL: %q is not one of debug, info, warn, error", c.LogLevel)
	}
	n, err := strconv.ParseInt(get("PERPETUITY_MAX_BODY_BYTES"), 10, 64)
	if err != nil || n < 1024 {
		return c, fmt.Errorf("PERPETUITY_MAX_BODY_BYTES: want a whole number of bytes >= 1024")
	}
	c.MaxBodyBytes = n
	d, err := time.ParseDuration(get("PERPETUITY_CAPTURE_TIMEOUT"))
	if err != nil || d <= 0 {
		return c, fmt.Errorf("PERPETUITY_CAPTURE_TIMEOUT: want a positive duration such as 10s")
	}
	c.CaptureTimeout = d
	bt, err := time.ParseDuration(get("PERPETUITY_BODY_TIMEOUT"))
	if err != nil || bt < 100*time.Millisecond || bt > time.Hour {
		return c, fmt.Errorf("PERPETUITY_BODY_TIMEOUT: want a duration from 100ms to 1h such as 30s")
	}
	c.BodyTimeout = bt
	fc, err := strconv.Atoi(get("PERPETUITY_FRAME_CEILING"))
	if err != nil || fc < 256 {
		return c, fmt.Errorf("PERPETUITY_FRAME_CEILING: want a whole number of tokens >= 256")
	}
	c.FrameCeiling = fc
	if c.ArenaBudget, err = parseBytes(get("PERPETUITY_ARENA_BUDGET")); err != nil {
		return c, fmt.Errorf("PERPETUITY_ARENA_BUDGET: %w", err)
	}
	if c.ArenaBudget != 0 && c.ArenaBudget < minArenaBudget {
		return c, fmt.Errorf("PERPETUITY_ARENA_BUDGET: %d bytes is below 1MiB; give 0 (unlimited) or a size such as 512MiB", c.ArenaBudget)
	}
	if c.BodyBudget, err = parseBytes(get("PERPETUITY_BODY_BUDGET")); err != nil {
		return c, fmt.Errorf("PERPETUITY_BODY_BUDGET: %w", err)
	}
	if c.BodyBudget != 0 && c.BodyBudget < c.MaxBodyBytes {
		return c, fmt.Errorf("PERPETUITY_BODY_BUDGET: %d bytes is below PERPETUITY_MAX_BODY_BYTES (%d): the largest body allowed could never be taken in; give 0 (unlimited) or more", c.BodyBudget, c.MaxBodyBytes)
	}
	if c.Shard, err = memory.ParseShard(get("PERPETUITY_SHARD")); err != nil {
		return c, fmt.Errorf("PERPETUITY_SHARD: %w", err)
	}
	tr, err := strconv.Atoi(get("PERPETUITY_TOOL_ROUNDS"))
	if err != nil || tr < 1 || tr > 10 {
		return c, fmt.Errorf("PERPETUITY_TOOL_ROUNDS: want a whole number from 1 to 10")
	}
	c.ToolRounds = tr
	for _, v := range []struct {
		name string
		dst  *int
	}{{"PERPETUITY_KEY_RPM", &c.KeyRPM}, {"PERPETUITY_KEY_TPM", &c.KeyTPM}, {"PERPETUITY_KEY_USERS_PER_DAY", &c.KeyUsersPerDay}} {
		n, err := strconv.Atoi(get(v.name))
		if err != nil || n < 0 || n > math.MaxInt32 {
			return c, fmt.Errorf("%s: want a whole number from 0 (unlimited) to %d", v.name, math.MaxInt32)
		}
		*v.dst = n
	}
	for _, v := range []struct {
		name     string
		dst      *time.Duration
		min, max time.Duration
	}{{"PERPETUITY_DRAIN_READY_DELAY", &c.DrainReadyDelay, 0, time.Minute}, {"PERPETUITY_DRAIN_TIMEOUT", &c.DrainTimeout, time.Second, time.Hour}} {
		d, err := time.ParseDuration(get(v.name))
		if err != nil || d < v.min || d > v.max {
			return c, fmt.Errorf("%s: want a duration from %v to %v such as %s", v.name, v.min, v.max, envDefault(v.name))
		}
		*v.dst = d
	}
	ir, err := time.ParseDuration(get("PERPETUITY_INSPECT_RETENTION"))
	if err != nil || ir < 0 {
		return c, fmt.Errorf("PERPETUITY_INSPECT_RETENTION: want a duration such as 168h, or 0 to keep no records")
	}
	c.InspectRetention = ir
	// A short token is one a scraper's neighbours could guess; never
	// quoted back, it is a secret.
	if c.MetricsToken = get("PERPETUITY_METRICS_TOKEN"); c.MetricsToken != "" && len(c.MetricsToken) < minMetricsToken {
		return c, fmt.Errorf("PERPETUITY_METRICS_TOKEN: want at least %d characters, or none to leave /metrics open", minMetricsToken)
	}
	return c, nil
}

const minMetricsToken = 16

func envDefault(name string) string {
	for _, e := range envVars {
		if e.name == name {
			return e.def
		}
	}
	return ""
}

// parsePublicURL reads PERPETUITY_PUBLIC_URL as a URL, not as text: the
// scheme decides Secure cookies and HSTS, whatever its case. It must be a
// base URL a browser reaches (http or https, a host, nothing after the
// path), and comes back normalised: scheme and host in lower case, no
// trailing slash. A value with user information is never quoted back.
func parsePublicURL(v string) (string, error) {
	quoted := fmt.Sprintf("%q", v)
	if strings.Contains(v, "@") {
		quoted = "the value"
	}
	u, err := url.Parse(v)
	switch {
	case err != nil:
		return "", fmt.Errorf("%s is not a URL", quoted)
	case u.Scheme != "http" && u.Scheme != "https": // url.Parse lowers the scheme
		return "", fmt.Errorf("%s: want an http:// or https:// URL", quoted)
	case u.Opaque != "" || u.Host == "":
		return "", fmt.Errorf("%s has no host (want e.g. https://memory.example.com)", quoted)
	case u.User != nil:
		return "", fmt.Errorf("%s carries user information; give the bare base URL", quoted)
	case u.RawQuery != "" || u.ForceQuery || u.Fragment != "" || strings.Contains(v, "#"):
		return "", fmt.Errorf("%s has a query or fragment; give the base URL only", quoted)
	}
	u.Host = strings.ToLower(u.Host)
	return strings.TrimRight(u.String(), "/"), nil
}

// ServedOverTLS reports whether users reach the service over https, which
// turns on Secure and __Host- cookies and HSTS in the console.
func (c Config) ServedOverTLS() bool {
	u, err := url.Parse(c.PublicURL)
	return err == nil && strings.EqualFold(u.Scheme, "https")
}
