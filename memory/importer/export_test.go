package importer_test

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/perpetuity/perpetuity/memory"
	"github.com/perpetuity/perpetuity/memory/importer"
	"github.com/perpetuity/perpetuity/memory/store"
	"github.com/perpetuity/perpetuity/migrations/dbtest"
)

// pieces chunks every message into items of at most 16 bytes, so export
// has to join a message's items back together in part order.
type pieces struct{ words }

func (p pieces) Chunk(s string, _ int) ([]string, []int) {
	var out []string
	var counts []int
	for len(s) > 0 {
		n := min(16, len(s))
		for n < len(s) && !utf8.RuneStart(s[n]) {
			n++
		}
		out, counts = append(out, s[:n]), append(counts, p.Count(s[:n]))
		s = s[n:]
	}
	return out, counts
}

// exportInput covers what export must carry over: speakers, times with
// offsets and fractions, multi-line and multi-byte text longer than one
// item, a conversation without a title, and a conversation of another user
// that must not be exported.
const exportInput = `{"conversation": "trip-2023", "title": "  Planning the trip ", "turns": [` +
	`{"role": "user", "speaker": " Caroline ", "text": "Hey Mel! Shall we book Lisbon — or Porto? 🚋🚋", "at": "2023-05-08T15:56:00.123456+02:00"},` +
	`{"role": "assistant", "speaker": "Melanie", "text": "Porto.\nDefinitely Porto: the bookshop, the river, the tarts.", "at": "2023-05-08T13:57:00Z"}]}` + "\n" +
	`{"conversation": "untitled", "turns": [{"role": "assistant", "text": "I start this one.", "at": "2024-01-02T03:04:00Z"}, ` +
	`{"role": "user", "text": "First line is the title\nsecond line is not", "at": "2024-01-02T03:04:05Z"}]}` + "\n" +
	`{"conversation": "someone-else", "user": "bob", "turns": [{"role": "user", "text": "Not Caroline's memory.", "at": "2024-01-01T00:00:00Z"}]}` + "\n"

type exportFixture struct {
	db  *store.DB
	eng *memory.Engine
}

