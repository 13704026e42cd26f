package web_test

import (
	"context"
	"mime"
	"net/http"
	"strings"
	"testing"

	"github.com/perpetuity/perpetuity/memory/importer"
	"github.com/perpetuity/perpetuity/web/webtest"
)

func TestExportDownload(t *testing.T) {
	t.Parallel()
	srv := webtest.Start(t, webtest.Options{})
	tm := signUpTeam(t, srv, "Export Team")
	other := signUpTeam(t, srv, "Other Team")
	member, _, _ := addMember(t, srv, tm, "tenant_reader")
	storeTurn(t, srv, webtest.Turn{TenantID: tm.tenantID, UserID: tm.userID, Conversation: "h:trip", Role: "user", Text: "We land at 9:40 <on the 14th>."})
	storeTurn(t, srv, webtest.Turn{TenantID: tm.tenantID, UserID: tm.userID, Conversation: "h:trip", Role: "assistant", Speaker: "Mel", Text: "Noted & saved."})
	empty, err := srv.DB.EnsureUser(context.Background(), tm.tenantID, "quiet one")
	if err != nil {
		t.Fatal(err)
	}

	cases := []struct {
		name   string
		client *webtest.Client
		path   string
		status int
		turns  int // -1: not a download
	}{
		{"admin", tm.admin, "/console/users/" + itoa(tm.userID) + "/export", http.StatusOK, 2},
		{"admin, user without memory", tm.admin, "/console/users/" + itoa(empty) + "/export", http.StatusOK, 0},
		{"member", member, "/console/users/" + itoa(tm.userID) + "/export", http.StatusForbidden, -1},
		{"another tenant's user", other.admin, "/console/users/" + itoa(tm.userID) + "/export", http.StatusNotFound, -1},
		{"not an id", tm.admin, "/console/users/x/export", http.StatusNotFound, -1},
		{"signed out", srv.NewClient(t), "/console/users/" + itoa(tm.userID) + "/export", http.StatusSeeOther, -1},
	}
	for _, tc := range cases {
		p := tc.client.Get(tc.path)
		if p.Status != tc.status {
			t.Errorf("%s: status %d, want %d", tc.name, p.Status, tc.status)
			continue
		}
		disp := p.Header.Get("Content-Disposition")
		if tc.turns < 0 {
			if disp != "" || strings.Contains(p.Body, "We land") {
				t.Errorf("%s: leaked a download (%q): %q", tc.name, disp, p.Body)
			}
			continue
		}
		kind, params, err := mime.ParseMediaType(disp)
		if err != nil || kind != "attachment" || !strings.HasPrefix(params["filename"], "perpetuity-") || !strings.HasSuffix(params["filename"], ".jsonl") {
			t.Errorf("%s: Content-Disposition %q", tc.name, disp)
		}
		if ct := p.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/x-ndjson") {
			t.Errorf("%s: Content-Type %q", tc.name, ct)
		}
		if cc := p.Header.Get("Cache-Control"); cc != "no-store" {
			t.Errorf("%s: Cache-Control %q, want no-store", tc.name, cc)
		}
		n := 0
		var texts []string
		if err := importer.Parse(strings.NewReader(p.Body), func(_ int, c importer.Conversation) error {
			n += len(c.Turns)
			for _, tr := range c.Turns {
				texts = append(texts, tr.Text)
			}
			return nil
		}); err != nil {
			t.Errorf("%s: download is not import input: %v\n%s", tc.name, err, p.Body)
		}
		if n != tc.turns {
			t.Errorf("%s: %d turns, want %d\n%s", tc.name, n, tc.turns, p.Body)
		}
		if tc.turns == 2 && strings.Join(texts, "|") != "We land at 9:40 <on the 14th>.|Noted & saved." {
			t.Errorf("%s: texts %q", tc.name, texts)
		}
	}
	if got := auditActions(t, srv, tm.tenantID); !contains(got, "memory.export") {
		t.Errorf("audit log %v lacks memory.export", got)
	}
}
