package web_test

import (
	"context"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/perpetuity/perpetuity/web"
	"github.com/perpetuity/perpetuity/web/webtest"
)

// inviteAnswer is what an invite's answer tells its sender, with the parts
// that differ by design (the address listed, the link) taken out.
type inviteAnswer struct {
	status int
	err    string
	link   string
	page   string // the body without the link, the tables and their rows
}

var (
	inviteLink   = regexp.MustCompile(`/invite/[A-Za-z0-9_-]{43}`)
	tableElement = regexp.MustCompile(`(?s)<table.*?</table>`)
)

func invite(t *testing.T, cl *webtest.Client, email, role string) inviteAnswer {
	t.Helper()
	p := cl.PostFollow("/console/accounts/invite", url.Values{"email": {email}, "role": {role}})
	a := inviteAnswer{status: p.Status, err: strings.TrimSpace(p.TestID("form-error").Text()),
		link: strings.TrimSpace(p.TestID("invite-url").Text())}
	a.page = tableElement.ReplaceAllString(inviteLink.ReplaceAllString(p.Body, "/invite/LINK"), "<table/>")
	return a
}

func pendingInvites(t *testing.T, srv *webtest.Server, tenantID int64) int {
	t.Helper()
	var n int
	if err := srv.Owner.QueryRow(context.Background(), `SELECT count(*) FROM console_invites WHERE tenant_id = $1`, tenantID).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// TestInviteAnswersAlikeForEveryAddress is finding 7 of issue 15: a tenant
// admin's invitation must not tell whether an address has an account
// anywhere (another team's admin or member, the platform admin).
func TestInviteAnswersAlikeForEveryAddress(t *testing.T) {
	t.Parallel()
	srv := webtest.Start(t, webtest.Options{})
	a := signUpTeam(t, srv, "Prober")
	b := signUpTeam(t, srv, "Victim")
	_, member, _ := addMember(t, srv, b, "tenant_reader")
	root := "root-" + unique() + "@example.com"
	if err := web.CreatePlatformAdmin(context.Background(), srv.DB, root, password); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name, email string
	}{
		{"new address", "new-" + unique() + "@example.com"},
		{"another team's admin", b.email},
		{"another team's member", member},
		{"the platform admin", root},
		{"another team's admin, upper case", strings.ToUpper(b.email)},
		{"another new address", "fresh-" + unique() + "@example.org"},
	}
	a.admin.Get("/console/accounts")
	var first inviteAnswer
	for i, c := range cases {
		got := invite(t, a.admin, c.email, "tenant_reader")
		if got.status != http.StatusOK || got.err != "" || !strings.HasPrefix(got.link, srv.URL+"/invite/") {
			t.Errorf("%s: status %d, error %q, link %q; want 201 with a link like every address", c.name, got.status, got.err, got.link)
			continue
		}
		if i == 0 {
			first = got
		} else if got.page != first.page {
			t.Errorf("%s: the page differs from a new address's:\n%s\n---\n%s", c.name, got.page, first.page)
		}
	}
	if n := pendingInvites(t, srv, a.tenantID); n != len(cases) {
		t.Errorf("%d invitation rows, want %d (one per address, existing or not)", n, len(cases))
	}
	if n := a.admin.Get("/console/accounts").TestID("invite-row").Length(); n != len(cases) {
		t.Errorf("the pending list shows %d invitations, want %d", n, len(cases))
	}
	// An address already in the inviter's own team is on the same page:
	// saying so tells the admin nothing new.
	if got := invite(t, a.admin, a.email, "tenant_reader"); got.status != http.StatusBadRequest || got.err == "" {
		t.Errorf("own team's address: status %d, error %q; want 400 naming it", got.status, got.err)
	}
}

