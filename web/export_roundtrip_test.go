package web_test

import (
	"bytes"
	"context"
	"net/http"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/perpetuity/perpetuity/memory"
	"github.com/perpetuity/perpetuity/memory/importer"
	"github.com/perpetuity/perpetuity/web/webtest"
)

// TestConsoleExportRoundTrip: a memory imported from ChatGPT's export,
// downloaded from the console, imported into another tenant and downloaded
// again gives the same bytes, and the console's download is the command
// line's export byte for byte.
func TestConsoleExportRoundTrip(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	srv := webtest.Start(t, webtest.Options{})
	a := newOpsTeam(t, srv, "Round Trip A")
	b := newOpsTeam(t, srv, "Round Trip B")

	gpt, err := os.Open("../memory/importer/testdata/chatgpt/conversations.json")
	if err != nil {
		t.Fatal(err)
	}
	defer gpt.Close()
	var history bytes.Buffer
	if _, err := importer.ChatGPTToJSONL(gpt, &history); err != nil {
		t.Fatal(err)
	}
	// Speakers and a line of our own format beside ChatGPT's.
	history.WriteString(`{"conversation": "trip", "title": "Trip", "turns": [{"role": "user", "speaker": "Caroline", "text": "We land at 9:40 <on the 14th>.", "at": "2023-05-08T13:56:00+02:00"}, {"role": "assistant", "speaker": "Mel", "text": "Noted & saved.", "at": "2023-05-08T11:57:00.5Z"}]}` + "\n")

	importInto := func(tm *opsTeam, user string, jsonl []byte) int64 {
		t.Helper()
		res, err := importer.New(srv.DB, tm.eng).Import(ctx, memory.Who{TenantID: tm.tenantID, UserName: user}, bytes.NewReader(jsonl), nil)
		if err != nil || res.Turns != 10 || res.Duplicates != 0 {
			t.Fatalf("import into %s: %+v, %v", user, res, err)
		}
		id, err := srv.DB.UserByName(ctx, tm.tenantID, user)
		if err != nil {
			t.Fatal(err)
		}
		return id
	}
	download := func(tm *opsTeam, userID int64) string {
		t.Helper()
		p := tm.admin.Get("/console/users/" + strconv.FormatInt(userID, 10) + "/export")
		if p.Status != http.StatusOK || !strings.HasPrefix(p.Header.Get("Content-Disposition"), "attachment") {
			t.Fatalf("download: status %d, %q", p.Status, p.Header.Get("Content-Disposition"))
		}
		return p.Body
	}

	src := importInto(a, "traveller", history.Bytes())
	first := download(a, src)
	var cli bytes.Buffer
	if _, err := importer.Export(ctx, srv.DB, a.tenantID, src, &cli); err != nil {
		t.Fatal(err)
	}
	if first != cli.String() {
		t.Fatalf("console download differs from the command line's export:\nconsole:\n%s\ncli:\n%s", first, cli.String())
	}
	for _, s := range []string{`"conversation":"chatgpt-`, `"conversation":"trip"`, `"speaker":"Caroline"`, `"at":"2023-05-08T11:56:00Z"`, `We land at 9:40 <on the 14th>.`} {
		if !strings.Contains(first, s) {
			t.Errorf("download lacks %s", s)
		}
	}

	dst := importInto(b, "restored", []byte(first))
	if second := download(b, dst); second != first {
		t.Fatalf("round trip through the console changed the memory:\nfirst:\n%s\nsecond:\n%s", first, second)
	}
}
