package web_test

import (
	"context"
	"math"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"

	"github.com/PuerkitoBio/goquery"
	"github.com/jackc/pgx/v5"

	"github.com/perpetuity/perpetuity/memory/store"
	"github.com/perpetuity/perpetuity/web"
	"github.com/perpetuity/perpetuity/web/webtest"
)

func TestKeysCreateBindAndRevoke(t *testing.T) {
	t.Parallel()
	srv := webtest.Start(t, webtest.Options{})
	tm := signUpTeam(t, srv, "Keys")
	ctx := context.Background()
	tm.admin.Get("/console/keys")

	p, key := tm.admin.CreateKey(url.Values{"name": {"laptop"}, "user_id": {"new"}, "new_user": {"alice"}})
	if key == "" {
		t.Fatalf("create: %d %s", p.Status, p.TestID("form-error").Text())
	}
	id, err := srv.DB.ResolveKey(ctx, key)
	if err != nil {
		t.Fatalf("new key does not resolve: %v", err)
	}
	if id.UserName != "alice" || id.TenantID != tm.tenantID {
		t.Fatalf("new key bound to %q in tenant %d", id.UserName, id.TenantID)
	}
	if got := p.TestID("proxy-url-openai").Text(); got != srv.URL+"/k/"+key+"/v1" {
		t.Fatalf("proxy URL for the new key %q", got)
	}
	if got := p.TestID("connect-user").Text(); got != "alice" {
		t.Fatalf("connect user %q", got)
	}

	bad := []url.Values{
		{"name": {"x"}, "user_id": {"new"}, "new_user": {""}},
		{"name": {"x"}, "user_id": {"abc"}},
		{"name": {"x"}},
		{"user_id": {strconv.FormatInt(tm.userID, 10)}},
		{"user_id": {strconv.FormatInt(tm.userID, 10)}, "name": {"  "}},
		{"user_id": {strconv.FormatInt(tm.userID, 10)}, "name": {strings.Repeat("n", 101)}},
	}
	for _, f := range bad {
		if p := tm.admin.Post("/console/keys", f); p.Status != http.StatusBadRequest || p.TestID("form-error").Length() != 1 {
			t.Errorf("create with %v: %d", f, p.Status)
		}
	}
	if p := tm.admin.Post("/console/keys", url.Values{"name": {"x"}, "user_id": {"999999"}}); p.Status != http.StatusNotFound {
		t.Errorf("create for a missing user: %d", p.Status)
	}

	// Revoke through htmx: the answer is the row alone, now revoked.
	h := http.Header{"Content-Type": {"application/x-www-form-urlencoded"}, "HX-Request": {"true"}, "X-CSRF-Token": {tm.admin.CSRF}}
	r := tm.admin.Do(http.MethodPost, "/console/keys/"+strconv.FormatInt(id.KeyID, 10)+"/revoke", strings.NewReader(""), h)
	if r.Status != http.StatusOK {
		t.Fatalf("revoke: %d", r.Status)
	}
	if !strings.HasPrefix(r.Body, "<tr") {
		t.Fatalf("htmx revoke did not answer with the row alone:\n%s", r.Body)
	}
	row, err := goquery.NewDocumentFromReader(strings.NewReader("<table><tbody>" + r.Body + "</tbody></table>"))
	if err != nil {
		t.Fatal(err)
	}
	if got := row.Find(`[data-testid="key-state"]`).Text(); !strings.Contains(got, "revoked") {
		t.Fatalf("row after revoke: %q", got)
	}
	if _, err := srv.DB.ResolveKey(ctx, key); err == nil {
		t.Fatal("revoked key still resolves")
	}
	// A second revoke finds no live key; a plain form post is redirected.
	if p := tm.admin.Post("/console/keys/"+strconv.FormatInt(id.KeyID, 10)+"/revoke", nil); p.Status != http.StatusNotFound {
		t.Fatalf("revoking twice: %d", p.Status)
	}
	acts := auditActions(t, srv, tm.tenantID)
	for _, want := range []string{"key.create", "key.revoke"} {
		if !contains(acts, want) {
			t.Errorf("audit %v lacks %s", acts, want)
		}
	}
	var detail string
	if err := srv.Owner.QueryRow(ctx, `SELECT detail::text FROM audit_log WHERE tenant_id = $1 AND action = 'key.create'`, tm.tenantID).Scan(&detail); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(detail, key) {
		t.Fatal("audit entry holds the key")
	}
	if got := tm.admin.Get("/console/audit").TestID("audit-row").Length(); got < 3 {
		t.Fatalf("audit page lists %d rows", got)
	}
}

