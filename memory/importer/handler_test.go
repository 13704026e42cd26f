package importer_test

import (
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"

	"github.com/labstack/echo/v4"

	"github.com/perpetuity/perpetuity/memory"
	"github.com/perpetuity/perpetuity/memory/importer"
)

// TestHandlerFormats imports ChatGPT's export over HTTP (named by the format
// parameter, and recognised without it), refuses unknown formats and
// mismatched bodies before storing anything, and checks that what was
// stored exports as the converter's JSONL; then the export goes back in over
// HTTP, into another tenant, and comes out byte for byte the same.
func TestHandlerFormats(t *testing.T) {
	t.Parallel()
	f := newExportFixture(t)
	a := f.tenant(t, "acme", "owner")
	b := f.tenant(t, "elsewhere", "restored")
	e := echo.New()
	e.POST("/perpetuity/import", importer.New(f.db, f.eng).Handler(func(c echo.Context) (memory.Who, importer.Budget, error) {
		if c.Request().Header.Get("X-Tenant") == "b" {
			return b, nil, nil
		}
		return a, nil, nil
	}, 1<<20, slog.New(slog.DiscardHandler)))
	post := func(query, tenant, body string) (int, string) {
		req := httptest.NewRequest(http.MethodPost, "/perpetuity/import"+query, strings.NewReader(body))
		req.Header.Set("X-Tenant", tenant)
		rec := httptest.NewRecorder()
		e.ServeHTTP(rec, req)
		return rec.Code, strings.TrimSpace(rec.Body.String())
	}
	gpt, err := os.ReadFile("testdata/chatgpt/conversations.json")
	if err != nil {
		t.Fatal(err)
	}
	converted, err := os.ReadFile("testdata/chatgpt/conversations.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	bobLine := `{"conversation": "b1", "user": "bob", "turns": [{"role": "user", "text": "Bob here.", "at": "2024-01-01T00:00:00Z"}]}`

	cases := []struct {
		name, query, body string
		status            int
		want              string // the whole answer for 200s, a part of it otherwise
	}{
		{"unknown format", "?format=csv", string(gpt), 400, `format \"csv\" is not supported (jsonl, chatgpt)`},
		{"JSONL named chatgpt", "?format=chatgpt", bobLine, 400, "not ChatGPT's conversations.json: want a JSON array of conversations"},
		{"ChatGPT named jsonl", "?format=jsonl", string(gpt), 400, `"line":1`},
		{"chatgpt", "?format=chatgpt", string(gpt), 200, `{"conversations":3,"turns":8,"duplicates":0,"skipped":1}`},
		{"chatgpt sniffed, again", "", "\n  " + string(gpt), 200, `{"conversations":3,"turns":0,"duplicates":8,"skipped":1}`},
		{"jsonl sniffed", "", bobLine, 200, `{"conversations":1,"turns":1,"duplicates":0}`},
	}
	for _, tc := range cases { // in order: the 400s must have stored nothing for "chatgpt" to find no duplicates
		status, body := post(tc.query, "a", tc.body)
		if status != tc.status || (status == 200 && body != tc.want) || !strings.Contains(body, tc.want) {
			t.Errorf("%s: %d %s, want %d %s", tc.name, status, body, tc.status, tc.want)
		}
	}
	exported, res := f.export(t, a)
	if exported != string(converted) || res != (importer.Result{Conversations: 3, Turns: 8}) {
		t.Fatalf("export after the HTTP ChatGPT import (%+v):\n%s\nwant:\n%s", res, exported, converted)
	}

	// Round trip through the endpoint: the export, imported into another
	// tenant's key user, exports the same bytes.
	if status, body := post("", "b", exported); status != 200 || body != `{"conversations":3,"turns":8,"duplicates":0}` {
		t.Fatalf("re-import of the export: %d %s", status, body)
	}
	if again, _ := f.export(t, b); again != exported {
		t.Fatalf("round trip changed the export:\nfirst:\n%s\nsecond:\n%s", exported, again)
	}
}
