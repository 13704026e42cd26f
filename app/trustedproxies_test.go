package app

import (
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/labstack/echo/v4"

	"github.com/perpetuity/perpetuity/web"
	"github.com/perpetuity/perpetuity/web/webtest"
)

func TestParseTrustedProxies(t *testing.T) {
	t.Parallel()
	cases := []struct {
		in   string
		want []string
		err  string
	}{
		{"", nil, ""},
		{" , ", nil, ""},
		{"10.0.0.0/8", []string{"10.0.0.0/8"}, ""},
		{" 10.1.2.3/8 , 192.168.0.7, fd00::/8,::1", []string{"10.0.0.0/8", "192.168.0.7/32", "fd00::/8", "::1/128"}, ""},
		{"10.0.0.0/33", nil, "not a CIDR"},
		{"balancer.internal", nil, "neither a CIDR"},
	}
	for _, c := range cases {
		got, err := parseTrustedProxies(c.in)
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("%q: error %v, want %q", c.in, err, c.err)
			}
			continue
		}
		var s []string
		for _, n := range got {
			s = append(s, n.String())
		}
		if err != nil || strings.Join(s, " ") != strings.Join(c.want, " ") {
			t.Errorf("%q: %v, %v; want %v", c.in, s, err, c.want)
		}
	}
	if _, err := LoadConfig(func(k string) string {
		return map[string]string{"PERPETUITY_TRUSTED_PROXIES": "10.0.0.0/8,nope"}[k]
	}); err == nil || !strings.HasPrefix(err.Error(), "PERPETUITY_TRUSTED_PROXIES: ") {
		t.Errorf("LoadConfig error %v, want one naming PERPETUITY_TRUSTED_PROXIES", err)
	}
}

// TestTrustedProxiesDecideThrottledAddress runs the console's sign-in
// throttle behind the extractor serve installs. The test client connects
// from 127.0.0.1 and claims, in X-Forwarded-For, to be two different
// clients. Only when 127.0.0.1 is a trusted proxy are they counted apart;
// otherwise the header is ignored and both are the socket's address.
func TestTrustedProxiesDecideThrottledAddress(t *testing.T) {
	t.Parallel()
	const perAddress = 3
	cases := []struct {
		name, trusted string
		apart         bool // the second forwarded client escapes the first's throttle
	}{
		{"balancer trusted", "127.0.0.0/8", true},
		{"balancer trusted by address", "127.0.0.1", true},
		{"nothing trusted", "", false},
		{"another range trusted", "10.0.0.0/8,192.168.0.0/16", false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			nets, err := parseTrustedProxies(c.trusted)
			if err != nil {
				t.Fatal(err)
			}
			srv := webtest.Start(t, webtest.Options{
				Config: func(cfg *web.Config) { cfg.SignInPerAddress, cfg.SignInPerAccount = perAddress, 1000 },
				Mount:  func(e *echo.Echo) { e.IPExtractor = ipExtractor(nets) },
			})
			cl := srv.NewClient(t)
			signIn := func(forwardedFor string) int {
				cl.Get("/signin")
				form := url.Values{"email": {"nobody@example.com"}, "password": {"wrong password"}, "_csrf": {cl.CSRF}}
				h := http.Header{"Content-Type": {"application/x-www-form-urlencoded"}, "X-Forwarded-For": {forwardedFor}}
				return cl.Do(http.MethodPost, "/signin", strings.NewReader(form.Encode()), h).Status
			}
			for i := range perAddress {
				if st := signIn("203.0.113.7"); st == http.StatusTooManyRequests {
					t.Fatalf("failure %d already throttled", i+1)
				}
			}
			if st := signIn("203.0.113.7"); st != http.StatusTooManyRequests {
				t.Fatalf("after %d failures: status %d, want 429", perAddress, st)
			}
			// A spoofed hop in front of the client changes nothing when
			// trusted: the rightmost untrusted address is the client.
			if st := signIn("198.51.100.1, 203.0.113.7"); st != http.StatusTooManyRequests {
				t.Fatalf("same client behind a spoofed hop: status %d, want 429", st)
			}
			st := signIn("203.0.113.8")
			if got := st != http.StatusTooManyRequests; got != c.apart {
				t.Fatalf("another forwarded client: status %d; counted apart = %v, want %v", st, got, c.apart)
			}
		})
	}
}
