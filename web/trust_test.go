package web_test

import (
	"context"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/PuerkitoBio/goquery"

	"github.com/perpetuity/perpetuity/memory/store"
	"github.com/perpetuity/perpetuity/web"
	"github.com/perpetuity/perpetuity/web/webtest"
)

// Issue 18 ("A console a team admin trusts"), findings 1 and 2, over HTTP.

// TestSignUpShowsTheFirstKeyOnceAfterARedirect: the sign-up form
// redirects; the page it lands on shows the key the first time only, and
// reloading it says so instead of failing on an expired form. Only the
// browser that signed up can open it, and the database never holds the
// key in clear.
func TestSignUpShowsTheFirstKeyOnceAfterARedirect(t *testing.T) {
	t.Parallel()
	srv := webtest.Start(t, webtest.Options{})
	ctx := context.Background()
	cl := srv.NewClient(t)
	cl.Get("/signup")
	p := cl.Post("/signup", url.Values{"team": {"Once"}, "email": {"once@example.com"}, "password": {password}})
	if p.Status != http.StatusSeeOther || !strings.HasPrefix(p.Location(), "/console/welcome/") {
		t.Fatalf("sign-up answered %d to %q, want a redirect to the welcome page", p.Status, p.Location())
	}
	if strings.Contains(p.Body, "ppk_") || strings.Contains(p.Location(), "ppk_") {
		t.Fatal("the sign-up answer or its redirect carries the key")
	}
	var sealed, plain int
	if err := srv.Owner.QueryRow(ctx, `SELECT count(*) FILTER (WHERE sealed IS NOT NULL),
		count(*) FILTER (WHERE strpos(encode(sealed, 'escape'), 'ppk_') > 0) FROM console_reveals`).Scan(&sealed, &plain); err != nil {
		t.Fatal(err)
	}
	if sealed != 1 || plain != 0 {
		t.Fatalf("reveals: %d sealed, %d holding a key in clear", sealed, plain)
	}
	// Another browser, and another team's admin, cannot open it.
	if o := srv.NewClient(t).Get(p.Location()); o.Status != http.StatusSeeOther || o.Location() != "/signin" {
		t.Errorf("signed out: %d to %q", o.Status, o.Location())
	}
	other := signUpTeam(t, srv, "Other")
	if o := other.admin.Get(p.Location()); strings.Contains(o.Body, "ppk_") && o.TestID("new-key").Length() != 0 {
		t.Error("another team's admin sees the key")
	}
	first := cl.Get(p.Location())
	key := strings.TrimSpace(first.TestID("new-key").Text())
	if first.Status != http.StatusOK || first.TestID("welcome").Length() != 1 || !strings.HasPrefix(key, "ppk_") {
		t.Fatalf("welcome page %d shows key %q", first.Status, key)
	}
	if _, err := srv.DB.ResolveKey(ctx, key); err != nil {
		t.Fatalf("the key shown does not resolve: %v", err)
	}
	again := cl.Get(p.Location())
	if again.Status != http.StatusOK || strings.Contains(again.Body, key) || again.TestID("key-shown-once").Length() != 1 {
		t.Fatalf("reloaded welcome page: %d, key shown again %v, says shown once %v", again.Status,
			strings.Contains(again.Body, key), again.TestID("key-shown-once").Length() == 1)
	}
	if !strings.Contains(again.TestID("key-shown-once").Text(), store10(key)) {
		t.Errorf("the reloaded page does not name the key by its prefix: %q", again.TestID("key-shown-once").Text())
	}
	if err := srv.Owner.QueryRow(ctx, `SELECT count(*) FROM console_reveals WHERE sealed IS NOT NULL`).Scan(&sealed); err != nil || sealed != 0 {
		t.Errorf("%d reveals still hold a sealed key after it was shown (%v)", sealed, err)
	}
}

func store10(key string) string { return key[:10] }