// TestInviteThrottleLeavesNoRows: invitations are throttled per team, and
// a refused one answers alike for every address and leaves no row.
func TestInviteThrottleLeavesNoRows(t *testing.T) {
	t.Parallel()
	const perHour = 3
	srv := webtest.Start(t, webtest.Options{Config: func(c *web.Config) { c.InvitesPerHour = perHour }})
	a := signUpTeam(t, srv, "Throttled")
	b := signUpTeam(t, srv, "Bystander")
	a.admin.Get("/console/accounts")
	for i := range perHour {
		if got := invite(t, a.admin, "n"+strconv.Itoa(i)+"-"+unique()+"@example.com", "tenant_reader"); got.status != http.StatusOK {
			t.Fatalf("invitation %d: status %d (%s)", i+1, got.status, got.err)
		}
	}
	var refused []inviteAnswer
	for _, email := range []string{"late-" + unique() + "@example.com", b.email, "later-" + unique() + "@example.com"} {
		p := a.admin.Post("/console/accounts/invite", url.Values{"email": {email}, "role": {"tenant_reader"}})
		if p.Status != http.StatusTooManyRequests {
			t.Fatalf("invitation over the limit for %s: status %d, want 429", email, p.Status)
		}
		if ra, err := strconv.Atoi(p.Header.Get("Retry-After")); err != nil || ra <= 0 {
			t.Fatalf("Retry-After %q", p.Header.Get("Retry-After"))
		}
		if p.TestID("form-error").Length() != 1 || p.TestID("invite-url").Length() != 0 {
			t.Fatalf("refused invitation: no message, or a link")
		}
		refused = append(refused, inviteAnswer{page: tableElement.ReplaceAllString(p.Body, "<table/>")})
	}
	for _, r := range refused[1:] {
		if r.page != refused[0].page {
			t.Fatalf("refusals differ by address:\n%s\n---\n%s", r.page, refused[0].page)
		}
	}
	if n := pendingInvites(t, srv, a.tenantID); n != perHour {
		t.Fatalf("%d invitation rows after %d refusals, want %d", n, len(refused), perHour)
	}
	// Another team has its own budget.
	b.admin.Get("/console/accounts")
	if got := invite(t, b.admin, "other-"+unique()+"@example.com", "tenant_reader"); got.status != http.StatusOK {
		t.Fatalf("another team's invitation: status %d", got.status)
	}
}

// TestInviteForAnExistingAccountCannotBeAccepted: an address has one
// account, in one team, so an invitation to an address that has one can be
// made (see above) but not used; the account stays as it was.
func TestInviteForAnExistingAccountCannotBeAccepted(t *testing.T) {
	t.Parallel()
	srv := webtest.Start(t, webtest.Options{})
	a := signUpTeam(t, srv, "Inviter")
	b := signUpTeam(t, srv, "Holder")
	a.admin.Get("/console/accounts")
	got := invite(t, a.admin, b.email, "tenant_admin")
	if got.status != http.StatusOK {
		t.Fatalf("invite: %d %s", got.status, got.err)
	}
	u, _ := url.Parse(got.link)
	cl := srv.NewClient(t)
	if g := cl.Get(u.Path); g.Status != http.StatusOK || g.TestID("invite-email").AttrOr("value", "") != b.email {
		t.Fatalf("invite page: %d", g.Status)
	}
	if p := cl.Post(u.Path, url.Values{"password": {"short"}}); p.Status != http.StatusBadRequest {
		t.Fatalf("short password: %d, want 400 as for any invitation", p.Status)
	}
	p := cl.Post(u.Path, url.Values{"password": {"another long password"}})
	if p.Status != http.StatusConflict || p.TestID("form-error").Length() != 1 {
		t.Fatalf("accepting an invitation for an existing account: %d, want 409 with a message", p.Status)
	}
	var tenant, accounts int64
	ctx := context.Background()
	if err := srv.Owner.QueryRow(ctx, `SELECT tenant_id, (SELECT count(*) FROM console_accounts WHERE lower(email) = $1) FROM console_accounts WHERE lower(email) = $1`,
		b.email).Scan(&tenant, &accounts); err != nil {
		t.Fatal(err)
	}
	if tenant != b.tenantID || accounts != 1 {
		t.Fatalf("the account moved to tenant %d or was copied (%d accounts)", tenant, accounts)
	}
	srv.NewClient(t).MustSignIn(b.email, password)
	if bad := srv.NewClient(t).SignIn(b.email, "another long password"); bad.Status != http.StatusUnauthorized {
		t.Fatalf("the invitation's password signs in: %d", bad.Status)
	}
}