func TestInvitationWorksOnce(t *testing.T) {
	t.Parallel()
	srv := webtest.Start(t, webtest.Options{})
	tm := signUpTeam(t, srv, "Invites")
	tm.admin.Get("/console/accounts")
	posted := tm.admin.Post("/console/accounts/invite", url.Values{"email": {"new@example.com"}, "role": {"tenant_admin"}})
	if posted.Status != http.StatusSeeOther || !strings.HasPrefix(posted.Location(), "/console/accounts/invited/") {
		t.Fatalf("invite: %d to %q", posted.Status, posted.Location())
	}
	// Another session of the same team, on the page the form sent the
	// admin to, sees no link.
	second := srv.NewClient(t)
	second.MustSignIn(tm.email, password)
	if g := second.Get(posted.Location()); g.Status != http.StatusOK || g.TestID("invite-url").Length() != 0 {
		t.Fatalf("another session on the invitation's page: %d, link shown %v", g.Status, g.TestID("invite-url").Length() != 0)
	}
	p := tm.admin.Get(posted.Location())
	u, _ := url.Parse(strings.TrimSpace(p.TestID("invite-url").Text()))
	if !strings.HasPrefix(u.Path, "/invite/") {
		t.Fatalf("invitation link %q", u.Path)
	}
	// A reload of that page shows the link no more and invites nobody
	// again; the accounts page never shows it.
	reload := tm.admin.Get(posted.Location())
	if reload.Status != http.StatusOK || strings.Contains(reload.Body, u.Path) || reload.TestID("invite-shown-once").Length() != 1 ||
		!strings.Contains(reload.TestID("invite-shown-once").Text(), "new@example.com") {
		t.Fatalf("reload of the invitation's page: %d, shown-once %d", reload.Status, reload.TestID("invite-shown-once").Length())
	}
	if again := tm.admin.Get("/console/accounts"); strings.Contains(again.Body, u.Path) || again.TestID("invite-row").Length() != 1 {
		t.Fatal("invitation link shown again, or the invitation is not listed once")
	}
	cl := srv.NewClient(t)
	if g := cl.Get(u.Path); g.TestID("invite-email").AttrOr("value", "") != "new@example.com" {
		t.Fatalf("invite page email %q", g.TestID("invite-email").AttrOr("value", ""))
	}
	if w := cl.Post(u.Path, url.Values{"password": {"short"}}); w.Status != http.StatusBadRequest {
		t.Fatalf("short password accepted: %d", w.Status)
	}
	if ok := cl.Post(u.Path, url.Values{"password": {password}}); ok.Status != http.StatusSeeOther {
		t.Fatalf("accept: %d", ok.Status)
	}
	if p := cl.Get("/console/audit"); p.Status != http.StatusOK {
		t.Fatalf("invited admin on audit page: %d", p.Status)
	}
	other := srv.NewClient(t)
	other.Get("/signin")
	if g := other.Get(u.Path); g.Status != http.StatusNotFound {
		t.Fatalf("used invitation page: %d", g.Status)
	}
	if g := other.Post(u.Path, url.Values{"password": {password}}); g.Status != http.StatusNotFound {
		t.Fatalf("used invitation accepted again: %d", g.Status)
	}
	if p := tm.admin.Post("/console/accounts/invite", url.Values{"email": {"new@example.com"}, "role": {"tenant_reader"}}); p.Status != http.StatusBadRequest {
		t.Fatalf("invite for an existing account: %d", p.Status)
	}
}

