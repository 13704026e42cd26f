package isolation

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/url"
)

// ownPages are the console pages a tenant admin reads; want says whether
// the tenant's canary must be on the page (its memory, users or keys are
// listed there), which is how the scan could find nothing and still fail.
var ownPages = []struct {
	path string
	want bool
}{
	{"/console", false},
	{"/console/connect", false},
	{"/console/keys", true},
	{"/console/users", true},
	{"/console/memory", false},
	{"/console/memory?q=vault+code+project+Heron", true},
	{"/console/accounts", false},
	{"/console/audit", false},
	{"/console/dictionaries", false},
	{"/console/dictionaries/1/progress", false},
	{"/console/integrity", false},
}

// consoleOwn reads one of the tenant's own pages, or one of its own
// objects by id (a user, its export, a conversation, an integrity report,
// the memory browser for a user); every one must answer 200.
func (d *driver) consoleOwn(ctx context.Context, r *rand.Rand, tn *tenant) (string, error) {
	var kind, path string
	want := false
	switch n := r.IntN(len(ownPages) + 5); {
	case n < len(ownPages):
		kind, path, want = "console "+ownPages[n].path, ownPages[n].path, ownPages[n].want
	default:
		objs := []struct{ kind, ids, fmt string }{
			{"console user page", "users", "/console/users/%d"},
			{"console export", "canaryUsers", "/console/users/%d/export"},
			{"console conversation", "canaryConvs", "/console/conversations/%d"},
			{"console integrity report", "reports", "/console/integrity/%d"},
			{"console memory of user", "users", "/console/memory?user=%d&q=vault+code"},
		}
		o := objs[n-len(ownPages)]
		id, err := d.ids.pick(r, o.ids, tn.id)
		if err != nil {
			return o.kind, fmt.Errorf("%s: tenant %d has no %s", o.kind, tn.idx, o.ids)
		}
		kind, path = o.kind, fmt.Sprintf(o.fmt, id)
		want = o.kind == "console export" || o.kind == "console conversation"
	}
	p, err := tn.con.get(ctx, path)
	if err != nil {
		return kind, err
	}
	own := d.led.response(tn.idx, kind+" "+path, p.body)
	if p.status != http.StatusOK {
		return kind, fmt.Errorf("%s: GET %s answered %d", kind, path, p.status)
	}
	if want {
		d.led.page(kind, own)
	}
	return kind, nil
}

// consoleForeign asks the tenant's console for another tenant's object by
// id, reading and changing: every answer must be 403 or 404, and show
// nothing of the other tenant.
func (d *driver) consoleForeign(ctx context.Context, r *rand.Rand, tn *tenant) (string, error) {
	ft := d.foreignTenant(r, tn)
	probes := []struct {
		kind, ids, method, fmt string
	}{
		{"foreign user page", "users", http.MethodGet, "/console/users/%d"},
		{"foreign export", "users", http.MethodGet, "/console/users/%d/export"},
		{"foreign conversation", "convs", http.MethodGet, "/console/conversations/%d"},
		{"foreign memory browser", "users", http.MethodGet, "/console/memory?user=%d&q=vault+code"},
		{"foreign integrity report", "reports", http.MethodGet, "/console/integrity/%d"},
		{"foreign key revoke", "keys", http.MethodPost, "/console/keys/%d/revoke"},
		{"foreign user purge", "users", http.MethodPost, "/console/users/%d/purge"},
		{"foreign account disable", "accounts", http.MethodPost, "/console/accounts/%d/disable"},
		{"foreign account enable", "accounts", http.MethodPost, "/console/accounts/%d/enable"},
		{"foreign account role", "accounts", http.MethodPost, "/console/accounts/%d/role"},
		{"foreign user for a new key", "users", http.MethodPost, "/console/keys"},
		{"platform tenant list", "", http.MethodGet, "/platform/tenants"},
	}
	pr := probes[r.IntN(len(probes))]
	path := pr.fmt
	var form url.Values
	if pr.ids != "" {
		id, err := d.ids.pick(r, pr.ids, ft.id)
		if err != nil {
			return pr.kind, fmt.Errorf("%s: tenant %d has no %s", pr.kind, ft.idx, pr.ids)
		}
		switch pr.kind {
		case "foreign user for a new key":
			form = url.Values{"name": {"stolen"}, "user_id": {fmt.Sprint(id)}}
		case "foreign user purge":
			path = fmt.Sprintf(pr.fmt, id)
			form = url.Values{"confirm": {d.ids.name(id)}}
		case "foreign account role":
			path = fmt.Sprintf(pr.fmt, id)
			form = url.Values{"role": {"tenant_reader"}}
		default:
			path = fmt.Sprintf(pr.fmt, id)
		}
	}
	var p page
	var err error
	if pr.method == http.MethodPost {
		p, err = tn.con.post(ctx, path, form)
	} else {
		p, err = tn.con.get(ctx, path)
	}
	if err != nil {
		return "console " + pr.kind, err
	}
	d.led.response(tn.idx, pr.kind+" "+pr.method+" "+path, p.body)
	if p.status != http.StatusNotFound && p.status != http.StatusForbidden {
		d.led.leak(fmt.Sprintf("%s: tenant %d's console answered %d to %s %s (tenant %d's object)", pr.kind, tn.idx, p.status, pr.method, path, ft.idx))
	}
	return "console " + pr.kind, nil
}
