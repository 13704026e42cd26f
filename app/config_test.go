package app

import (
	"strings"
	"testing"
	"time"
)

func loadWith(vars map[string]string) (Config, error) {
	return LoadConfig(func(k string) string { return vars[k] })
}

// TestPublicURLIsParsed is issue 15's finding 13: the scheme decides
// Secure cookies and HSTS whatever its case, and the value comes back
// normalised.
func TestPublicURLIsParsed(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		in, want string
		tls      bool
	}{
		{"", "http://localhost:8080", false},
		{"https://memory.example.com", "https://memory.example.com", true},
		{"HTTPS://Memory.Example.COM/", "https://memory.example.com", true},
		{"HtTpS://memory.example.com:8443", "https://memory.example.com:8443", true},
		{"HTTP://LOCALHOST:8080", "http://localhost:8080", false},
		{"https://example.com/perpetuity/", "https://example.com/perpetuity", true},
		{"  https://example.com  ", "https://example.com", true},
		{"https://[::1]:8443", "https://[::1]:8443", true},
	} {
		cfg, err := loadWith(map[string]string{"PERPETUITY_PUBLIC_URL": c.in})
		if err != nil {
			t.Errorf("%q: %v", c.in, err)
			continue
		}
		if cfg.PublicURL != c.want || cfg.ServedOverTLS() != c.tls {
			t.Errorf("%q: PublicURL %q, TLS %v; want %q, %v", c.in, cfg.PublicURL, cfg.ServedOverTLS(), c.want, c.tls)
		}
	}
}

func TestBadPublicURLStopsStartUp(t *testing.T) {
	t.Parallel()
	for _, in := range []string{
		"ftp://example.com", "example.com", "https://", "https:example.com", "//example.com",
		"https://user:hunter2@example.com", "https://hunter2@example.com", "https://example.com/?a=1", "https://example.com/?",
		"https://example.com/#x", "https://example.com#", "https://example.com:port", "https://exa mple.com", "javascript:alert(1)",
	} {
		_, err := loadWith(map[string]string{"PERPETUITY_PUBLIC_URL": in})
		if err == nil {
			t.Errorf("%q accepted", in)
			continue
		}
		if !strings.HasPrefix(err.Error(), "PERPETUITY_PUBLIC_URL: ") {
			t.Errorf("%q: error %q does not name the variable", in, err)
		}
		if strings.Contains(err.Error(), "hunter2") {
			t.Errorf("%q: error %q quotes the password", in, err)
		}
	}
}

func TestBodyTimeout(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		in   string
		want time.Duration
		ok   bool
	}{
		{"", 30 * time.Second, true}, {"2s", 2 * time.Second, true}, {"100ms", 100 * time.Millisecond, true}, {"1h", time.Hour, true},
		{"0", 0, false}, {"-1s", 0, false}, {"10ms", 0, false}, {"2h", 0, false}, {"30", 0, false}, {"soon", 0, false},
	} {
		cfg, err := loadWith(map[string]string{"PERPETUITY_BODY_TIMEOUT": c.in})
		switch {
		case c.ok && (err != nil || cfg.BodyTimeout != c.want):
			t.Errorf("%q: %v, %v; want %v", c.in, cfg.BodyTimeout, err, c.want)
		case !c.ok && (err == nil || !strings.HasPrefix(err.Error(), "PERPETUITY_BODY_TIMEOUT: ")):
			t.Errorf("%q: error %v, want one naming PERPETUITY_BODY_TIMEOUT", c.in, err)
		}
	}
}
