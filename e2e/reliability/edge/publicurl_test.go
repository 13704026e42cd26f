package edge

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/perpetuity/perpetuity/e2e/reliability/figure"
	"github.com/perpetuity/perpetuity/e2e/reliability/internal/harness"
	"github.com/perpetuity/perpetuity/e2e/rig"
)

// TestPublicURLSchemeInCapitals is finding 13: PERPETUITY_PUBLIC_URL was
// tested with a case-sensitive "https://" prefix, so HTTPS://... served
// the console with plain cookies and no HSTS. A value that is no plain
// http(s) base URL must stop start-up, naming the variable.
func TestPublicURLSchemeInCapitals(t *testing.T) {
	t.Parallel()
	const given, normal = "HTTPS://Example.Test/", "https://example.test"
	s := harness.Start(t, "PERPETUITY_PUBLIC_URL="+given)

	c := &http.Client{Timeout: 10 * time.Second, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := c.Get(s.URL + "/signin")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	var cookies []string
	insecure := 0
	for _, ck := range resp.Cookies() {
		cookies = append(cookies, fmt.Sprintf("%s (Secure %v)", ck.Name, ck.Secure))
		if !ck.Secure || !strings.HasPrefix(ck.Name, "__Host-") {
			insecure++
		}
	}
	hsts := resp.Header.Get("Strict-Transport-Security")
	logged := strings.Contains(s.Proc.Log.String(), `"public_url":"`+normal+`"`)

	// Values that are not a base URL a browser reaches: each must stop
	// start-up with an error naming the variable, and must not echo a
	// password it carries.
	bad := []string{"ftp://example.test", "https://", "example.test", "https://user:s3cret-pw@example.test",
		"https://example.test/?next=1", "https://example.test/#top", "https:example.test"}
	var refusedLines []string
	started := 0
	for _, v := range bad {
		p, err := rig.Serve(t, []string{"DATABASE_URL=" + s.DBURL, "PERPETUITY_PUBLIC_URL=" + v})
		if err == nil {
			started++
			p.Kill()
			t.Errorf("PERPETUITY_PUBLIC_URL=%s: the server started", v)
			continue
		}
		msg := err.Error()
		if !strings.Contains(msg, "PERPETUITY_PUBLIC_URL") || strings.Contains(msg, "s3cret-pw") {
			t.Errorf("PERPETUITY_PUBLIC_URL=%s: start-up error does not name the variable or echoes the password:\n%s", v, msg)
			continue
		}
		refusedLines = append(refusedLines, v)
	}

	pass := len(cookies) > 0 && insecure == 0 && hsts != "" && logged && started == 0 && len(refusedLines) == len(bad)
	figure.Record(t, figure.Figure{
		Item: 113, Name: "PERPETUITY_PUBLIC_URL read as a URL",
		Figure: fmt.Sprintf("PERPETUITY_PUBLIC_URL=%s: cookies %s; Strict-Transport-Security %q; served as %s: %v; %d of %d malformed values refused at start-up naming the variable",
			given, strings.Join(cookies, ", "), hsts, normal, logged, len(refusedLines), len(bad)),
		Target: "every console cookie Secure and __Host-, HSTS sent, the URL normalised; every malformed value stops start-up naming PERPETUITY_PUBLIC_URL",
		Pass:   pass,
		Details: "The real binary started with the scheme and host in capitals and a trailing slash; GET /signin sets the pre-sign-in CSRF cookie and the console's headers. " +
			"Malformed values (another scheme, no host, no scheme, user information, a query, a fragment, an opaque URL) are each given to a fresh `perpetuity serve`.",
	})
	if insecure > 0 || len(cookies) == 0 {
		t.Errorf("cookies %v: want each Secure and __Host- prefixed", cookies)
	}
	if hsts == "" {
		t.Error("no Strict-Transport-Security header")
	}
	if !logged {
		t.Errorf("the server did not report its public URL as %s", normal)
	}
}
