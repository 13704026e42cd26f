package web_test

import (
	"context"
	"crypto/rand"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/perpetuity/perpetuity/web/webtest"
)

const password = "a long enough password"

// team is a signed-up tenant with its admin signed in.
type team struct {
	admin    *webtest.Client
	email    string
	key      string
	tenantID int64
	userID   int64
}

// unique gives addresses that do not collide across tests.
func unique() string { return strings.ToLower(rand.Text()[:10]) }

func signUpTeam(t *testing.T, srv *webtest.Server, name string) team {
	t.Helper()
	email := fmt.Sprintf("admin-%s@%s.example", unique(), strings.ToLower(strings.ReplaceAll(name, " ", "")))
	cl := srv.NewClient(t)
	_, key := cl.SignUp(name, email, password)
	id, err := srv.DB.ResolveKey(context.Background(), key)
	if err != nil {
		t.Fatal(err)
	}
	return team{admin: cl, email: email, key: key, tenantID: id.TenantID, userID: id.UserID}
}

// addMember invites an account with role and returns it signed in.
func addMember(t *testing.T, srv *webtest.Server, tm team, role string) (*webtest.Client, string, int64) {
	t.Helper()
	email := fmt.Sprintf("m-%s@example.com", unique())
	tm.admin.Get("/console/accounts")
	p := tm.admin.PostFollow("/console/accounts/invite", url.Values{"email": {email}, "role": {role}})
	if p.Status != http.StatusOK {
		t.Fatalf("invite: status %d: %s", p.Status, p.TestID("form-error").Text())
	}
	link := strings.TrimSpace(p.TestID("invite-url").Text())
	u, err := url.Parse(link)
	if err != nil || !strings.HasPrefix(link, srv.URL+"/invite/") {
		t.Fatalf("invite link %q", link)
	}
	cl := srv.NewClient(t)
	if g := cl.Get(u.Path); g.Status != http.StatusOK {
		t.Fatalf("invite page: status %d", g.Status)
	}
	acc := cl.Post(u.Path, url.Values{"password": {password}})
	if acc.Status != http.StatusSeeOther || acc.Location() != "/console" {
		t.Fatalf("accept invite: status %d to %q: %s", acc.Status, acc.Location(), acc.TestID("form-error").Text())
	}
	cl.Get("/console")
	var id int64
	if err := srv.Owner.QueryRow(context.Background(), `SELECT id FROM console_accounts WHERE email = $1`, email).Scan(&id); err != nil {
		t.Fatal(err)
	}
	return cl, email, id
}

func storeTurn(t *testing.T, srv *webtest.Server, tr webtest.Turn) (itemID, convID int64) {
	t.Helper()
	itemID, convID, err := webtest.StoreTurn(context.Background(), srv.DB, tr)
	if err != nil {
		t.Fatalf("store turn: %v", err)
	}
	return itemID, convID
}

func auditActions(t *testing.T, srv *webtest.Server, tenantID int64) []string {
	t.Helper()
	rows, err := srv.Owner.Query(context.Background(), `SELECT action FROM audit_log WHERE tenant_id = $1 ORDER BY id`, tenantID)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var a string
		if err := rows.Scan(&a); err != nil {
			t.Fatal(err)
		}
		out = append(out, a)
	}
	return out
}

func contains(xs []string, x string) bool {
	for _, v := range xs {
		if v == x {
			return true
		}
	}
	return false
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

// auditAddresses is the From of each of the tenant's entries with this action.
func auditAddresses(t *testing.T, srv *webtest.Server, tenantID int64, action string) []string {
	t.Helper()
	rows, err := srv.Owner.Query(context.Background(), `SELECT address FROM audit_log WHERE tenant_id = $1 AND action = $2 ORDER BY id`, tenantID, action)
	if err != nil {
		t.Fatal(err)
	}
	out, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// everyFrom fails unless the tenant has entries with the action and each
// records the client address (the test client's is loopback).
func everyFrom(t *testing.T, srv *webtest.Server, tenantID int64, action string) {
	t.Helper()
	addrs := auditAddresses(t, srv, tenantID, action)
	if len(addrs) == 0 {
		t.Errorf("no %s entry", action)
	}
	for _, a := range addrs {
		if a != "127.0.0.1" {
			t.Errorf("%s entry from %q, want the client's address", action, a)
		}
	}
}
