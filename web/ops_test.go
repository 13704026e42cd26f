package web_test

import (
	"bytes"
	"context"
	"fmt"
	"mime/multipart"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/perpetuity/perpetuity/memory"
	"github.com/perpetuity/perpetuity/memory/dict"
	"github.com/perpetuity/perpetuity/memory/text"
	"github.com/perpetuity/perpetuity/web"
	"github.com/perpetuity/perpetuity/web/webtest"
)

// opsTeam is a team on v1 (one from before v3 was the default) whose
// memory was captured by a serving engine, as serving captures it.
type opsTeam struct {
	team
	srv *webtest.Server
	eng *memory.Engine
}

func newOpsTeam(t *testing.T, srv *webtest.Server, name string) *opsTeam {
	t.Helper()
	ctx := context.Background()
	d, err := dict.Builtin(1)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := srv.DB.EnsureDictionary(ctx, d.Version, d.Name, d.Entries()); err != nil {
		t.Fatal(err)
	}
	c, err := text.NewCounter()
	if err != nil {
		t.Fatal(err)
	}
	tm := signUpTeam(t, srv, name)
	// A new team has no memory yet, so its head alone says what it serves:
	// the head a team created before v3 was the default has.
	if _, err := srv.Owner.Exec(ctx, `UPDATE tenant_heads SET dict_version = 1 WHERE tenant_id = $1`, tm.tenantID); err != nil {
		t.Fatal(err)
	}
	return &opsTeam{team: tm, srv: srv,
		eng: memory.New(srv.DB, memory.TextAnalyzer{C: c}, memory.DictTerms{D: d}, memory.Options{})}
}

// say stores n turns of a memory user (created if new) through eng.
func (o *opsTeam) say(t *testing.T, eng *memory.Engine, user string, n int) int64 {
	t.Helper()
	ctx := context.Background()
	uid, err := o.srv.DB.EnsureUser(ctx, o.tenantID, user)
	if err != nil {
		t.Fatal(err)
	}
	cid, err := o.srv.DB.EnsureConversation(ctx, o.tenantID, uid, user+"-c", "")
	if err != nil {
		t.Fatal(err)
	}
	for i := range n {
		text := fmt.Sprintf("%s painted %d tomatoes in the garden with the children, then went swimming", user, i)
		if _, err := eng.Capture(ctx, memory.Message{Who: memory.Who{TenantID: o.tenantID, UserID: uid, ConversationID: cid},
			Role: "user", Text: text, Position: i, At: time.Now()}); err != nil {
			t.Fatal(err)
		}
	}
	return uid
}

func (o *opsTeam) active(t *testing.T) int {
	t.Helper()
	st, err := o.srv.DB.DictStatus(context.Background(), o.tenantID)
	if err != nil {
		t.Fatal(err)
	}
	return st.Active
}

// upload posts a dictionary file as the multipart form the page sends.
func upload(t *testing.T, cl *webtest.Client, name string, content []byte) *webtest.Page {
	t.Helper()
	var body bytes.Buffer
	mw := multipart.NewWriter(&body)
	if err := mw.WriteField("_csrf", cl.CSRF); err != nil {
		t.Fatal(err)
	}
	fw, err := mw.CreateFormFile("file", name)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := fw.Write(content); err != nil {
		t.Fatal(err)
	}
	if err := mw.Close(); err != nil {
		t.Fatal(err)
	}
	return cl.Do(http.MethodPost, "/console/dictionaries", &body, http.Header{"Content-Type": {mw.FormDataContentType()}})
}

func rolloutState(p *webtest.Page, version int) string {
	return p.Doc.Find(`[data-testid="dict-row"][data-version="`+strconv.Itoa(version)+`"] [data-testid="rollout"]`).AttrOr("data-state", "?")
}

