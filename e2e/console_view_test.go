package e2e

// Issue 18, "a console a team admin trusts", in a real browser against the
// real binary: the heat pictures say what they show without hovering, the
// memory browser says what order it lists and why an item matched, the
// dictionary steps that cannot be undone in one click ask first, and the
// pages fit a laptop's top bar and a phone's width. Screenshots land in
// e2e/artifacts/ (gitignored) for a person to look at.

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/openai/openai-go/v3"
	ooption "github.com/openai/openai-go/v3/option"

	"github.com/perpetuity/perpetuity/e2e/fakeprovider"
)

// cliEnv is the environment a CLI command needs to act on s's database.
func (s *server) cliEnv() []string { return append(os.Environ(), "DATABASE_URL="+s.DBURL) }

// sayThrough sends one chat turn through a proxy base URL with the OpenAI SDK.
func sayThrough(t *testing.T, s *server, base, question, answer string, opts ...ooption.RequestOption) {
	t.Helper()
	s.Fake.Script(fakeprovider.Reply{Text: answer})
	opts = append(opts, ooption.WithBaseURL(base), ooption.WithAPIKey("sk-test-openai"), ooption.WithMaxRetries(0))
	oc := openai.NewClient(opts...)
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	if _, err := oc.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{
		Model:    "gpt-4o-mini",
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage(question)},
	}); err != nil {
		t.Fatalf("OpenAI SDK through %s: %v", base, err)
	}
}

// eval runs a JavaScript expression in the tab.
func eval[T any](tb *tab, js string) T {
	tb.t.Helper()
	return run(tb, "evaluate "+js, chromedp.Evaluate[T](js))
}

// texts is the trimmed text of every element matching css, in order.
func (tb *tab) texts(css string) []string {
	tb.t.Helper()
	return eval[[]string](tb, `Array.from(document.querySelectorAll(`+strconv.Quote(css)+`), e => e.textContent.trim())`)
}

// visible reports whether every element matching css is laid out on the
// page with a size (a horizontal line has no height): text a person can
// read without hovering.
func (tb *tab) visible(css string) bool {
	tb.t.Helper()
	return eval[bool](tb, `(() => { const es = document.querySelectorAll(`+strconv.Quote(css)+`);
		return es.length > 0 && Array.from(es).every(e => { const r = e.getBoundingClientRect(); return r.width > 0 || r.height > 0; }); })()`)
}

// waitItems reloads path until it lists at least n items (capture of a
// reply and an import's catch-up land shortly after they return).
func (tb *tab) waitItems(base, path string, n int) {
	tb.t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for {
		tb.step("open "+path, chromedp.Navigate(base+path), chromedp.WaitVisible(byTestID("memory-results")))
		if got := tb.count(`[data-testid="item"]`); got >= n {
			return
		} else if time.Now().After(deadline) {
			tb.t.Fatalf("%s lists %d items after 15s, want %d", path, got, n)
		}
		time.Sleep(150 * time.Millisecond)
	}
}

// importFor imports one conversation for a memory user of the tenant, as
// `perpetuity import` does.
func importFor(t *testing.T, s *server, tenantID int64, user, conv string, turns ...string) {
	t.Helper()
	var b strings.Builder
	fmt.Fprintf(&b, `{"conversation":%q,"user":%q,"turns":[`, conv, user)
	at := time.Date(2025, 3, 1, 9, 0, 0, 0, time.UTC)
	for i, text := range turns {
		role := "user"
		if i%2 == 1 {
			role = "assistant"
		}
		if i > 0 {
			b.WriteString(",")
		}
		fmt.Fprintf(&b, `{"role":%q,"text":%q,"at":%q}`, role, text, at.Add(time.Duration(i)*time.Minute).Format(time.RFC3339))
	}
	b.WriteString("]}\n")
	path := filepath.Join(t.TempDir(), "import.jsonl")
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := runCLI(s.cliEnv(), "import", "--tenant", strconv.FormatInt(tenantID, 10), path); err != nil {
		t.Fatalf("import: %v\n%s", err, out)
	}
}

