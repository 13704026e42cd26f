package web_test

import (
	"context"
	"net/http"
	"net/url"
	"testing"

	"github.com/perpetuity/perpetuity/web/webtest"
)

// TestBindingsOnConsole: the user and conversation pages show the binding
// history; an admin's rename appends a binding that the next frame's
// labels read; members may not rename, other teams not see.
func TestBindingsOnConsole(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	srv := webtest.Start(t, webtest.Options{})
	o := newOpsTeam(t, srv, "Binders")
	alice := o.say(t, o.eng, "alice", 2)
	var conv, item int64
	if err := srv.Owner.QueryRow(ctx, `SELECT conversation_id, id FROM items WHERE tenant_id = $1 AND user_id = $2 ORDER BY id LIMIT 1`,
		o.tenantID, alice).Scan(&conv, &item); err != nil {
		t.Fatal(err)
	}
	userPage, convPage := "/console/users/"+itoa(alice), "/console/conversations/"+itoa(conv)
	if p := o.admin.Get(userPage); p.TestID("binding-row").Length() != 1 || p.TestID("rename-form").Length() != 1 {
		t.Fatalf("user page bindings: %d rows", p.TestID("binding-row").Length())
	}

	for _, c := range []struct{ page, label string }{{userPage, "Alice Martin"}, {convPage, "Lisbon, May"}} {
		o.admin.Get(c.page)
		if p := o.admin.Post(c.page+"/rename", url.Values{"label": {"two\nlines"}}); p.Status != http.StatusBadRequest {
			t.Fatalf("%s: a two-line label: %d", c.page, p.Status)
		}
		p := o.admin.Post(c.page+"/rename", url.Values{"label": {c.label}})
		if p.Status != http.StatusSeeOther || p.Location() != c.page {
			t.Fatalf("%s rename: %d to %q", c.page, p.Status, p.Location())
		}
		page := o.admin.Get(c.page)
		if rows := page.TestID("binding-row"); rows.Length() != 2 || page.TestID("binding-value").First().Text() != c.label {
			t.Fatalf("%s history: %q", c.page, page.TestID("bindings-table").Text())
		}
	}
	rs, err := srv.DB.RenderItems(ctx, o.tenantID, []int64{item})
	if err != nil || len(rs) != 1 || rs[0].Speaker != "Alice Martin" || rs[0].ConvTitle != "Lisbon, May" {
		t.Fatalf("the next frame's labels: %+v %v", rs, err)
	}

	mem, _, _ := addMember(t, srv, o.team, "tenant_reader")
	mem.Get(userPage)
	if p := mem.Post(userPage+"/rename", url.Values{"label": {"Mallory"}}); p.Status != http.StatusForbidden {
		t.Fatalf("member rename: %d", p.Status)
	}
	if p := mem.Get(userPage); p.TestID("rename-form").Length() != 0 || p.TestID("binding-row").Length() != 2 {
		t.Fatal("a member sees a rename form, or not the history")
	}
	other := signUpTeam(t, srv, "Strangers")
	other.admin.Get("/console")
	if p := other.admin.Post(convPage+"/rename", url.Values{"label": {"mine"}}); p.Status != http.StatusNotFound {
		t.Fatalf("another team's rename: %d", p.Status)
	}
}