// TestNewKeyIsShownOnceAndReloadingMakesNone: the new-key form redirects
// to a page that shows the key once; reloading it makes no second key and
// shows the first no more.
func TestNewKeyIsShownOnceAndReloadingMakesNone(t *testing.T) {
	t.Parallel()
	srv := webtest.Start(t, webtest.Options{})
	tm := signUpTeam(t, srv, "Reload")
	tm.admin.Get("/console/keys")
	p := tm.admin.Post("/console/keys", url.Values{"name": {"laptop"}, "user_id": {itoa(tm.userID)}})
	if p.Status != http.StatusSeeOther || !strings.HasPrefix(p.Location(), "/console/keys/new/") {
		t.Fatalf("create answered %d to %q", p.Status, p.Location())
	}
	keys := func() int {
		var n int
		if err := srv.Owner.QueryRow(context.Background(), `SELECT count(*) FROM api_keys WHERE tenant_id = $1`, tm.tenantID).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	first := tm.admin.Get(p.Location())
	key := strings.TrimSpace(first.TestID("new-key").Text())
	if !strings.HasPrefix(key, "ppk_") || keys() != 2 {
		t.Fatalf("new-key page shows %q with %d keys", key, keys())
	}
	for range 3 {
		again := tm.admin.Get(p.Location())
		if strings.Contains(again.Body, key) || again.TestID("key-shown-once").Length() != 1 {
			t.Fatalf("reloaded: key shown again %v", strings.Contains(again.Body, key))
		}
		if !strings.Contains(again.TestID("key-shown-once").Text(), "laptop") {
			t.Errorf("the reloaded page does not name the key: %q", again.TestID("key-shown-once").Text())
		}
	}
	if keys() != 2 {
		t.Fatalf("%d keys after reloading, want 2", keys())
	}
	// A made-up or malformed reveal id is the same page, saying the same.
	for _, id := range []string{"999999", "abc", "-1"} {
		if g := tm.admin.Get("/console/keys/new/" + id); g.Status != http.StatusOK || g.TestID("new-key").Length() != 0 || g.TestID("key-shown-once").Length() != 1 {
			t.Errorf("reveal %s: %d", id, g.Status)
		}
	}
}

// TestNewKeyNeedsANameAndAChosenUser: a blank name is a form error, and no
// memory user is chosen for the admin, so a form sent as it came makes no
// key bound to whoever sorts first.
func TestNewKeyNeedsANameAndAChosenUser(t *testing.T) {
	t.Parallel()
	srv := webtest.Start(t, webtest.Options{})
	tm := signUpTeam(t, srv, "Careful")
	page := tm.admin.Get("/console/keys")
	sel := page.TestID("key-user-select")
	if _, req := sel.Attr("required"); !req {
		t.Error("the memory user is not a required field")
	}
	if chosen := sel.Find("option[selected]"); chosen.Length() != 1 || chosen.AttrOr("value", "x") != "" {
		t.Errorf("the form preselects %q, want the empty placeholder", chosen.AttrOr("value", ""))
	}
	if _, req := page.TestID("key-name-input").Attr("required"); !req {
		t.Error("the key name is not a required field")
	}
	cases := []struct {
		name string
		form url.Values
		want string
	}{
		{"blank name", url.Values{"name": {""}, "user_id": {itoa(tm.userID)}}, "Name the key"},
		{"spaces for a name", url.Values{"name": {"   "}, "user_id": {itoa(tm.userID)}}, "Name the key"},
		{"no user chosen", url.Values{"name": {"laptop"}, "user_id": {""}}, "Choose the memory user"},
		{"as the form comes", url.Values{"name": {""}, "user_id": {""}, "new_user": {""}, "scope": {"user"}}, "Name the key"},
	}
	for _, c := range cases {
		p := tm.admin.Post("/console/keys", c.form)
		if p.Status != http.StatusBadRequest || !strings.Contains(p.TestID("form-error").Text(), c.want) {
			t.Errorf("%s: %d %q, want 400 saying %q", c.name, p.Status, p.TestID("form-error").Text(), c.want)
		}
	}
	// The refused form comes back as it was filled in.
	p := tm.admin.Post("/console/keys", url.Values{"name": {"laptop"}, "user_id": {"new"}, "new_user": {""}})
	if p.TestID("key-name-input").AttrOr("value", "") != "laptop" || p.TestID("key-user-select").Find("option[selected]").AttrOr("value", "") != "new" {
		t.Errorf("the refused form lost what was typed")
	}
	var n int
	if err := srv.Owner.QueryRow(context.Background(), `SELECT count(*) FROM api_keys WHERE tenant_id = $1`, tm.tenantID).Scan(&n); err != nil || n != 1 {
		t.Fatalf("%d keys after refused forms, want the first only (%v)", n, err)
	}
}

// platformIn signs a new platform admin in and enters the team's tenant.
func platformIn(t *testing.T, srv *webtest.Server, tm team) *webtest.Client {
	t.Helper()
	email := "root-" + unique() + "@example.com"
	if err := web.CreatePlatformAdmin(context.Background(), srv.DB, email, password); err != nil {
		t.Fatal(err)
	}
	cl := srv.NewClient(t)
	cl.MustSignIn(email, password)
	if p := cl.Post("/platform/tenants/"+itoa(tm.tenantID)+"/enter", nil); p.Status != http.StatusSeeOther {
		t.Fatalf("enter tenant: %d", p.Status)
	}
	cl.Get("/console/accounts")
	return cl
}

// TestPasswordResetLink: a platform admin issues a link for a member; it is
// shown once, works once, sets a password under the sign-up rules, ends
// the member's other sessions, and is audited without the token. A tenant
// admin cannot issue one.
func TestPasswordResetLink(t *testing.T) {
	t.Parallel()
	srv := webtest.Start(t, webtest.Options{})
	ctx := context.Background()
	tm := signUpTeam(t, srv, "Resets")
	member, email, id := addMember(t, srv, tm, "tenant_reader")
	tm.admin.Get("/console/accounts")
	if p := tm.admin.Post("/console/accounts/"+itoa(id)+"/reset-link", nil); p.Status != http.StatusForbidden {
		t.Fatalf("a tenant admin issuing a reset link: %d, want 403", p.Status)
	}
	root := platformIn(t, srv, tm)
	if root.Get("/console/accounts").TestID("account-reset-link").Length() == 0 {
		t.Fatal("no reset-link button for the platform admin")
	}
	p := root.Post("/console/accounts/"+itoa(id)+"/reset-link", nil)
	if p.Status != http.StatusSeeOther || !strings.HasPrefix(p.Location(), "/console/accounts/reset-link/") {
		t.Fatalf("issue: %d to %q", p.Status, p.Location())
	}
	shown := root.Get(p.Location())
	link := strings.TrimSpace(shown.TestID("reset-url").Text())
	u, err := url.Parse(link)
	if err != nil || !strings.HasPrefix(link, srv.URL+"/reset/") {
		t.Fatalf("reset link %q", link)
	}
	token := strings.TrimPrefix(u.Path, "/reset/")
	if again := root.Get(p.Location()); strings.Contains(again.Body, token) || again.TestID("reset-shown-once").Length() != 1 {
		t.Fatal("the reset link is shown again")
	}
	var inClear int
	if err := srv.Owner.QueryRow(ctx, `SELECT (SELECT count(*) FROM console_password_resets WHERE strpos(encode(token_hash, 'escape'), $1) > 0)
		+ (SELECT count(*) FROM audit_log WHERE strpos(detail::text || target, $1) > 0)`, token).Scan(&inClear); err != nil || inClear != 0 {
		t.Fatalf("the token is stored in clear %d times (%v)", inClear, err)
	}

	anon := srv.NewClient(t)
	form := anon.Get(u.Path)
	if form.Status != http.StatusOK || form.TestID("reset-email").AttrOr("value", "") != email {
		t.Fatalf("reset page: %d for %q", form.Status, form.TestID("reset-email").AttrOr("value", ""))
	}
	if w := anon.Post(u.Path, url.Values{"password": {"short"}}); w.Status != http.StatusBadRequest || w.TestID("form-error").Length() != 1 {
		t.Fatalf("a short password: %d", w.Status)
	}
	const newPassword = "a brand new long password"
	done := anon.Post(u.Path, url.Values{"password": {newPassword}})
	if done.Status != http.StatusSeeOther || done.Location() != "/console" {
		t.Fatalf("reset: %d to %q", done.Status, done.Location())
	}
	if g := anon.Get("/console"); g.Status != http.StatusOK || g.TestID("account-email").Text() != email {
		t.Fatalf("the resetting browser is not signed in: %d", g.Status)
	}
	if g := member.Get("/console"); g.Status != http.StatusSeeOther || g.Location() != "/signin" {
		t.Fatalf("the member's other session survived the reset: %d", g.Status)
	}
	if p := srv.NewClient(t).SignIn(email, password); p.Status != http.StatusUnauthorized {
		t.Errorf("the old password still works: %d", p.Status)
	}
	srv.NewClient(t).MustSignIn(email, newPassword)
	for _, m := range []string{http.MethodGet, http.MethodPost} {
		c := srv.NewClient(t)
		c.Get("/signin")
		var r *webtest.Page
		if m == http.MethodGet {
			r = c.Get(u.Path)
		} else {
			r = c.Post(u.Path, url.Values{"password": {"yet another long password"}})
		}
		if r.Status != http.StatusNotFound || !strings.Contains(r.TestID("error-message").Text(), "has been used") {
			t.Errorf("%s of a used link: %d %q", m, r.Status, r.TestID("error-message").Text())
		}
	}
	acts := auditActions(t, srv, tm.tenantID)
	for _, a := range []string{"account.reset_link", "account.password_reset"} {
		if !contains(acts, a) {
			t.Errorf("audit lacks %s: %v", a, acts)
		}
		everyFrom(t, srv, tm.tenantID, a)
	}
}

// TestResetLinkIsSingleAndExpires: a newer link voids the older one, and a
// link past its time does not work.
func TestResetLinkIsSingleAndExpires(t *testing.T) {
	t.Parallel()
	srv := webtest.Start(t, webtest.Options{})
	ctx := context.Background()
	tm := signUpTeam(t, srv, "Expiry")
	_, email, _ := addMember(t, srv, tm, "tenant_reader")
	by := store.Actor{Email: "cli"}
	old, err := web.IssueResetLink(ctx, srv.DB, srv.URL, email, time.Hour, by)
	if err != nil {
		t.Fatal(err)
	}
	fresh, err := web.IssueResetLink(ctx, srv.DB, srv.URL, email, time.Hour, by)
	if err != nil {
		t.Fatal(err)
	}
	cl := srv.NewClient(t)
	if p := cl.Get(strings.TrimPrefix(old, srv.URL)); p.Status != http.StatusNotFound {
		t.Errorf("a link a newer one replaced: %d", p.Status)
	}
	if p := cl.Get(strings.TrimPrefix(fresh, srv.URL)); p.Status != http.StatusOK {
		t.Errorf("the newer link: %d", p.Status)
	}
	if _, err := srv.Owner.Exec(ctx, `UPDATE console_password_resets SET expires_at = now() - interval '1 second'`); err != nil {
		t.Fatal(err)
	}
	if p := cl.Get(strings.TrimPrefix(fresh, srv.URL)); p.Status != http.StatusNotFound {
		t.Errorf("an expired link: %d", p.Status)
	}
}

// TestUnlockClearsFailedSignIns: an admin sees an account's failed
// sign-ins and clears them; the account signs in at once, and the unlock
// is in the audit log with where it came from.
func TestUnlockClearsFailedSignIns(t *testing.T) {
	t.Parallel()
	srv := webtest.Start(t, webtest.Options{Config: func(c *web.Config) { c.SignInPerAccount = 3 }})
	tm := signUpTeam(t, srv, "Unlock")
	_, email, id := addMember(t, srv, tm, "tenant_reader")
	for i := range 3 {
		if p := srv.NewClient(t).SignIn(email, "wrong password "+strconv.Itoa(i)); p.Status != http.StatusUnauthorized {
			t.Fatalf("failure %d: %d", i, p.Status)
		}
	}
	if p := srv.NewClient(t).SignIn(email, password); p.Status != http.StatusTooManyRequests {
		t.Fatalf("after 3 failures: %d, want 429", p.Status)
	}
	page := tm.admin.Get("/console/accounts")
	var row string
	page.TestID("account-row").Each(func(_ int, r *goquery.Selection) {
		if strings.TrimSpace(r.Find(`[data-testid="account-email"]`).Text()) == email {
			row = r.Find(`[data-testid="account-throttled"]`).Text()
		}
	})
	if !strings.HasPrefix(strings.TrimSpace(row), "3") {
		t.Errorf("the accounts page shows the member's failures as %q", row)
	}
	if p := tm.admin.Post("/console/accounts/"+itoa(id)+"/unlock", nil); p.Status != http.StatusSeeOther || p.Location() != "/console/accounts" {
		t.Fatalf("unlock: %d to %q", p.Status, p.Location())
	}
	if p := srv.NewClient(t).SignIn(email, password); p.Status != http.StatusSeeOther {
		t.Fatalf("after the unlock: %d", p.Status)
	}
	everyFrom(t, srv, tm.tenantID, "account.unlock")
	other := signUpTeam(t, srv, "Elsewhere")
	other.admin.Get("/console")
	if p := other.admin.Post("/console/accounts/"+itoa(id)+"/unlock", nil); p.Status != http.StatusNotFound {
		t.Errorf("another team unlocking the member: %d", p.Status)
	}
}