// TestBrowserViewHeatAndMemory: findings 1 and 2 of issue 18. The heat
// picture is on a log scale with axes, a warm line, now and the decay
// ahead labelled in text; the memory browser's caption says the order it
// has, marks the searched words (escaped), folds why an item matched into
// words, and lets an admin search every user at once.
func TestBrowserViewHeatAndMemory(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	a := newTab(t, headlessBrowser(t))
	a.signUp(s.URL, "View Team", "view@example.com")
	key := a.text(byTestID("new-key"))
	tenantID := s.scalar(`SELECT id FROM tenants WHERE name = 'View Team'`)
	base := s.URL + "/k/" + key + "/v1"

	const question = "Does the <b>Quokkaferry</b> still leave from platform nine on Fridays?"
	sayThrough(t, s, base, question, "Yes: the quokkaferry leaves from platform nine after the load test.")
	sayThrough(t, s, base, "And what about the Quokkaferry on Sundays?", "On Sundays there is no quokkaferry at all.")
	importFor(t, s, tenantID, "bob", "bob-trains", "bob asks: is the QUOKKAFERRY late again?", "It is ten minutes late.")

	// Browsing: newest first, said so; nothing searched, so nothing marked.
	owner := s.scalar(`SELECT id FROM memory_users WHERE tenant_id = $1 AND name <> 'bob'`, tenantID)
	a.waitItems(s.URL, "/console/memory?user="+strconv.FormatInt(owner, 10), 4)
	if got := a.text(byTestID("memory-caption")); !strings.Contains(got, "newest first") || strings.Contains(got, "relevant") {
		t.Errorf("browse caption %q", got)
	}
	if n := a.count(`[data-testid="item-terms"], mark`); n != 0 {
		t.Errorf("browsing shows %d raw terms or marks", n)
	}
	if !a.visible(`[data-testid="heat-legend"] li`) {
		t.Error("no visible legend for the heat pictures")
	}

	// Search by typing (htmx): relevance order, said so; words marked.
	a.step("search", chromedp.SendKeys(byTestID("memory-q"), "quokkaferry fridays"),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid="item-text"] mark`)))
	deadline := time.Now().Add(10 * time.Second)
	for !strings.Contains(a.text(byTestID("memory-caption")), "most relevant first") && time.Now().Before(deadline) {
		time.Sleep(100 * time.Millisecond)
	}
	if got := a.text(byTestID("memory-caption")); !strings.Contains(got, "most relevant first") || !strings.Contains(got, "“quokkaferry fridays”") {
		t.Errorf("search caption %q", got)
	}
	for _, m := range a.texts(`[data-testid="item-text"] mark`) {
		if w := strings.ToLower(m); w != "quokkaferry" && w != "fridays" {
			t.Errorf("marked %q, which was not searched", m)
		}
	}
	// The stored "<b>" is text, not markup: no element came from content.
	if n := a.count(`[data-testid="item-text"] b, [data-testid="item-text"] script`); n != 0 {
		t.Errorf("stored text became %d elements", n)
	}
	first := `[data-testid="item"]:first-of-type`
	if got := a.text(chromedp.CSS(first + ` [data-testid="item-text"]`)); got != question {
		t.Errorf("best match shows %q, stored %q", got, question)
	}
	why := chromedp.CSS(first + ` [data-testid="item-why"]`)
	if eval[bool](a, `document.querySelector('`+first+` [data-testid="item-why"]').open`) {
		t.Error("why it matched is open before it is asked for")
	}
	a.step("why it matched", chromedp.Click(chromedp.CSS(first+` [data-testid="item-why"] summary`)), chromedp.WaitVisible(chromedp.CSS(first+` [data-testid="item-why"] p`)))
	if got := a.text(why); !strings.Contains(got, "It contains “quokkaferry” and “fridays”") || !strings.Contains(got, "retrieval") {
		t.Errorf("why it matched: %q", got)
	}

	// The heat picture of the best match, readable without hovering.
	curve := first + ` svg[data-testid="heat-curve"]`
	if got := strings.Join(a.texts(curve+` [data-testid="heat-axis-label"]`), " "); got != "2 1 0.5 0.2 0.05" {
		t.Errorf("heat axis says %q", got)
	}
	clock := a.texts(curve + ` [data-testid="heat-clock-label"]`)
	if !slicesHasPrefix(clock, "now ") {
		t.Errorf("no visible now on the clock axis: %q", clock)
	}
	if !a.visible(curve+` [data-testid="heat-now-label"]`) || !a.visible(curve+` [data-testid="heat-warm-line"]`) || a.count(curve+` [data-testid="heat-future"]`) != 1 {
		t.Error("now's heat, the warm line or the decay ahead is not drawn")
	}
	heat, err := strconv.ParseFloat(a.attr(chromedp.CSS(first+` [data-testid="item-heat"]`), "data-heat"), 64)
	if err != nil {
		t.Fatal(err)
	}
	if got := a.texts(curve + ` [data-testid="heat-now-label"]`); len(got) != 1 || got[0] != strconv.FormatFloat(heat, 'f', 2, 64) {
		t.Errorf("now label %q, heat %v", got, heat)
	}
	if cap := a.text(chromedp.CSS(first + ` [data-testid="heat-caption"]`)); !strings.Contains(cap, "(warm)") || !strings.Contains(cap, "turns cold at clock") {
		t.Errorf("heat caption %q", cap)
	}
	// The meter does not saturate: a hotter item has a longer bar, across
	// the born-hot 1 to a retrieval's 2 that all used to be full.
	meters := eval[[]map[string]float64](a, `Array.from(document.querySelectorAll('[data-testid="item-heat"]'), e =>
		({heat: parseFloat(e.dataset.heat), fill: e.querySelectorAll('svg.meter rect')[1].width.baseVal.value}))`)
	spread := false
	for _, m := range meters {
		for _, o := range meters {
			if o["heat"] > m["heat"]+0.05 {
				spread = spread || o["heat"]-m["heat"] > 0.3
				if o["fill"] <= m["fill"] {
					t.Errorf("heat %.2f draws %v of 64, heat %.2f %v", o["heat"], o["fill"], m["heat"], m["fill"])
				}
			}
		}
	}
	if !spread {
		t.Logf("heats found: %v", meters)
	}
	a.shot("view-heat-curve.png", chromedp.ScreenshotScale(chromedp.CSS(first+` figure.heat-figure`), 3))
	a.shot("view-memory-search.png", chromedp.FullScreenshot(100))

	// An admin searches every user: bob's turn is found, labelled as his.
	a.step("all users", chromedp.SetValue(byTestID("memory-user"), "all"),
		chromedp.Evaluate[chromedp.Void](`document.getElementById('memory-user').dispatchEvent(new Event('change', {bubbles: true}))`),
		chromedp.WaitVisible(chromedp.Search(`//a[@data-testid="item-user"][text()="bob"]`)),
		// The caption is read once it says so: a read racing htmx's swap
		// finds the caption being replaced, which has no layout and so no
		// text (CI saw "" here once).
		chromedp.WaitVisible(chromedp.Search(`//p[@data-testid="memory-caption"][contains(., "across all users")]`)))
	if loc := run(a, "location", chromedp.Location()); !strings.Contains(loc, "user=all") {
		t.Errorf("all-users search did not push its URL: %s", loc)
	}
	a.shot("view-memory-all-users.png", chromedp.FullScreenshot(100))

	// The conversation's strip: bars by heat over the warm line, numbered.
	a.step("conversation", chromedp.Navigate(s.URL+"/console/memory?q=sundays"), chromedp.WaitVisible(byTestID("item-conversation")),
		chromedp.Click(byTestID("item-conversation")), chromedp.WaitVisible(byTestID("heat-strip")))
	if got := a.text(byTestID("heat-strip-caption")); !strings.Contains(got, "2 of 2 warm") {
		t.Errorf("strip caption %q", got)
	}
	heights := eval[[]float64](a, `Array.from(document.querySelectorAll('[data-testid="heat-cell"]'), r => r.height.baseVal.value)`)
	if len(heights) != 2 {
		t.Fatalf("strip has %d bars, want the question and the reply", len(heights))
	}
	a.shot("view-conversation-heat.png", chromedp.FullScreenshot(100))

	// The user page: the user's items by heat, how many are warm.
	a.step("user page", chromedp.Navigate(s.URL+"/console/users"), chromedp.WaitVisible(byTestID("users-table")),
		chromedp.Click(chromedp.Search(`//a[@data-testid="user-name"][text()="bob"]`)), chromedp.WaitVisible(byTestID("user-heat")))
	if got := a.text(byTestID("user-heat-summary")); !strings.HasPrefix(got, "2 of 2 items are warm") {
		t.Errorf("bob's heat summary %q", got)
	}
	if n := a.count(`[data-testid="heat-bin"]`); n != 5 {
		t.Errorf("%d heat bins", n)
	}
	a.shot("view-user-heat.png", chromedp.ScreenshotScale(byTestID("user-heat"), 2))
	for _, p := range a.consoleErrors() {
		t.Errorf("browser console: %s", p)
	}
}

