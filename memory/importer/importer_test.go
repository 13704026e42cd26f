package importer_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"testing/iotest"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/labstack/echo/v4"

	"github.com/perpetuity/perpetuity/memory"
	"github.com/perpetuity/perpetuity/memory/importer"
	"github.com/perpetuity/perpetuity/memory/store"
	"github.com/perpetuity/perpetuity/migrations/dbtest"
)

// words is a stand-in analysis: the importer only needs capture to store
// text verbatim, not any particular tokenization.
type words struct{}

func (words) Count(s string) int                         { return len(strings.Fields(s)) + 1 }
func (words) Normalize(s string) []string                { return strings.Fields(strings.ToLower(s)) }
func (w words) Chunk(s string, _ int) ([]string, []int)  { return []string{s}, []int{w.Count(s)} }
func (words) ChunkContent(_ string, c []string) []string { return c }
func (words) Version() int                               { return 1 }
func (words) Terms(t []string) ([]uint32, []uint16, int) {
	return nil, nil, len(t)
}
func (words) QueryTerms([]string) []uint32 { return nil }

type fixture struct {
	db  *store.DB
	eng *memory.Engine
	nt  store.NewTenant
}

func newFixture(t *testing.T) fixture {
	t.Helper()
	ctx := context.Background()
	db, err := store.Open(ctx, dbtest.New(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(db.Close)
	// On v1, the version the fixture's engine derives rows with (words).
	nt, err := db.CreateTenantWith(ctx, "acme", "owner", store.TenantOptions{Dict: 1})
	if err != nil {
		t.Fatal(err)
	}
	return fixture{db: db, eng: memory.New(db, words{}, words{}, memory.Options{}), nt: nt}
}

func (f fixture) who() memory.Who {
	return memory.Who{TenantID: f.nt.TenantID, UserID: f.nt.UserID, UserName: f.nt.UserName}
}

// turns reads a conversation back, one entry per stored message.
func (f fixture) turns(t *testing.T, user, conv string) []store.Turn {
	t.Helper()
	ctx := context.Background()
	uid, err := f.db.EnsureUser(ctx, f.nt.TenantID, user)
	if err != nil {
		t.Fatal(err)
	}
	cid, err := f.db.EnsureConversation(ctx, f.nt.TenantID, uid, importer.ConversationKeyPrefix+conv, "")
	if err != nil {
		t.Fatal(err)
	}
	got, err := f.db.ConversationTurns(ctx, f.nt.TenantID, cid)
	if err != nil {
		t.Fatal(err)
	}
	return got
}

func (f fixture) messageCount(t *testing.T) int {
	t.Helper()
	var n int
	err := f.db.InTenant(context.Background(), f.nt.TenantID, func(tx pgx.Tx) error {
		return tx.QueryRow(context.Background(), `SELECT count(*) FROM messages WHERE tenant_id = $1`, f.nt.TenantID).Scan(&n)
	})
	if err != nil {
		t.Fatal(err)
	}
	return n
}

const twoConversations = `{"conversation": "trip", "title": "Trip", "user": "caroline", "turns": [` +
	`{"role": "user", "speaker": "Caroline", "text": "Hey Mel! I went to the LGBTQ support group yesterday.", "at": "2023-05-08T13:56:00Z"},` +
	`{"role": "assistant", "speaker": "Melanie", "text": "That's great — tell me\nmore!", "at": "2023-05-08T13:57:00+00:00"},` +
	`{"role": "user", "speaker": "Caroline", "text": "It was powerful.", "at": "2023-05-08T15:58:00+02:00"}]}` + "\n" +
	`{"conversation": "work", "turns": [{"role": "user", "text": "Default user here.", "at": "2022-01-01T00:00:00Z"}]}` + "\n"

func TestImportRoundTrip(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newFixture(t)
	im := importer.New(f.db, f.eng)
	var progress []int
	res, err := im.Import(ctx, f.who(), strings.NewReader(twoConversations), func(n int, _ importer.Result) { progress = append(progress, n) })
	if err != nil {
		t.Fatal(err)
	}
	if res != (importer.Result{Conversations: 2, Turns: 4}) {
		t.Fatalf("result %+v", res)
	}
	if len(progress) != 2 || progress[1] != 2 {
		t.Errorf("progress lines %v", progress)
	}
	trip := f.turns(t, "caroline", "trip")
	want := []struct {
		role, speaker, text string
		at                  time.Time
	}{
		{"user", "Caroline", "Hey Mel! I went to the LGBTQ support group yesterday.", time.Date(2023, 5, 8, 13, 56, 0, 0, time.UTC)},
		{"assistant", "Melanie", "That's great — tell me\nmore!", time.Date(2023, 5, 8, 13, 57, 0, 0, time.UTC)},
		{"user", "Caroline", "It was powerful.", time.Date(2023, 5, 8, 13, 58, 0, 0, time.UTC)},
	}
	if len(trip) != len(want) {
		t.Fatalf("stored %d turns, want %d", len(trip), len(want))
	}
	for i, w := range want {
		g := trip[i]
		if g.Role != w.role || g.Speaker != w.speaker || g.Body != w.text || !g.BornAt.Equal(w.at) {
			t.Errorf("turn %d: got %s/%s/%q at %v, want %s/%s/%q at %v", i, g.Role, g.Speaker, g.Body, g.BornAt, w.role, w.speaker, w.text, w.at)
		}
	}
	work := f.turns(t, f.nt.UserName, "work")
	if len(work) != 1 || work[0].Body != "Default user here." || work[0].UserID != f.nt.UserID {
		t.Fatalf("default-user conversation: %+v", work)
	}

	again, err := im.Import(ctx, f.who(), strings.NewReader(twoConversations), nil)
	if err != nil {
		t.Fatal(err)
	}
	if again != (importer.Result{Conversations: 2, Duplicates: 4}) {
		t.Fatalf("re-import result %+v, want all duplicates", again)
	}
	if n := f.messageCount(t); n != 4 {
		t.Fatalf("%d messages after re-import, want 4", n)
	}
}

func TestImportBadLineStoresNothingOfIt(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newFixture(t)
	im := importer.New(f.db, f.eng)
	bad := twoConversations + `{"conversation": "broken", "turns": [{"role": "user", "text": "fine", "at": "2023-05-08T13:56:00Z"}, {"role": "user", "text": "", "at": "2023-05-08T13:56:00Z"}]}` + "\n"

	err := importer.Check(strings.NewReader(bad), f.who())
	var le *importer.LineError
	if !errors.As(err, &le) || le.Line != 3 || !strings.Contains(err.Error(), "turns[1].text") {
		t.Fatalf("Check: %v, want line 3 turns[1].text", err)
	}
	if n := f.messageCount(t); n != 0 {
		t.Fatalf("Check stored %d messages", n)
	}

	res, err := im.Import(ctx, f.who(), strings.NewReader(bad), nil)
	if !errors.As(err, &le) || le.Line != 3 {
		t.Fatalf("Import: %v, want a line 3 error", err)
	}
	if res.Turns != 4 {
		t.Fatalf("lines before the bad one: %+v", res)
	}
	if got := f.turns(t, f.nt.UserName, "broken"); len(got) != 0 {
		t.Fatalf("the bad line stored %d turns", len(got))
	}
}

// failAfter lets n captures through, then fails: a database dying mid-line.
type failAfter struct {
	next importer.Capturer
	n    int
}

func (c *failAfter) Capture(ctx context.Context, m memory.Message) (store.Captured, error) {
	if c.n == 0 {
		return store.Captured{}, errors.New("connection lost")
	}
	c.n--
	return c.next.Capture(ctx, m)
}

func TestImportStorageFailureThenReimport(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newFixture(t)
	res, err := importer.New(f.db, &failAfter{next: f.eng, n: 2}).Import(ctx, f.who(), strings.NewReader(twoConversations), nil)
	if err == nil || !strings.Contains(err.Error(), "line 1: turn 2:") || !strings.Contains(err.Error(), "connection lost") {
		t.Fatalf("err = %v, want line 1 turn 2 failure", err)
	}
	var le *importer.LineError
	if errors.As(err, &le) {
		t.Fatal("a storage failure must not look like bad input")
	}
	if res.Turns != 2 {
		t.Fatalf("result %+v, want the 2 turns stored before the failure", res)
	}
	again, err := importer.New(f.db, f.eng).Import(ctx, f.who(), strings.NewReader(twoConversations), nil)
	if err != nil {
		t.Fatal(err)
	}
	if again.Turns != 2 || again.Duplicates != 2 {
		t.Fatalf("re-import %+v, want 2 new and 2 duplicates", again)
	}
	if n := f.messageCount(t); n != 4 {
		t.Fatalf("%d messages, want 4", n)
	}
}

func TestImportNeedsAUser(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	noUser := memory.Who{TenantID: f.nt.TenantID}
	err := importer.Check(strings.NewReader(twoConversations), noUser)
	var le *importer.LineError
	if !errors.As(err, &le) || le.Line != 2 || !strings.Contains(err.Error(), "user: required") {
		t.Fatalf("err = %v, want line 2 user required", err)
	}
	// A default user given by name only is created on first use.
	res, err := importer.New(f.db, f.eng).Import(context.Background(), memory.Who{TenantID: f.nt.TenantID, UserName: "bob"}, strings.NewReader(twoConversations), nil)
	if err != nil || res.Turns != 4 {
		t.Fatalf("import as bob: %+v, %v", res, err)
	}
	if got := f.turns(t, "bob", "work"); len(got) != 1 {
		t.Fatalf("bob's conversation has %d turns", len(got))
	}
}

// refusal is a body read error that says its status, as the server's body
// deadline and budget do.
type refusal struct {
	status int
	msg    string
}

func (r refusal) Error() string   { return r.msg }
func (r refusal) StatusCode() int { return r.status }

func TestHandler(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	im := importer.New(f.db, f.eng)
	e := echo.New()
	resolve := func(c echo.Context) (memory.Who, importer.Budget, error) {
		if c.Request().Header.Get("X-Perpetuity-Key") != "good" {
			return memory.Who{}, nil, echo.NewHTTPError(http.StatusUnauthorized, "bad key")
		}
		return f.who(), nil, nil
	}
	e.POST("/perpetuity/import", im.Handler(resolve, 4096, slog.New(slog.DiscardHandler)))
	badLine2 := strings.SplitAfter(twoConversations, "\n")[0] + `{"conversation": "x", "turns": [{"role": "bot", "text": "a", "at": "2023-05-08T13:56:00Z"}]}`

	cases := []struct {
		name, key, body string
		status          int
		want            string
		// readErr, when set, is what reading the body fails with after
		// its first bytes (the server's body deadline or budget).
		readErr error
	}{
		{"unauthenticated", "nope", twoConversations, 401, "bad key", nil},
		{"bad line", "good", badLine2, 400, `"line":2`, nil},
		{"too large", "good", strings.Repeat(" ", 5000), 413, "exceeds 4096 bytes", nil},
		{"body refused for the budget", "good", twoConversations, 503, "retry shortly", refusal{503, "too many bodies; retry shortly"}},
		{"body too slow", "good", twoConversations, 408, "too slow", refusal{408, "too slow"}},
		{"body cut off", "good", twoConversations, 400, "unexpected EOF", io.ErrUnexpectedEOF},
		{"good", "good", twoConversations, 200, `{"conversations":2,"turns":4,"duplicates":0}`, nil},
	}
	for _, tc := range cases { // sequential: "good" finding no duplicates proves the rejected bodies stored nothing
		var body io.Reader = strings.NewReader(tc.body)
		if tc.readErr != nil {
			body = io.MultiReader(strings.NewReader(tc.body[:10]), iotest.ErrReader(tc.readErr))
		}
		req := httptest.NewRequest(http.MethodPost, "/perpetuity/import", body)
		req.Header.Set("X-Perpetuity-Key", tc.key)
		rec := httptest.NewRecorder()
		e.ServeHTTP(rec, req)
		if rec.Code != tc.status || !strings.Contains(rec.Body.String(), tc.want) {
			t.Errorf("%s: %d %s, want %d containing %s", tc.name, rec.Code, rec.Body, tc.status, tc.want)
		}
		if retry := rec.Header().Get("Retry-After"); (tc.status == 503) != (retry == "1") {
			t.Errorf("%s: Retry-After %q", tc.name, retry)
		}
		if tc.status == 400 && tc.readErr == nil {
			var b struct {
				Error struct {
					Message string
					Line    int
				}
			}
			if err := json.Unmarshal(rec.Body.Bytes(), &b); err != nil || b.Error.Line != 2 || !strings.HasPrefix(b.Error.Message, "line 2: turns[0].role") {
				t.Errorf("%s: body %s", tc.name, rec.Body)
			}
		}
	}
}
