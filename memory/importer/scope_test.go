package importer_test

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/labstack/echo/v4"

	"github.com/perpetuity/perpetuity/memory"
	"github.com/perpetuity/perpetuity/memory/importer"
)

// TestPinnedCallerImportsOnlyItsUser: a caller whose key is pinned to its
// memory user (issue 15, item 114) may import lines without a user or
// naming that user; a line naming anyone else refuses the whole body with a
// 403 naming the line, before anything is stored. An unpinned caller may
// name any user, as before.
func TestPinnedCallerImportsOnlyItsUser(t *testing.T) {
	t.Parallel()
	f := newExportFixture(t)
	alice := f.tenant(t, "acme", "alice")
	pinned := alice
	pinned.Pinned = true
	e := echo.New()
	e.POST("/perpetuity/import", importer.New(f.db, f.eng).Handler(func(c echo.Context) (memory.Who, importer.Budget, error) {
		if c.Request().Header.Get("X-Pinned") == "yes" {
			return pinned, nil, nil
		}
		return alice, nil, nil
	}, 1<<20, slog.New(slog.DiscardHandler)))
	post := func(pin, body string) (int, string) {
		req := httptest.NewRequest(http.MethodPost, "/perpetuity/import", strings.NewReader(body))
		req.Header.Set("X-Pinned", pin)
		rec := httptest.NewRecorder()
		e.ServeHTTP(rec, req)
		return rec.Code, strings.TrimSpace(rec.Body.String())
	}
	ln := func(conv, user string) string {
		u := ""
		if user != "" {
			u = `"user": "` + user + `", `
		}
		return `{"conversation": "` + conv + `", ` + u + `"turns": [{"role": "user", "text": "Line of ` + conv + `.", "at": "2024-01-01T00:00:00Z"}]}` + "\n"
	}
	cases := []struct {
		name, pin, body string
		status          int
		want            string
	}{
		{"pinned, own line then bob's", "yes", ln("own", "alice") + ln("bobs", "bob"), 403, `"line":2`},
		{"pinned, another case of the name", "yes", ln("shout", "ALICE"), 403, `pinned to memory user \"alice\"`},
		{"pinned, no user and own user", "yes", ln("plain", "") + ln("own", "alice"), 200, `{"conversations":2,"turns":2,"duplicates":0}`},
		{"unpinned, bob", "no", ln("bobs", "bob"), 200, `{"conversations":1,"turns":1,"duplicates":0}`},
	}
	for _, tc := range cases { // in order: the 403s must have stored nothing for the 200 to count two new turns
		status, body := post(tc.pin, tc.body)
		if status != tc.status || !strings.Contains(body, tc.want) {
			t.Errorf("%s: %d %s, want %d with %s", tc.name, status, body, tc.status, tc.want)
		}
	}
	if _, res := f.export(t, alice); res != (importer.Result{Conversations: 2, Turns: 2}) {
		t.Errorf("alice's memory after the imports: %+v, want the two lines of the allowed import", res)
	}

	// The library call refuses the same way, before storing anything.
	_, err := importer.New(f.db, f.eng).Import(context.Background(), pinned, strings.NewReader(ln("late", "bob")), nil)
	var le *importer.LineError
	if !errors.Is(err, importer.ErrPinnedUser) || !errors.As(err, &le) || le.Line != 1 {
		t.Errorf("Import of a line naming bob with a pinned caller: %v", err)
	}
}