func newExportFixture(t *testing.T) exportFixture {
	t.Helper()
	db, err := store.Open(context.Background(), dbtest.New(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(db.Close)
	return exportFixture{db: db, eng: memory.New(db, pieces{}, words{}, memory.Options{})}
}

func (f exportFixture) tenant(t *testing.T, name, user string) memory.Who {
	t.Helper()
	nt, err := f.db.CreateTenant(context.Background(), name, user)
	if err != nil {
		t.Fatal(err)
	}
	return memory.Who{TenantID: nt.TenantID, UserID: nt.UserID, UserName: nt.UserName}
}

func (f exportFixture) export(t *testing.T, who memory.Who) (string, importer.Result) {
	t.Helper()
	var buf bytes.Buffer
	res, err := importer.Export(context.Background(), f.db, who.TenantID, who.UserID, &buf)
	if err != nil {
		t.Fatal(err)
	}
	return buf.String(), res
}

func TestExportRoundTrip(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newExportFixture(t)
	a := f.tenant(t, "acme", "caroline")
	if _, err := importer.New(f.db, f.eng).Import(ctx, a, strings.NewReader(exportInput), nil); err != nil {
		t.Fatal(err)
	}
	// A conversation the proxy named itself, with gaps in its positions
	// and a reply cut short.
	conv, err := f.db.EnsureConversation(ctx, a.TenantID, a.UserID, "auto:0123abcd", "Debugging the build")
	if err != nil {
		t.Fatal(err)
	}
	proxyWho := a
	proxyWho.ConversationID = conv
	at := time.Date(2025, 2, 3, 4, 5, 6, 789000, time.UTC)
	for _, m := range []memory.Message{
		{Who: proxyWho, Role: "user", Text: "why does `go build` fail with CGO_ENABLED=0?", Position: 0, At: at},
		{Who: proxyWho, Role: "assistant", Text: "Because a dependency needs cgo", Position: 1, At: at.Add(time.Second), Interrupted: true},
		{Who: proxyWho, Role: "user", Text: "which one?", Position: 4, At: at.Add(time.Minute)},
	} {
		if _, err := f.eng.Capture(ctx, m); err != nil {
			t.Fatal(err)
		}
	}

	first, res := f.export(t, a)
	if res != (importer.Result{Conversations: 3, Turns: 7}) {
		t.Errorf("export result %+v", res)
	}
	var got []importer.Conversation
	if err := importer.Parse(strings.NewReader(first), func(_ int, c importer.Conversation) error {
		got = append(got, c)
		return nil
	}); err != nil {
		t.Fatalf("export does not parse as import input: %v\n%s", err, first)
	}
	want := []importer.Conversation{
		{ID: "trip-2023", Title: "Planning the trip", Turns: []importer.Turn{
			{Role: "user", Speaker: "Caroline", Text: "Hey Mel! Shall we book Lisbon — or Porto? 🚋🚋", At: time.Date(2023, 5, 8, 13, 56, 0, 123456000, time.UTC)},
			{Role: "assistant", Speaker: "Melanie", Text: "Porto.\nDefinitely Porto: the bookshop, the river, the tarts.", At: time.Date(2023, 5, 8, 13, 57, 0, 0, time.UTC)},
		}},
		{ID: "untitled", Title: "First line is the title", Turns: []importer.Turn{
			{Role: "assistant", Text: "I start this one.", At: time.Date(2024, 1, 2, 3, 4, 0, 0, time.UTC)},
			{Role: "user", Text: "First line is the title\nsecond line is not", At: time.Date(2024, 1, 2, 3, 4, 5, 0, time.UTC)},
		}},
		{ID: "auto:0123abcd", Title: "Debugging the build", Turns: []importer.Turn{
			{Role: "user", Text: "why does `go build` fail with CGO_ENABLED=0?", At: at},
			{Role: "assistant", Text: "Because a dependency needs cgo", At: at.Add(time.Second)},
			{Role: "user", Text: "which one?", At: at.Add(time.Minute)},
		}},
	}
	if len(got) != len(want) {
		t.Fatalf("exported %d conversations, want %d:\n%s", len(got), len(want), first)
	}
	for i, w := range want {
		g := got[i]
		if g.ID != w.ID || g.Title != w.Title || g.User != "" || len(g.Turns) != len(w.Turns) {
			t.Errorf("conversation %d: %q %q user %q, %d turns; want %q %q, %d turns", i, g.ID, g.Title, g.User, len(g.Turns), w.ID, w.Title, len(w.Turns))
			continue
		}
		for j, wt := range w.Turns {
			gt := g.Turns[j]
			if gt.Role != wt.Role || gt.Speaker != wt.Speaker || gt.Text != wt.Text || !gt.At.Equal(wt.At) || gt.At.Location() != time.UTC {
				t.Errorf("conversation %q turn %d: %+v, want %+v", w.ID, j, gt, wt)
			}
		}
	}
	if strings.Contains(first, "Not Caroline") {
		t.Error("another user's conversation was exported")
	}

	// Into another tenant, under another name, and out again: same bytes.
	b := f.tenant(t, "elsewhere", "owner")
	restored := memory.Who{TenantID: b.TenantID, UserName: "caroline-restored"}
	if err := importer.Check(strings.NewReader(first), restored); err != nil {
		t.Fatal(err)
	}
	r, err := importer.New(f.db, f.eng).Import(ctx, restored, strings.NewReader(first), nil)
	if err != nil {
		t.Fatal(err)
	}
	if r != (importer.Result{Conversations: 3, Turns: 7}) {
		t.Errorf("re-import result %+v", r)
	}
	uid, err := f.db.EnsureUser(ctx, b.TenantID, "caroline-restored")
	if err != nil {
		t.Fatal(err)
	}
	second, _ := f.export(t, memory.Who{TenantID: b.TenantID, UserID: uid})
	if second != first {
		t.Errorf("export after round trip differs:\nfirst:\n%s\nsecond:\n%s", first, second)
	}
	// And the round trip is idempotent: importing the export again stores nothing.
	again, err := importer.New(f.db, f.eng).Import(ctx, restored, strings.NewReader(second), nil)
	if err != nil || again != (importer.Result{Conversations: 3, Duplicates: 7}) {
		t.Errorf("importing the export again: %+v, %v", again, err)
	}
}

func TestExportIsTenantScoped(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newExportFixture(t)
	a := f.tenant(t, "acme", "caroline")
	b := f.tenant(t, "other", "mallory")
	if _, err := importer.New(f.db, f.eng).Import(ctx, a, strings.NewReader(`{"conversation": "c", "turns": [{"role": "user", "text": "secret", "at": "2024-01-01T00:00:00Z"}]}`), nil); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name     string
		tenant   int64
		user     int64
		wantErr  error
		wantBody string
	}{
		{"own user", a.TenantID, a.UserID, nil, "secret"},
		{"another tenant's user id", b.TenantID, a.UserID, store.ErrNotFound, ""},
		{"own user without memory", b.TenantID, b.UserID, nil, ""},
	}
	for _, tc := range cases {
		var buf bytes.Buffer
		res, err := importer.Export(ctx, f.db, tc.tenant, tc.user, &buf)
		if !errors.Is(err, tc.wantErr) && !(err == nil && tc.wantErr == nil) {
			t.Errorf("%s: error %v, want %v", tc.name, err, tc.wantErr)
		}
		if tc.wantBody == "" && buf.Len() != 0 {
			t.Errorf("%s: wrote %q, want nothing", tc.name, buf.String())
		}
		if tc.wantBody != "" && (!strings.Contains(buf.String(), tc.wantBody) || res.Conversations != 1) {
			t.Errorf("%s: wrote %q (%+v)", tc.name, buf.String(), res)
		}
	}
}

type failingWriter struct{}

func (failingWriter) Write([]byte) (int, error) { return 0, errors.New("disk full") }

func TestExportWriteError(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newExportFixture(t)
	a := f.tenant(t, "acme", "caroline")
	if _, err := importer.New(f.db, f.eng).Import(ctx, a, strings.NewReader(exportInput[:strings.Index(exportInput, "\n")+1]), nil); err != nil {
		t.Fatal(err)
	}
	if _, err := importer.Export(ctx, f.db, a.TenantID, a.UserID, failingWriter{}); err == nil || !strings.Contains(err.Error(), "disk full") {
		t.Fatalf("error %v, want the writer's", err)
	}
}