// TestDictionaryRolloutFromConsole: a platform admin loads v2 dark, the
// team's admin derives it with a polled progress bar, flips to it (the
// serving engine follows), flips back and retires it.
func TestDictionaryRolloutFromConsole(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	srv := webtest.Start(t, webtest.Options{})
	o := newOpsTeam(t, srv, "Rollers")
	o.say(t, o.eng, "alice", 12)
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

	p := o.admin.Get("/console/dictionaries")
	if p.Status != http.StatusOK || p.TestID("dict-active").Text() != "v1" || rolloutState(p, 1) != "serving" {
		t.Fatalf("dictionaries page: %d, active %q, v1 %q", p.Status, p.TestID("dict-active").Text(), rolloutState(p, 1))
	}
	if p.TestID("dict-upload-form").Length() != 0 || p.TestID("nav-dictionaries").Length() != 1 {
		t.Fatal("a team admin is offered the platform-wide upload, or no navigation link")
	}
	if how := p.TestID("dict-upload-how").Text(); !strings.Contains(how, "platform admin") || !strings.Contains(how, "perpetuity dict upload") {
		t.Fatalf("the page does not say how a new version gets here: %q", how)
	}
	if p := upload(t, o.admin, "v2.tsv", []byte("x")); p.Status != http.StatusForbidden {
		t.Fatalf("team admin upload: %d, want 403", p.Status)
	}

	p = root.Get("/console/dictionaries")
	if p.TestID("dict-upload-form").Length() != 1 {
		t.Fatal("no upload form for the platform admin")
	}
	if p := upload(t, root, "bad.tsv", []byte("perpetuity-dictionary\t9\n")); p.Status != http.StatusBadRequest ||
		!strings.Contains(p.TestID("form-error").Text(), "line 1") {
		t.Fatalf("malformed upload: %d %q", p.Status, p.TestID("form-error").Text())
	}
	v2, err := os.ReadFile("../memory/dict/data/v2.tsv")
	if err != nil {
		t.Fatal(err)
	}
	if p := upload(t, root, "v2.tsv", v2); p.Status != http.StatusSeeOther || p.Location() != "/console/dictionaries" {
		t.Fatalf("upload: %d to %q %s", p.Status, p.Location(), p.TestID("form-error").Text())
	}
	p = o.admin.Get("/console/dictionaries")
	if rolloutState(p, 2) != "" || o.active(t) != 1 {
		t.Fatalf("after the upload v2 is %q, v%d serves: an upload must be dark", rolloutState(p, 2), o.active(t))
	}

	// Derive, as the page's button does it through htmx.
	d := o.admin.Do(http.MethodPost, "/console/dictionaries/2/derive", nil,
		http.Header{"HX-Request": {"true"}, "X-CSRF-Token": {o.admin.CSRF}})
	cell := d.TestID("rollout")
	if strings.Contains(d.Body, "console@") || strings.Contains(cell.Text(), " by ") {
		t.Fatalf("the progress names its worker: %s", cell.Text())
	}
	switch st := cell.AttrOr("data-state", ""); st {
	case "deriving":
		if cell.AttrOr("hx-get", "") != "/console/dictionaries/2/progress" || cell.AttrOr("hx-trigger", "") != "every 1s" ||
			d.TestID("rollout-progress").Length() != 1 {
			t.Fatalf("a running derivation does not poll its progress: %s", d.Body)
		}
	case "ready":
	default:
		t.Fatalf("derive answered %d in state %q: %s", d.Status, st, d.Body)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		pr := o.admin.Get("/console/dictionaries/2/progress")
		st := pr.TestID("rollout").AttrOr("data-state", "")
		if st == "ready" {
			if pr.TestID("rollout").AttrOr("hx-trigger", "") != "" {
				t.Fatal("a finished rollout keeps polling")
			}
			break
		}
		if st != "deriving" || time.Now().After(deadline) {
			t.Fatalf("progress: %d, state %q", pr.Status, st)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if o.active(t) != 1 {
		t.Fatal("a derivation flipped the team")
	}

	// The Flip button leads to a page saying what a flip does; a POST
	// without that page's confirmation is sent there and changes nothing.
	confirm := o.admin.Get(o.admin.Get("/console/dictionaries").TestID("rollout-flip").AttrOr("href", ""))
	if confirm.Status != http.StatusOK || !strings.Contains(confirm.TestID("confirm-effects").Text(), "flip back to it at once") {
		t.Fatalf("flip confirmation: %d %q", confirm.Status, confirm.TestID("confirm-effects").Text())
	}
	if p := o.admin.Post("/console/dictionaries/2/flip", nil); p.Status != http.StatusSeeOther ||
		p.Location() != "/console/dictionaries/2/flip" || o.active(t) != 1 {
		t.Fatalf("unconfirmed flip: %d to %q, v%d serves", p.Status, p.Location(), o.active(t))
	}
	yes := url.Values{"confirm": {"yes"}}
	if p := o.admin.Post("/console/dictionaries/2/flip", yes); p.Status != http.StatusSeeOther || p.Location() != "/console/dictionaries" {
		t.Fatalf("flip: %d to %q", p.Status, p.Location())
	}
	if a, err := o.eng.ArenaSnapshot(ctx, o.tenantID); err != nil || o.active(t) != 2 || a.DictVersion != 2 || a.Count != 12 {
		t.Fatalf("after the flip: v%d active, arena %+v %v", o.active(t), a.DictVersion, err)
	}
	// The notice shows on the page the flip led to, and only there.
	p = o.admin.Get("/console/dictionaries")
	if rolloutState(p, 2) != "serving" || rolloutState(p, 1) != "ready" || p.TestID("notice").Length() != 1 {
		t.Fatalf("after the flip: v1 %q, v2 %q, %d notices", rolloutState(p, 1), rolloutState(p, 2), p.TestID("notice").Length())
	}
	if p := o.admin.Get("/console/dictionaries"); p.TestID("notice").Length() != 0 {
		t.Fatalf("the flip's notice is shown again on a reload: %q", p.TestID("notice").Text())
	}
	if p := o.admin.Post("/console/dictionaries/2/retire", yes); p.Status != http.StatusConflict {
		t.Fatalf("retire the serving version: %d", p.Status)
	}
	if p := o.admin.Get("/console/dictionaries/2/retire"); p.Status != http.StatusConflict {
		t.Fatalf("confirm retiring the serving version: %d", p.Status)
	}
	if p := o.admin.Post("/console/dictionaries/1/flip", yes); p.Status != http.StatusSeeOther || o.active(t) != 1 {
		t.Fatalf("flip back: %d, v%d", p.Status, o.active(t))
	}
	retire := o.admin.Get("/console/dictionaries/2/retire")
	if !strings.Contains(retire.TestID("confirm-effects").Text(), "Retire v2: you can no longer flip back to it instantly") {
		t.Fatalf("retire confirmation: %d %q", retire.Status, retire.TestID("confirm-effects").Text())
	}
	if p := o.admin.Post("/console/dictionaries/2/retire", nil); p.Status != http.StatusSeeOther || rolloutState(o.admin.Get("/console/dictionaries"), 2) != "ready" {
		t.Fatalf("unconfirmed retire: %d", p.Status)
	}
	if p := o.admin.Post("/console/dictionaries/2/retire", yes); p.Status != http.StatusSeeOther {
		t.Fatalf("retire: %d", p.Status)
	}
	if p := o.admin.Post("/console/dictionaries/2/flip", yes); p.Status != http.StatusConflict || p.TestID("form-error").Length() != 1 {
		t.Fatalf("flip to a retired version: %d", p.Status)
	}
	acts := auditActions(t, srv, o.tenantID)
	for _, a := range []string{"dict.derive", "dict.flip", "dict.retire"} {
		if !contains(acts, a) {
			t.Errorf("audit log lacks %s: %v", a, acts)
		}
		everyFrom(t, srv, o.tenantID, a) // issue 18, finding 4
	}
}

// TestIntegrityFromConsole: a check runs in the background against the
// serving engine's arena, its report fills in, and a broken count shows up
// as a violation with its rows.
func TestIntegrityFromConsole(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	srv := webtest.Start(t, webtest.Options{})
	o := newOpsTeam(t, srv, "Checkers")
	srv.Console.SetArenas(o.eng)
	o.say(t, o.eng, "alice", 5)

	run := func() *webtest.Page {
		t.Helper()
		o.admin.Get("/console/integrity")
		p := o.admin.Post("/console/integrity", nil)
		if p.Status != http.StatusSeeOther || !strings.HasPrefix(p.Location(), "/console/integrity/") {
			t.Fatalf("run: %d to %q", p.Status, p.Location())
		}
		deadline := time.Now().Add(30 * time.Second)
		for {
			r := o.admin.Get(p.Location())
			if r.TestID("integrity-report").AttrOr("data-running", "") == "false" {
				return r
			}
			if r.Status != http.StatusOK || time.Now().After(deadline) {
				t.Fatalf("report: %d %s", r.Status, r.Body)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	r := run()
	if v := strings.TrimSpace(r.TestID("integrity-verdict").Text()); v != "All 8 checks passed" {
		t.Fatalf("clean team: verdict %q", v)
	}
	if n := r.TestID("check-row").Length(); n != 8 || r.Doc.Find(`[data-testid="check-row"][data-outcome="fail"], [data-testid="check-row"][data-outcome="skipped"]`).Length() != 0 {
		t.Fatalf("clean team: %d check lines, not all pass:\n%s", n, r.TestID("checks-table").Text())
	}
	if strings.Contains(r.Body, "arena not compared") {
		t.Fatal("the console check did not compare the serving arena")
	}
	// Captures leave their counts in stat_deltas until a fold: the row
	// broken here holds them all first.
	if _, err := srv.DB.FoldStats(ctx, o.tenantID); err != nil {
		t.Fatal(err)
	}
	if _, err := srv.Owner.Exec(ctx, `UPDATE corpus_stats SET total_length = total_length + 1 WHERE tenant_id = $1`, o.tenantID); err != nil {
		t.Fatal(err)
	}
	r = run()
	if r.TestID("violation-row").Length() != 1 || r.TestID("violation-invariant").Text() != "stats.corpus" ||
		!strings.Contains(r.Body, "recount_length") {
		t.Fatalf("broken count: %s", r.TestID("integrity-report").Text())
	}
	failed := r.Doc.Find(`[data-testid="check-row"][data-outcome="fail"]`)
	if failed.Length() != 1 || failed.Find(`[data-testid="check-name"]`).Text() != "Scoring counts" ||
		failed.Find(`[data-testid="check-violations"]`).Text() != "1" || !strings.Contains(r.TestID("integrity-verdict").Text(), "1 of 8 checks failed") {
		t.Fatalf("broken count's check line: %s", r.TestID("checks-table").Text())
	}
	list := o.admin.Get("/console/integrity")
	if list.TestID("integrity-row").Length() != 2 {
		t.Fatalf("%d reports listed, want 2", list.TestID("integrity-row").Length())
	}
	other := signUpTeam(t, srv, "Others")
	if p := other.admin.Get(list.TestID("integrity-link").First().AttrOr("href", "")); p.Status != http.StatusNotFound {
		t.Fatalf("another team's admin reads the report: %d", p.Status)
	}
	mem, _, _ := addMember(t, srv, o.team, "tenant_reader")
	if p := mem.Get("/console/integrity"); p.Status != http.StatusForbidden {
		t.Fatalf("member: %d", p.Status)
	}
	everyFrom(t, srv, o.tenantID, "integrity.check") // issue 18, finding 4
}

// TestPurgeFromConsole: the typed confirmation must match; the purge then
// reaches both serving engines' arenas and the store, and leaves the other
// user alone.
func TestPurgeFromConsole(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	srv := webtest.Start(t, webtest.Options{})
	o := newOpsTeam(t, srv, "Purgers")
	second := memory.New(srv.DB, memory.TextAnalyzer{C: mustCounter(t)}, memory.DictTerms{D: mustDict(t, 1)}, memory.Options{})
	alice := o.say(t, o.eng, "alice", 4)
	bob := o.say(t, second, "bob", 3)
	for _, e := range []*memory.Engine{o.eng, second} {
		if a, err := e.ArenaSnapshot(ctx, o.tenantID); err != nil || a.Count != 7 {
			t.Fatalf("warm-up: %+v %v", a.Count, err)
		}
	}
	page := o.admin.Get("/console/users/" + itoa(alice))
	if page.TestID("purge-form").Length() != 1 {
		t.Fatal("no purge form on the user page")
	}
	path := "/console/users/" + itoa(alice) + "/purge"
	if p := o.admin.Post(path, url.Values{"confirm": {"bob"}}); p.Status != http.StatusBadRequest || p.TestID("form-error").Length() != 1 {
		t.Fatalf("wrong confirmation: %d", p.Status)
	}
	mem, _, _ := addMember(t, srv, o.team, "tenant_reader")
	mem.Get("/console")
	if p := mem.Post(path, url.Values{"confirm": {"alice"}}); p.Status != http.StatusForbidden {
		t.Fatalf("member purge: %d", p.Status)
	}
	other := signUpTeam(t, srv, "Strangers")
	other.admin.Get("/console")
	if p := other.admin.Post(path, url.Values{"confirm": {"alice"}}); p.Status != http.StatusNotFound {
		t.Fatalf("another team's purge: %d", p.Status)
	}
	count := func(user int64) int64 {
		var n int64
		if err := srv.Owner.QueryRow(ctx, `SELECT count(*) FROM items WHERE tenant_id = $1 AND user_id = $2`, o.tenantID, user).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	if count(alice) != 4 {
		t.Fatal("a refused purge removed something")
	}
	o.admin.Get("/console/users/" + itoa(alice))
	p := o.admin.Post(path, url.Values{"confirm": {"alice"}})
	if p.Status != http.StatusSeeOther || p.Location() != "/console/users/"+itoa(alice) {
		t.Fatalf("purge: %d to %q", p.Status, p.Location())
	}
	if n := o.admin.Get(p.Location()).TestID("notice").Text(); !strings.Contains(n, "purged") {
		t.Fatalf("notice %q", n)
	}
	if count(alice) != 0 || count(bob) != 3 {
		t.Fatalf("after the purge alice has %d items, bob %d", count(alice), count(bob))
	}
	for i, e := range []*memory.Engine{o.eng, second} {
		if a, err := e.ArenaSnapshot(ctx, o.tenantID); err != nil || a.Count != 3 {
			t.Fatalf("engine %d holds %d items after the purge: %v", i, a.Count, err)
		}
	}
	if !contains(auditActions(t, srv, o.tenantID), "memory.purge") {
		t.Fatal("no audit entry")
	}
	// Issue 18, finding 4: the entry says whom by name, and from where.
	everyFrom(t, srv, o.tenantID, "memory.purge")
	a := o.admin.Get("/console/audit?action=memory.purge")
	if got := strings.TrimSpace(a.TestID("audit-target").Text()); got != "alice" {
		t.Errorf("the purge's entry is on %q, want alice", got)
	}
}

func mustCounter(t *testing.T) *text.Counter {
	t.Helper()
	c, err := text.NewCounter()
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func mustDict(t *testing.T, v int) *dict.Dictionary {
	t.Helper()
	d, err := dict.Builtin(v)
	if err != nil {
		t.Fatal(err)
	}
	return d
}