func TestPlatformAdminEntersTenants(t *testing.T) {
	t.Parallel()
	srv := webtest.Start(t, webtest.Options{})
	ctx := context.Background()
	a := signUpTeam(t, srv, "Tenant One")
	b := signUpTeam(t, srv, "Tenant Two")
	if err := web.CreatePlatformAdmin(ctx, srv.DB, "Root@Example.com", password); err != nil {
		t.Fatal(err)
	}
	if err := web.CreatePlatformAdmin(ctx, srv.DB, "root@example.com", password); err == nil {
		t.Fatal("second platform admin with the same email")
	}
	if err := web.CreatePlatformAdmin(ctx, srv.DB, "weak@example.com", "short"); err == nil {
		t.Fatal("platform admin with a short password")
	}
	cl := srv.NewClient(t)
	p := cl.SignIn("root@example.com", password)
	if p.Status != http.StatusSeeOther || p.Location() != "/platform/tenants" {
		t.Fatalf("platform sign-in: %d to %q", p.Status, p.Location())
	}
	if p := cl.Get("/console"); p.Status != http.StatusSeeOther || p.Location() != "/platform/tenants" {
		t.Fatalf("console before entering a tenant: %d to %q", p.Status, p.Location())
	}
	list := cl.Get("/platform/tenants")
	if got := list.TestID("tenant-row").Length(); got != 2 {
		t.Fatalf("tenant list has %d rows", got)
	}
	before := cl.Cookie(sessionCookie)
	if p := cl.Post("/platform/tenants/"+strconv.FormatInt(b.tenantID, 10)+"/enter", nil); p.Status != http.StatusSeeOther {
		t.Fatalf("enter: %d", p.Status)
	}
	if cl.Cookie(sessionCookie) == before {
		t.Fatal("entering a tenant kept the session token")
	}
	ov := cl.Get("/console")
	if ov.Status != http.StatusOK || ov.TestID("tenant-name").Text() != "Tenant Two" {
		t.Fatalf("after entering: %d, tenant %q", ov.Status, ov.TestID("tenant-name").Text())
	}
	if p := cl.Get("/console/users/" + strconv.FormatInt(a.userID, 10)); p.Status != http.StatusNotFound {
		t.Fatalf("platform admin in B reaches A's user: %d", p.Status)
	}
	if !contains(auditActions(t, srv, b.tenantID), "platform.enter") {
		t.Fatal("entering not audited in the tenant")
	}
	if p := cl.Post("/platform/tenants/999999/enter", nil); p.Status != http.StatusNotFound {
		t.Fatalf("entering a missing tenant: %d", p.Status)
	}
	if p := a.admin.Get("/platform/tenants"); p.Status != http.StatusForbidden {
		t.Fatalf("tenant admin on the platform page: %d", p.Status)
	}
}