func slicesHasPrefix(ss []string, prefix string) bool {
	for _, s := range ss {
		if strings.HasPrefix(s, prefix) {
			return true
		}
	}
	return false
}

// platformAdmin creates a platform admin with the CLI and signs them in,
// inside the CLI-made tenant of s.
func platformAdmin(t *testing.T, s *server, tb *tab, email string) {
	t.Helper()
	cmd := exec.Command(binary, "admin", "create", email)
	cmd.Env = s.cliEnv()
	cmd.Stdin = strings.NewReader("a long enough password\n")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("admin create: %v\n%s", err, out)
	}
	tb.stepWithin("sign in as platform admin", hashing,
		chromedp.Navigate(s.URL+"/signin"),
		chromedp.WaitVisible(byTestID("signin-email")),
		chromedp.SendKeys(byTestID("signin-email"), email),
		chromedp.SendKeys(byTestID("signin-password"), "a long enough password"),
		chromedp.Click(byTestID("signin-submit")),
		chromedp.WaitVisible(byTestID("tenants-table")),
		chromedp.Click(byTestID("tenant-enter")),
		chromedp.WaitVisible(byTestID("tenant-name")),
	)
}

// TestBrowserViewDictionariesAndIntegrity: finding 3 of issue 18. A
// dictionary is uploaded from the page; Flip and Retire say what they do
// and ask; the action's notice shows once; the integrity report is one
// line per check.
func TestBrowserViewDictionariesAndIntegrity(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	sayThrough(t, s, s.OpenAIBase(), "We keep the kayaks in the boathouse by the pier.", "Noted: kayaks, boathouse, pier.")
	s.waitStored(2)
	a := newTab(t, headlessBrowser(t))
	platformAdmin(t, s, a, "root@example.com")

	// The top bar of the widest role (every link) fits one line at 1280.
	if h := eval[float64](a, `document.querySelector('[data-testid="top-bar"]').getBoundingClientRect().height`); h > 56 {
		t.Errorf("top bar is %vpx high at 1280px: it wraps", h)
	}
	if o := a.topBarOverlaps(); len(o) > 0 {
		t.Errorf("platform admin's top bar at 1280px: %s", strings.Join(o, "; "))
	}

	// Upload from the console, as `perpetuity dict upload` does.
	v2, err := filepath.Abs("../memory/dict/data/v2.tsv")
	if err != nil {
		t.Fatal(err)
	}
	a.step("dictionaries", chromedp.Navigate(s.URL+"/console/dictionaries"), chromedp.WaitVisible(byTestID("dict-upload-form")))
	was := a.text(byTestID("dict-active")) // the team's version before: v3, the default
	wasN := s.scalar(`SELECT dict_version FROM tenant_heads WHERE tenant_id = $1`, s.TenantID)
	if was != "v"+strconv.FormatInt(wasN, 10) || wasN == 2 {
		t.Fatalf("the team serves %s (head v%d)", was, wasN)
	}
	a.stepWithin("upload v2", 45*time.Second,
		chromedp.SetUploadFiles(byTestID("dict-file"), []string{v2}), chromedp.Click(byTestID("dict-upload")),
		chromedp.WaitVisible(byTestID("notice")), chromedp.WaitVisible(chromedp.CSS(`[data-testid="dict-row"][data-version="2"]`)))
	if got := a.text(byTestID("notice")); !strings.Contains(got, "loaded dark") {
		t.Errorf("upload notice %q", got)
	}
	// The notice was for that one page: a reload does not repeat it.
	a.step("reload", chromedp.Navigate(s.URL+"/console/dictionaries"), chromedp.WaitVisible(byTestID("dict-table")))
	if n := a.count(`[data-testid="notice"]`); n != 0 {
		t.Errorf("the upload notice is still shown after a reload")
	}

	// Derive: the progress line has no internal worker id; the notice
	// goes once the page is reloaded.
	a.step("derive v2", chromedp.Click(chromedp.CSS(`[data-testid="dict-row"][data-version="2"] [data-testid="rollout-derive"]`)),
		chromedp.WaitVisible(byTestID("notice")))
	if got := a.text(byTestID("notice")); !strings.HasPrefix(got, "Derivation started") {
		t.Errorf("derive notice %q", got)
	}
	if line := eval[string](a, `(document.querySelector('[data-testid="rollout-line"]') || {textContent: ""}).textContent`); strings.Contains(line, "console@") || strings.Contains(line, "by ") {
		t.Errorf("progress shows a worker: %q", line)
	}
	a.step("derived", chromedp.WaitVisible(chromedp.CSS(`[data-testid="dict-row"][data-version="2"] [data-testid="rollout-ready"]`)))
	a.step("reload", chromedp.Navigate(s.URL+"/console/dictionaries"), chromedp.WaitVisible(byTestID("dict-table")))
	if n := a.count(`[data-testid="notice"]`); n != 0 {
		t.Errorf("a stale %q banner after the derivation", a.text(byTestID("notice")))
	}

	// Flip asks first and says what it does.
	a.step("flip v2", chromedp.Click(chromedp.CSS(`[data-testid="dict-row"][data-version="2"] [data-testid="rollout-flip"]`)),
		chromedp.WaitVisible(byTestID("confirm")))
	if got := a.text(byTestID("confirm-effects")); !strings.Contains(got, was+" stays derived, so you can flip back to it at once") {
		t.Errorf("flip confirmation says %q", got)
	}
	a.shot("view-flip-confirm.png", chromedp.FullScreenshot(100))
	if v := s.scalar(`SELECT dict_version FROM tenant_heads WHERE tenant_id = $1`, s.TenantID); v != wasN {
		t.Fatalf("opening the flip page flipped the team to v%d", v)
	}
	a.step("confirm flip", chromedp.Click(byTestID("confirm-submit")), chromedp.WaitVisible(byTestID("notice")))
	if got := a.text(byTestID("dict-active")); got != "v2" {
		t.Fatalf("after the flip the team serves %s", got)
	}

	// Retire (the version just left) asks, names what is lost, and Cancel
	// keeps it.
	prev := chromedp.CSS(`[data-testid="dict-row"][data-version="` + strconv.FormatInt(wasN, 10) + `"] [data-testid="rollout"]`)
	retirePrev := chromedp.CSS(string(prev) + ` [data-testid="rollout-retire"]`)
	a.step("retire "+was, chromedp.Click(retirePrev), chromedp.WaitVisible(byTestID("confirm")))
	if got := a.text(byTestID("confirm-effects")); !strings.Contains(got, "Retire "+was+": you can no longer flip back to it instantly") {
		t.Errorf("retire confirmation says %q", got)
	}
	a.shot("view-retire-confirm.png", chromedp.FullScreenshot(100))
	a.step("cancel", chromedp.Click(byTestID("confirm-cancel")), chromedp.WaitVisible(byTestID("dict-table")))
	if st := a.attr(prev, "data-state"); st != "ready" {
		t.Fatalf("cancel left %s %q", was, st)
	}
	a.step("retire "+was+" for real", chromedp.Click(retirePrev), chromedp.WaitVisible(byTestID("confirm-submit")),
		chromedp.Click(byTestID("confirm-submit")), chromedp.WaitVisible(byTestID("notice")))
	if st := a.attr(prev, "data-state"); st != "" {
		t.Fatalf("after retiring, %s is %q", was, st)
	}

	// Integrity: one line per check, in words, with its count.
	a.step("integrity", chromedp.Navigate(s.URL+"/console/integrity"), chromedp.Click(byTestID("integrity-run")),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid="integrity-report"][data-running="false"]`)), chromedp.WaitVisible(byTestID("checks-table")))
	if got := a.text(byTestID("integrity-verdict")); got != "All 8 checks passed" {
		t.Errorf("verdict %q", got)
	}
	names := a.texts(`[data-testid="check-name"]`)
	if strings.Join(names, ", ") != "Retrieval rows, Scoring counts, Birth and decay, Team boundaries, Serving memory, Chain graph, Arena segments, Labels" {
		t.Errorf("check lines %q", names)
	}
	for _, v := range a.texts(`[data-testid="check-violations"]`) {
		if v != "0" {
			t.Errorf("a clean team's check counts %s violations", v)
		}
	}
	if n := a.count(`[data-testid="check-row"][data-outcome="fail"], [data-testid="check-row"][data-outcome="skipped"]`); n != 0 {
		t.Errorf("%d checks failed or skipped on a clean team", n)
	}
	a.shot("view-integrity.png", chromedp.FullScreenshot(100))
	for _, p := range a.consoleErrors() {
		t.Errorf("browser console: %s", p)
	}
}

// pageWidth is the document's width in CSS pixels: on a phone the layout
// viewport grows to fit it, so it is compared with the device's width.
func (tb *tab) pageWidth() int {
	tb.t.Helper()
	return eval[int](tb, `document.documentElement.scrollWidth`)
}

// topBarOverlaps names the top bar's parts that overlap one another or
// spill out of their own box (a link under the address, cut-off text).
func (tb *tab) topBarOverlaps() []string {
	tb.t.Helper()
	return eval[[]string](tb, `(() => {
		const bar = document.querySelector('[data-testid="top-bar"]');
		const parts = Array.from(bar.querySelectorAll(':scope > *, :scope nav.wide > a, :scope .signout > *'))
			.filter(e => e.getClientRects().length > 0 && getComputedStyle(e).visibility !== 'hidden' && e.type !== 'hidden');
		const name = e => (e.dataset.testid || e.className || e.tagName) + '';
		const out = [];
		for (const e of parts) {
			// Text cut with an ellipsis gives way on purpose (its title has it all).
			const cut = getComputedStyle(e).textOverflow === 'ellipsis';
			if (!cut && e.scrollWidth > e.clientWidth + 1 && e.clientWidth > 0) out.push(name(e) + ' spills');
		}
		const boxes = parts.filter(e => !e.matches('nav.wide, .signout'));
		for (let i = 0; i < boxes.length; i++) for (let j = i + 1; j < boxes.length; j++) {
			const a = boxes[i].getBoundingClientRect(), b = boxes[j].getBoundingClientRect();
			if (a.left < b.right - 0.5 && b.left < a.right - 0.5 && a.top < b.bottom - 0.5 && b.top < a.bottom - 0.5) out.push(name(boxes[i]) + ' overlaps ' + name(boxes[j]));
		}
		const r = bar.getBoundingClientRect();
		for (const e of boxes) { const b = e.getBoundingClientRect(); if (b.right > r.right + 0.5) out.push(name(e) + ' beyond the bar'); }
		return out;
	})()`)
}

// TestBrowserViewLayout: finding 4 of issue 18. The top bar is one line
// at 1280px; at 390px the links fold into a menu and no page is wider
// than the phone; the purge box's button is a button; counts carry
// thousands separators.
func TestBrowserViewLayout(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	a := newTab(t, headlessBrowser(t))
	a.signUp(s.URL, "The Remarkably Long-Named Layout Team", "a.rather.long.address@layout-example.com")
	key := a.text(byTestID("new-key"))
	sayThrough(t, s, s.URL+"/k/"+key+"/v1", "Where do we keep the kayaks?", "In the boathouse by the pier.")
	tenantID := s.scalar(`SELECT id FROM tenants WHERE name = 'The Remarkably Long-Named Layout Team'`)
	userID := s.scalar(`SELECT id FROM memory_users WHERE tenant_id = $1`, tenantID)
	a.waitItems(s.URL, "/console/memory", 2)
	// A clock past a thousand tokens, as any real user's is.
	s.scalar(`WITH u AS (UPDATE memory_users SET clock = 21812 WHERE tenant_id = $1 RETURNING 1) SELECT count(*) FROM u`, tenantID)

	// 1280px: the top bar is one line, and fits.
	for _, path := range []string{"/console", "/console/memory"} {
		a.step("open "+path, chromedp.Navigate(s.URL+path), chromedp.WaitVisible(byTestID("top-bar")))
		bar := eval[[]float64](a, `(() => { const h = document.querySelector('[data-testid="top-bar"]'); return [h.getBoundingClientRect().height, h.scrollWidth, h.clientWidth]; })()`)
		if bar[0] > 56 || bar[1] > bar[2] {
			t.Errorf("%s at 1280px: top bar %vpx high, %v wide in %v", path, bar[0], bar[1], bar[2])
		}
		if !a.visible(`[data-testid="nav-memory"]`) || a.visible(`[data-testid="nav-menu"]`) {
			t.Errorf("%s at 1280px: the links are not in the bar", path)
		}
		if o := a.topBarOverlaps(); len(o) > 0 {
			t.Errorf("%s at 1280px: %s", path, strings.Join(o, "; "))
		}
	}
	a.shot("view-desktop-overview.png", chromedp.FullScreenshot(100))

	// Counts carry thousands separators.
	a.step("users", chromedp.Navigate(s.URL+"/console/users"), chromedp.WaitVisible(byTestID("users-table")))
	if got := a.text(byTestID("user-clock")); got != "21,812" {
		t.Errorf("users page shows the clock as %q", got)
	}
	userPage := s.URL + "/console/users/" + strconv.FormatInt(userID, 10)
	a.step("user", chromedp.Navigate(userPage), chromedp.WaitVisible(byTestID("purge-section")))
	if body := a.text(chromedp.CSS("main")); !strings.Contains(body, "clock 21,812 tokens") || strings.Contains(body, "21812") {
		t.Errorf("user page does not format the clock")
	}
	purgeBox := func(width string) {
		t.Helper()
		b := eval[[]float64](a, `(() => { const r = document.querySelector('[data-testid="purge-submit"]').getBoundingClientRect(); return [r.height, r.width]; })()`)
		if b[0] > 48 || b[1] > 200 {
			t.Errorf("purge button at %s is %vx%vpx", width, b[1], b[0])
		}
	}
	purgeBox("1280px")

	// 390px: a phone.
	a.step("phone", chromedp.EmulateViewport(390, 844, chromedp.EmulateScale(2), chromedp.EmulateMobile, chromedp.EmulateTouch))
	for _, path := range []string{"/console", "/console/keys", "/console/users", "/console/users/" + strconv.FormatInt(userID, 10), "/console/memory", "/console/connect", "/console/dictionaries", "/console/integrity"} {
		a.step("open "+path+" on a phone", chromedp.Navigate(s.URL+path), chromedp.WaitVisible(byTestID("top-bar")))
		if w := a.pageWidth(); w > 390 {
			t.Errorf("%s at 390px is %dpx wide: it scrolls sideways", path, w)
		}
		if o := a.topBarOverlaps(); len(o) > 0 {
			t.Errorf("%s at 390px: %s", path, strings.Join(o, "; "))
		}
		if h := eval[float64](a, `document.querySelector('[data-testid="top-bar"]').getBoundingClientRect().height`); h > 60 {
			t.Errorf("%s at 390px: top bar %vpx high", path, h)
		}
		if a.visible(`[data-testid="nav-memory"]`) || !a.visible(`[data-testid="nav-menu-toggle"]`) {
			t.Errorf("%s at 390px: the links are not folded into the menu", path)
		}
	}
	a.step("keys", chromedp.Navigate(s.URL+"/console/keys"), chromedp.WaitVisible(byTestID("keys-table")))
	a.shot("view-phone-keys.png", chromedp.FullScreenshot(100))
	a.step("users", chromedp.Navigate(s.URL+"/console/users"), chromedp.WaitVisible(byTestID("users-table")))
	// A stacked row names its cells.
	if got := eval[string](a, `getComputedStyle(document.querySelector('[data-testid="user-items"]'), '::before').content`); !strings.Contains(got, "Items") {
		t.Errorf("a stacked users row does not label its cells: %s", got)
	}
	a.shot("view-phone-users.png", chromedp.FullScreenshot(100))
	a.step("user", chromedp.Navigate(userPage), chromedp.WaitVisible(byTestID("purge-section")))
	purgeBox("390px")
	a.step("menu", chromedp.Click(byTestID("nav-menu-toggle")), chromedp.WaitVisible(byTestID("menu-memory")))
	a.shot("view-phone-menu.png", chromedp.FullScreenshot(100))
	a.step("menu to memory", chromedp.Click(byTestID("menu-memory")), chromedp.WaitVisible(byTestID("memory-results")))
	if w := a.pageWidth(); w > 390 {
		t.Errorf("memory at 390px is %dpx wide", w)
	}
	a.shot("view-phone-memory.png", chromedp.FullScreenshot(100))
	for _, p := range a.consoleErrors() {
		t.Errorf("browser console: %s", p)
	}
}
