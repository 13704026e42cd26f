package app

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/labstack/echo/v4"
)

func TestLabelsComeFromFixedSets(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ in, want string }{
		{"GET", "GET"}, {"HEAD", "HEAD"}, {"POST", "POST"}, {"PUT", "PUT"}, {"PATCH", "PATCH"},
		{"DELETE", "DELETE"}, {"OPTIONS", "OPTIONS"},
		{"get", "other"}, {"TRACE", "other"}, {"CONNECT", "other"}, {"PROPFIND", "other"}, {"", "other"},
		{strings.Repeat("X", 500<<10), "other"},
	} {
		if got := methodLabel(c.in); got != c.want {
			t.Errorf("methodLabel(%.20q) = %q, want %q", c.in, got, c.want)
		}
	}
	for _, c := range []struct {
		in   int
		want string
	}{{200, "200"}, {100, "100"}, {599, "599"}, {408, "408"}, {99, "other"}, {600, "other"}, {999, "other"}, {0, "other"}, {-1, "other"}} {
		if got := statusLabel(c.in); got != c.want {
			t.Errorf("statusLabel(%d) = %q, want %q", c.in, got, c.want)
		}
	}
}

// TestRouteLabelIsATemplate: a path that matches no route, or a method a
// route does not take, never puts the raw path into a label.
func TestRouteLabelIsATemplate(t *testing.T) {
	t.Parallel()
	ec := echo.New()
	var rl routeLabels
	var got []string
	ec.Use(func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			err := next(c)
			got = append(got, rl.of(c))
			return err
		}
	})
	ok := func(c echo.Context) error { return c.NoContent(http.StatusNoContent) }
	ec.GET("/healthz", ok)
	g := ec.Group("/k/:key/v1", func(next echo.HandlerFunc) echo.HandlerFunc { return next })
	g.POST("/chat/completions", ok)
	g.Any("/*", ok)
	cases := []struct{ method, path, want string }{
		{"GET", "/healthz", "/healthz"},
		{"POST", "/healthz", "/healthz"},
		{"GET", "/" + strings.Repeat("a", 4096), unmatchedRoute},
		{"GET", "/k/ppk_secret/v1/models/" + strings.Repeat("b", 4096), "/k/:key/v1/*"},
		{"POST", "/k/ppk_secret/v1/chat/completions", "/k/:key/v1/chat/completions"},
		// The method the chat route does not take falls to the pass-through.
		{strings.Repeat("Z", 1<<16), "/k/ppk_secret/v1/chat/completions", "/k/:key/v1/*"},
	}
	for _, c := range cases {
		ec.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest(c.method, c.path, nil))
	}
	for i, c := range cases {
		if got[i] != c.want {
			t.Errorf("%.10s %.40s: route label %q, want %q", c.method, c.path, got[i], c.want)
		}
	}
}

// FuzzLabels: whatever the method and status, the labels stay within their
// sets.
func FuzzLabels(f *testing.F) {
	for _, s := range []string{"GET", "POST", "", "TRACE", "G\x00T", strings.Repeat("Q", 1000)} {
		f.Add(s, 200)
	}
	f.Add("PATCH", 1000)
	f.Add("OPTIONS", -5)
	f.Fuzz(func(t *testing.T, method string, status int) {
		switch m := methodLabel(method); m {
		case "GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS", "other":
		default:
			t.Fatalf("methodLabel gave %q", m)
		}
		if s := statusLabel(status); s != "other" && (len(s) != 3 || s < "100" || s > "599") {
			t.Fatalf("statusLabel(%d) gave %q", status, s)
		}
	})
}