func TestOverviewCharts(t *testing.T) {
	t.Parallel()
	srv := webtest.Start(t, webtest.Options{})
	tm := signUpTeam(t, srv, "Charts")
	ctx := context.Background()
	err := srv.DB.InTenant(ctx, tm.tenantID, func(tx pgx.Tx) error {
		_, err := tx.Exec(ctx, `INSERT INTO requests (tenant_id, request_id, user_id, at, dialect, provider, status, tokens_in, tokens_out, frame_items, frame_tokens)
			SELECT $1, 'r' || g, $2, now() - (g % 3) * interval '1 day', 'openai', 'openai', 200, 100, 40, 3, 500 + g
			FROM generate_series(1, 9) g`, tm.tenantID, tm.userID)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	storeTurn(t, srv, webtest.Turn{TenantID: tm.tenantID, UserID: tm.userID, Conversation: "c", Role: "user", Text: "one", Peak: 1})
	p := tm.admin.Get("/console?days=7")
	if p.Status != http.StatusOK {
		t.Fatalf("overview: %d", p.Status)
	}
	stats := map[string]string{"requests": "9", "tokens-in": "900", "tokens-out": "360", "items": "1", "users": "1", "keys": "1"}
	for id, want := range stats {
		if got := p.TestID("stat-" + id).Find(".value").Text(); got != want {
			t.Errorf("stat %s = %q, want %q", id, got, want)
		}
	}
	for _, id := range []string{"requests", "tokens", "items", "frame"} {
		if p.TestID("chart-"+id).Find("svg.chart-svg").Length() != 1 {
			t.Errorf("chart %s missing", id)
		}
	}
	bars := p.TestID("chart-requests").Find(`[data-testid="chart-bar"]`)
	if bars.Length() != 7 {
		t.Fatalf("requests chart has %d bars for 7 days", bars.Length())
	}
	if got := bars.Last().Find("title").Text(); !strings.Contains(got, ": 3 requests") {
		t.Errorf("today's bar says %q, want 3 requests", got)
	}
	if p.TestID("chart-tokens").Find(`[data-testid="chart-line"]`).Length() != 2 {
		t.Error("tokens chart lacks its in and out lines")
	}
}

func TestMemoryBrowserShowsHeat(t *testing.T) {
	t.Parallel()
	srv := webtest.Start(t, webtest.Options{})
	tm := signUpTeam(t, srv, "Heat")
	ctx := context.Background()
	hot, conv := storeTurn(t, srv, webtest.Turn{TenantID: tm.tenantID, UserID: tm.userID, Conversation: "deploys", Role: "user", Speaker: "Ada",
		Text: "We deploy the Zephyr service on Fridays", BornClock: 100, Tau: 1000, Peak: 1, Reheats: [][2]float64{{1500, 0.9}, {2500, 0.8}}})
	cold, _ := storeTurn(t, srv, webtest.Turn{TenantID: tm.tenantID, UserID: tm.userID, Conversation: "deploys", Role: "assistant", Speaker: "agent",
		Text: "Noted: Zephyr deploys happen on Fridays", BornClock: 110, Tau: 1000, Peak: 1})
	storeTurn(t, srv, webtest.Turn{TenantID: tm.tenantID, UserID: tm.userID, Conversation: "other", Role: "user", Text: "lunch is at noon", BornClock: 120, Peak: 1})
	if err := webtest.SetClock(ctx, srv.DB, tm.tenantID, tm.userID, 3000); err != nil {
		t.Fatal(err)
	}

	p := tm.admin.Get("/console/memory?user=" + strconv.FormatInt(tm.userID, 10) + "&q=zephyr")
	if p.Status != http.StatusOK {
		t.Fatalf("memory: %d", p.Status)
	}
	items := p.TestID("item")
	if items.Length() != 2 {
		t.Fatalf("search found %d items, want the 2 about Zephyr", items.Length())
	}
	byID := map[string]float64{}
	items.Each(func(_ int, s *goquery.Selection) {
		h, err := strconv.ParseFloat(s.Find(`[data-testid="item-heat"]`).AttrOr("data-heat", ""), 64)
		if err != nil {
			t.Fatal(err)
		}
		byID[s.AttrOr("data-item-id", "")] = h
		if s.Find(`[data-testid="heat-curve"]`).Length() != 1 {
			t.Error("item without heat curve")
		}
		if s.Find(`[data-testid="item-conversation"]`).Text() != "deploys" {
			t.Error("item lacks its conversation")
		}
		// The searched word is marked; why it matched is in words, folded.
		if s.Find("mark").First().Text() != "Zephyr" || !strings.Contains(s.Find(`[data-testid="item-why"]`).Text(), "It contains “zephyr”") {
			t.Errorf("no marked word or no reason: %q", s.Find(`[data-testid="item-why"]`).Text())
		}
	})
	wantHot := 0.8 * math.Exp(-500.0/1000)
	wantCold := math.Exp(-2890.0 / 1000)
	if got := byID[strconv.FormatInt(hot, 10)]; math.Abs(got-wantHot) > 0.006 {
		t.Errorf("reheated item heat %v, want %.2f", got, wantHot)
	}
	if got := byID[strconv.FormatInt(cold, 10)]; math.Abs(got-wantCold) > 0.006 {
		t.Errorf("untouched item heat %v, want %.2f", got, wantCold)
	}
	hotCard := p.Doc.Find(`[data-item-id="` + strconv.FormatInt(hot, 10) + `"]`)
	if got := hotCard.Find(`[data-testid="heat-mark"]`).Length(); got != 3 {
		t.Errorf("hot item shows %d marks, want birth and 2 reheats", got)
	}
	if got := hotCard.Find(`[data-testid="item-speaker"]`).Text(); got != "Ada" {
		t.Errorf("speaker %q", got)
	}

	// htmx search answers with the results fragment only.
	h := http.Header{"HX-Request": {"true"}}
	frag := tm.admin.Do(http.MethodGet, "/console/memory?q=lunch", nil, h)
	if strings.Contains(frag.Body, "<html") || frag.TestID("item").Length() != 1 {
		t.Fatalf("htmx search fragment wrong:\n%s", frag.Body)
	}
	if tm.admin.Get("/console/memory?q=%25").TestID("item").Length() != 0 {
		t.Error("a bare % matched everything")
	}

	cv := tm.admin.Get("/console/conversations/" + strconv.FormatInt(conv, 10))
	if cv.Status != http.StatusOK || cv.TestID("conversation-title").Text() != "deploys" {
		t.Fatalf("conversation: %d %q", cv.Status, cv.TestID("conversation-title").Text())
	}
	if got := cv.TestID("heat-cell").Length(); got != 2 {
		t.Fatalf("heat strip has %d cells, want 2 turns", got)
	}
	if got := cv.TestID("item").Length(); got != 2 {
		t.Fatalf("conversation shows %d turns", got)
	}
	if cv.TestID("item").First().AttrOr("data-item-id", "") != strconv.FormatInt(hot, 10) {
		t.Fatal("conversation turns out of order")
	}
	if p := tm.admin.Get("/console/conversations/999999"); p.Status != http.StatusNotFound {
		t.Fatalf("missing conversation: %d", p.Status)
	}

	us := tm.admin.Get("/console/users/" + strconv.FormatInt(tm.userID, 10))
	if us.TestID("conversation-row").Length() != 2 || us.TestID("purge-section").Length() != 1 {
		t.Fatalf("user page: %d conversations, purge placeholder %d", us.TestID("conversation-row").Length(), us.TestID("purge-section").Length())
	}
	if got := tm.admin.Get("/console/users").TestID("user-items").First().Text(); got != "3" {
		t.Fatalf("users list item count %q", got)
	}
}

// fakeMemory is the engine's stand-in: the console must use what Memory
// returns, not the SQL behind it.
type fakeMemory struct{ items []web.Item }

func (f fakeMemory) Search(_ context.Context, _, _ int64, q string, _ int) ([]web.Item, error) {
	var out []web.Item
	for _, it := range f.items {
		if strings.Contains(it.Text, q) {
			out = append(out, it)
		}
	}
	return out, nil
}

func (f fakeMemory) Conversation(context.Context, int64, int64) ([]web.Item, error) {
	return f.items, nil
}

func (f fakeMemory) Item(_ context.Context, _, id int64) (web.Item, error) {
	for _, it := range f.items {
		if it.ID == id {
			return it, nil
		}
	}
	return web.Item{}, store.ErrNotFound
}

func TestMemoryBrowserUsesTheEngine(t *testing.T) {
	t.Parallel()
	fake := fakeMemory{items: []web.Item{{ID: 41, ConversationID: 1, Conversation: "from the engine", Role: "user", Text: "engine says hi", Terms: []string{"engine", "hi"}}}}
	srv := webtest.Start(t, webtest.Options{Memory: fake})
	tm := signUpTeam(t, srv, "Engine")
	p := tm.admin.Get("/console/memory?q=engine")
	if p.TestID("item").AttrOr("data-item-id", "") != "41" || p.TestID("item-terms").Length() != 0 ||
		!strings.Contains(p.TestID("item-why").Text(), "It contains “engine”") {
		t.Fatalf("engine results not shown:\n%s", p.TestID("memory-results").Text())
	}
}
