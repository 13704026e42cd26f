package web_test

import (
	"context"
	"net/http"
	"net/url"
	"testing"
	"time"

	"github.com/perpetuity/perpetuity/memory/dict"
	"github.com/perpetuity/perpetuity/web"
	"github.com/perpetuity/perpetuity/web/webtest"
)

// waitReady polls a version's progress fragment, as the page does, until
// its derivation is done.
func waitReady(t *testing.T, cl *webtest.Client, version string) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		st := cl.Get("/console/dictionaries/"+version+"/progress").TestID("rollout").AttrOr("data-state", "")
		if st == "ready" {
			return
		}
		if st != "deriving" || time.Now().After(deadline) {
			t.Fatalf("v%s progress: state %q", version, st)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestDictionaryV3RolloutFromConsole (issue 16, item 4): a team on v1 with
// memory moves to v3 from the console alone, in a database that does not
// hold v3 yet: a platform admin loads the shipped v3 dark, the team's admin
// derives it (every row with its dense vector), flips to it (the serving
// engine's arena holds the vectors), flips back to v1, then forward again.
// New teams start on v3 without any of this.
func TestDictionaryV3RolloutFromConsole(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	srv := webtest.Start(t, webtest.Options{})
	o := newOpsTeam(t, srv, "Gardeners")
	o.say(t, o.eng, "alice", 9)
	// As in a deployment from before v3 was the default, which never loaded it.
	if _, err := srv.Owner.Exec(ctx, `DELETE FROM dictionaries WHERE version = $1`, dict.Default); err != nil {
		t.Fatal(err)
	}
	if err := web.CreatePlatformAdmin(ctx, srv.DB, "root-"+unique()+"@example.com", password); err != nil {
		t.Fatal(err)
	}
	var rootEmail string
	if err := srv.Owner.QueryRow(ctx, `SELECT email FROM console_accounts WHERE role = 'platform_admin'`).Scan(&rootEmail); err != nil {
		t.Fatal(err)
	}
	root := srv.NewClient(t)
	root.MustSignIn(rootEmail, password)
	root.Get("/platform/tenants")
	if p := root.Post("/platform/tenants/"+itoa(o.tenantID)+"/enter", nil); p.Status != http.StatusSeeOther {
		t.Fatalf("enter tenant: %d", p.Status)
	}
	p := root.Get("/console/dictionaries")
	if p.TestID("dict-builtin").Find(`option[value="3"]`).Length() != 1 {
		t.Fatalf("the shipped v3 is not offered: %s", p.TestID("dict-upload-form").Text())
	}
	if p := root.Post("/console/dictionaries", url.Values{"builtin": {"3"}}); p.Status != http.StatusSeeOther {
		t.Fatalf("load v3: %d %s", p.Status, p.TestID("form-error").Text())
	}
	p = o.admin.Get("/console/dictionaries")
	if o.active(t) != 1 || rolloutState(p, 3) != "" || p.TestID("dict-active").Text() != "v1" {
		t.Fatalf("after loading v3: v%d serves, v3 %q", o.active(t), rolloutState(p, 3))
	}

	if p := o.admin.Post("/console/dictionaries/3/derive", nil); p.Status != http.StatusSeeOther {
		t.Fatalf("derive v3: %d", p.Status)
	}
	o.say(t, o.eng, "bob", 3) // while it derives, or just after
	waitReady(t, o.admin, "3")
	var items, dense int
	if err := srv.Owner.QueryRow(ctx, `SELECT (SELECT count(*) FROM items WHERE tenant_id = $1),
		(SELECT count(*) FROM retrieval_rows WHERE tenant_id = $1 AND dict_version = 3 AND dense IS NOT NULL)`, o.tenantID).
		Scan(&items, &dense); err != nil {
		t.Fatal(err)
	}
	if items != 12 || dense != items {
		t.Fatalf("%d of %d items have a dense v3 row", dense, items)
	}

	flip := func(v int) {
		t.Helper()
		if p := o.admin.Post("/console/dictionaries/"+itoa(int64(v))+"/flip", url.Values{"confirm": {"yes"}}); p.Status != http.StatusSeeOther || o.active(t) != v {
			t.Fatalf("flip to v%d: %d, v%d serves", v, p.Status, o.active(t))
		}
		a, err := o.eng.ArenaSnapshot(ctx, o.tenantID)
		if err != nil || a.DictVersion != v || a.Count != items || (a.Space != nil) != (v == 3) {
			t.Fatalf("after the flip to v%d the arena is v%d with %d items, vectors %v (%v)", v, a.DictVersion, a.Count, a.Space != nil, err)
		}
	}
	flip(3)
	p = o.admin.Get("/console/dictionaries")
	if rolloutState(p, 3) != "serving" || rolloutState(p, 1) != "ready" || p.TestID("dict-active").Text() != "v3" {
		t.Fatalf("on v3 the page shows v1 %q, v3 %q", rolloutState(p, 1), rolloutState(p, 3))
	}
	if p.Doc.Find(`[data-testid="dict-row"][data-version="1"] [data-testid="rollout-flip"]`).Length() != 1 {
		t.Fatal("no way back to v1 on the page")
	}
	flip(1)
	flip(3)

	// A team that signs up now starts on v3, nothing to derive.
	fresh := signUpTeam(t, srv, "Newcomers")
	p = fresh.admin.Get("/console/dictionaries")
	if p.TestID("dict-active").Text() != "v"+itoa(dict.Default) || rolloutState(p, dict.Default) != "serving" {
		t.Fatalf("a new team serves %q", p.TestID("dict-active").Text())
	}
}
