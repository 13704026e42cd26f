package e2e

// The issue-6 journey in a real browser against the real binary: a team signs
// up in headless Chromium, copies its proxy URL off the welcome page, sends a
// request through it with the official OpenAI SDK, and finds the stored turn
// and its heat picture in the memory browser. Screenshots land in
// e2e/artifacts/ (gitignored) for a person to look at.

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/browser"
	"github.com/chromedp/chromedp"
	"github.com/openai/openai-go/v3"
	ooption "github.com/openai/openai-go/v3/option"

	"github.com/perpetuity/perpetuity/e2e/fakeprovider"
)

// findChromium finds Debian's browser; `make test` installs it when missing.
func findChromium(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	t.Fatal("no Chromium found: apt-get install -y chromium (make test does this)")
	return ""
}

// headlessBrowser starts headless Chromium with a fresh profile and returns
// the context of its first tab.
func headlessBrowser(t *testing.T) context.Context {
	t.Helper()
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(findChromium(t)),
		chromedp.Headless,
		chromedp.NoSandbox,
		chromedp.NoFirstRun,
		chromedp.Flag("disable-gpu", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(1280, 900),
	}
	alloc, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancelCtx := chromedp.NewContext(alloc)
	t.Cleanup(func() { cancelCtx(); cancelAlloc() })
	if err := chromedp.Do(ctx); err != nil { // starts the browser, with no timeout on it
		t.Fatalf("start chromium: %v", err)
	}
	return ctx
}

// tab drives one browser tab with a deadline per step and records what the
// page writes to its console as an error (a CSP violation is one).
type tab struct {
	t   *testing.T
	ctx context.Context

	mu       sync.Mutex
	problems []string
}

func newTab(t *testing.T, ctx context.Context) *tab {
	t.Helper()
	tb := &tab{t: t, ctx: ctx}
	if err := chromedp.Do(ctx); err != nil { // creates the target before listening
		t.Fatalf("open tab: %v", err)
	}
	msgs := chromedp.Console(ctx)
	go func() {
		for m, err := range msgs {
			if err != nil {
				return
			}
			if m.Type == chromedp.ConsoleError || m.IsException() {
				tb.mu.Lock()
				tb.problems = append(tb.problems, m.String())
				tb.mu.Unlock()
			}
		}
	}()
	return tb
}

// consoleErrors is every console error so far.
func (tb *tab) consoleErrors() []string {
	tb.mu.Lock()
	defer tb.mu.Unlock()
	return append([]string(nil), tb.problems...)
}

func (tb *tab) step(name string, actions ...chromedp.Action[chromedp.Void]) {
	tb.t.Helper()
	tb.stepWithin(name, 10*time.Second, actions...)
}

// hashing is the deadline of a step that types a form and submits a
// password the server hashes with serving's argon2id parameters: on a fresh
// CI machine with Chromium starting beside the other packages' tests, the
// typing took 5 s and the sign-up's POST 3.7-4.6 s, past step's 10 s.
const hashing = 40 * time.Second

// stepWithin is step for an action whose server side is real work (a
// dictionary upload stores 150k rows: 1.3 s idle, 9.3 s in a loaded CI run).
func (tb *tab) stepWithin(name string, d time.Duration, actions ...chromedp.Action[chromedp.Void]) {
	tb.t.Helper()
	c, cancel := context.WithTimeout(tb.ctx, d)
	defer cancel()
	if err := chromedp.Do(c, actions...); err != nil {
		tb.t.Fatalf("%s: %v", name, err)
	}
}

// text is the element's visible text. An element htmx is swapping out has
// no layout, so chromedp reads "" from it; an empty read is retried briefly
// so that a read racing a swap sees the element that replaced it.
func (tb *tab) text(sel chromedp.CSS) string {
	tb.t.Helper()
	deadline := time.Now().Add(2 * time.Second)
	for {
		got := strings.TrimSpace(run(tb, "read "+string(sel), chromedp.Text(sel)))
		if got != "" || time.Now().After(deadline) {
			return got
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func (tb *tab) attr(sel chromedp.CSS, name string) string {
	tb.t.Helper()
	a := run(tb, "read "+string(sel)+" "+name, chromedp.AttributeValue(sel, name))
	if !a.Exists {
		tb.t.Fatalf("%s has no %s attribute", sel, name)
	}
	return a.Value
}

// shot saves a screenshot under e2e/artifacts/.
func (tb *tab) shot(name string, a chromedp.Action[[]byte]) {
	tb.t.Helper()
	saveArtifact(tb.t, name, run(tb, "screenshot "+name, a))
}

// count is how many elements match a CSS selector now, without waiting.
func (tb *tab) count(css string) int {
	tb.t.Helper()
	return run(tb, "count "+css, chromedp.Evaluate[int](`document.querySelectorAll(`+strconv.Quote(css)+`).length`))
}

func run[T any](tb *tab, what string, a chromedp.Action[T]) T {
	tb.t.Helper()
	c, cancel := context.WithTimeout(tb.ctx, 10*time.Second)
	defer cancel()
	v, err := chromedp.Run(c, a)
	if err != nil {
		tb.t.Fatalf("%s: %v", what, err)
	}
	return v
}

// signUp creates a team from the sign-up page and waits for the welcome page.
func (tb *tab) signUp(base, team, email string) {
	tb.t.Helper()
	tb.stepWithin("sign up "+team, hashing,
		chromedp.Navigate(base+"/signup"),
		chromedp.WaitVisible(byTestID("signup-form")),
		chromedp.SendKeys(byTestID("signup-team"), team),
		chromedp.SendKeys(byTestID("signup-email"), email),
		chromedp.SendKeys(byTestID("signup-password"), "a long enough password"),
		chromedp.Click(byTestID("signup-submit")),
		chromedp.WaitVisible(byTestID("welcome")),
	)
}

// saveArtifact writes a PNG under e2e/artifacts/ after checking it is one.
func saveArtifact(t *testing.T, name string, png []byte) {
	t.Helper()
	if len(png) < 100 || string(png[1:4]) != "PNG" {
		t.Fatalf("screenshot %s: %d bytes, not a PNG", name, len(png))
	}
	dir := "artifacts"
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, png, 0o644); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(path); err != nil || fi.Size() == 0 {
		t.Fatalf("artifact %s not written: %v", path, err)
	}
}

func byTestID(id string) chromedp.CSS { return chromedp.CSS(`[data-testid="` + id + `"]`) }

// freeAddr picks a free loopback port, so the server can be told its public
// URL before it starts: the console builds proxy URLs from it.
func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// grantClipboard lets the copy buttons write and the test read the clipboard
// on the console's origin, so "copy" is what a person gets by clicking.
func grantClipboard(t *testing.T, ctx context.Context, origin string) {
	t.Helper()
	for _, name := range []string{"clipboard-read", "clipboard-write"} {
		p := browser.SetPermissionParams{
			Permission: &browser.PermissionDescriptor{Name: name},
			Setting:    browser.PermissionSettingGranted, Origin: origin,
		}
		if _, err := chromedp.CallBrowser(ctx, browser.SetPermission, p); err != nil {
			t.Fatalf("grant %s: %v", name, err)
		}
	}
}

func TestBrowserSignUpProxyMemoryHeat(t *testing.T) {
	t.Parallel()
	// The public URL must name the port, so the test picks one; another
	// test may take it between the pick and the bind, so pick again then.
	var s *server
	var public string
	for attempt := 0; ; attempt++ {
		addr := freeAddr(t)
		public = "http://" + addr
		var err error
		if s, err = tryStartServer(t, "PERPETUITY_ADDR="+addr, "PERPETUITY_PUBLIC_URL="+public); err == nil {
			break
		} else if attempt == 4 || !strings.Contains(err.Error(), "address already in use") {
			t.Fatal(err)
		}
	}
	if s.URL != public {
		t.Fatalf("server listens on %s, wanted %s", s.URL, public)
	}
	root := headlessBrowser(t)
	grantClipboard(t, root, public)
	a := newTab(t, root)

	// 1. Sign up.
	a.signUp(s.URL, "Browser Team", "browser@example.com")
	if got := a.text(byTestID("tenant-name")); got != "Browser Team" {
		t.Fatalf("signed in as team %q", got)
	}

	// 2. Copy the OpenAI proxy URL off the welcome page, as a person would.
	key := a.text(byTestID("new-key"))
	shown := a.text(byTestID("proxy-url-openai"))
	if !strings.HasPrefix(key, "ppk_") || shown != s.URL+"/k/"+key+"/v1" {
		t.Fatalf("welcome page shows key %q and OpenAI proxy URL %q", key, shown)
	}
	a.step("copy the proxy URL",
		chromedp.Click(byTestID("copy-openai")),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid="copy-openai"].copied`)),
	)
	copied := run(a, "read the clipboard", chromedp.Evaluate[string](`navigator.clipboard.readText()`, chromedp.EvalAwaitPromise))
	if copied != shown {
		t.Fatalf("the copy button put %q on the clipboard, the page shows %q", copied, shown)
	}
	a.shot("console-welcome.png", chromedp.FullScreenshot(100))

	// 3. A proxied request through the copied URL, with the official SDK.
	const question = "Which platform does the Quokkaferry release train leave from on Friday?"
	const answer = "It leaves from platform nine, after the load test passes."
	s.Fake.Script(fakeprovider.Reply{Text: answer})
	oc := openai.NewClient(ooption.WithBaseURL(copied), ooption.WithAPIKey("sk-test-openai"), ooption.WithMaxRetries(0))
	sdkCtx, cancelSDK := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancelSDK()
	resp, err := oc.Chat.Completions.New(sdkCtx, openai.ChatCompletionNewParams{
		Model:    "gpt-4o-mini",
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage(question)},
	})
	if err != nil {
		t.Fatalf("OpenAI SDK through %s: %v", copied, err)
	}
	if got := resp.Choices[0].Message.Content; got != answer {
		t.Fatalf("SDK got %q, provider said %q", got, answer)
	}
	if n := len(s.Fake.Requests()); n != 1 {
		t.Fatalf("fake provider saw %d requests, want 1", n)
	}

	// 4. The memory browser finds the turn by a word of the question. The
	// reply is captured after the response ends, so the page is reloaded
	// until both turns are there (the unfiltered list shows the latest).
	deadline := time.Now().Add(10 * time.Second)
	for {
		a.step("memory browser", chromedp.Navigate(s.URL+"/console/memory"), chromedp.WaitVisible(byTestID("memory-results")))
		n := a.count(`[data-testid="item"]`)
		if n >= 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("memory browser shows %d items 10s after the request, want the question and the reply:\n%s",
				n, run(a, "results", chromedp.Text(byTestID("memory-results"))))
		}
		time.Sleep(100 * time.Millisecond)
	}
	// htmx: typing narrows the results in place, without a page load.
	a.step("search with htmx",
		chromedp.SendKeys(byTestID("memory-q"), "quokkaferry"),
		chromedp.WaitNotPresent(chromedp.Search(`//pre[@data-testid="item-text"][contains(., "platform nine")]`)),
		chromedp.WaitVisible(byTestID("heat-curve")),
	)
	if n := a.count(`[data-testid="item"]`); n != 1 {
		t.Fatalf("search found %d items, want the one question", n)
	}
	if got := a.text(byTestID("item-text")); got != question {
		t.Fatalf("memory browser shows %q, stored turn was %q", got, question)
	}
	if got := a.text(byTestID("item-role")); !strings.EqualFold(got, "user") { // shown in capitals by CSS
		t.Fatalf("found item has role %q", got)
	}
	if loc := run(a, "location", chromedp.Location()); !strings.Contains(loc, "q=quokkaferry") {
		t.Fatalf("htmx search did not push its URL: %s", loc)
	}
	heatCurve := chromedp.CSS(`[data-testid="item"] svg[data-testid="heat-curve"]`)
	if n := a.count(`[data-testid="item"] svg[data-testid="heat-curve"] [data-testid="heat-now"]`); n != 1 {
		t.Fatalf("heat picture has %d now-markers", n)
	}
	heatNow := a.attr(byTestID("item-heat"), "data-heat")
	t.Logf("found turn: heat now %s, %s reheats", heatNow, a.attr(heatCurve, "data-reheats"))

	// 5. Screenshots of the heat picture and the page.
	a.shot("heat-curve.png", chromedp.ScreenshotScale(heatCurve, 3))
	a.shot("memory-browser.png", chromedp.FullScreenshot(100))

	convPath := a.attr(byTestID("item-conversation"), "href")
	convPath, _, _ = strings.Cut(convPath, "#")
	if !strings.HasPrefix(convPath, "/console/conversations/") {
		t.Fatalf("conversation link %q", convPath)
	}
	a.step("conversation", chromedp.Click(byTestID("item-conversation")), chromedp.WaitVisible(byTestID("heat-strip")))
	if n := a.count(`[data-testid="item"]`); n != 2 {
		t.Fatalf("conversation shows %d turns, want question and reply", n)
	}
	a.shot("conversation-heat.png", chromedp.FullScreenshot(100))

	// The question's own page has its chain section (the journey's single
	// conversation gives it no thread; the reply may have drawn on nothing).
	a.step("item page", chromedp.Click(byTestID("item-link")), chromedp.WaitVisible(byTestID("chain-section")))
	if got := a.text(byTestID("item-title")); !strings.HasPrefix(got, "Item #") {
		t.Fatalf("item page titled %q", got)
	}
	if got := a.text(byTestID("item-text")); got != question {
		t.Fatalf("item page shows %q, the first turn was %q", got, question)
	}
	if n := a.count(`[data-testid="chain-empty"], [data-testid="chain-group"]`); n == 0 {
		t.Fatal("chain section says neither that it is empty nor what is linked")
	}
	a.shot("item-chain.png", chromedp.FullScreenshot(100))

	a.step("keys", chromedp.Navigate(s.URL+"/console/keys"), chromedp.WaitVisible(byTestID("keys-table")))
	// Not fatal, so the rest of the journey still runs: the keys page must
	// show that the key just carried a request (store.DB.TouchKey).
	if got := a.text(byTestID("key-last-used")); got == "" || strings.EqualFold(got, "never") {
		t.Errorf("keys page says the key that just carried a request was last used %q", got)
	}
	a.shot("console-keys.png", chromedp.FullScreenshot(100))
	a.step("overview", chromedp.Navigate(s.URL+"/console"), chromedp.WaitVisible(byTestID("chart-items")))
	a.shot("console-overview.png", chromedp.FullScreenshot(100))

	// 6. Another team, in its own browser context (no shared cookies), cannot
	// open the first team's conversation.
	bctx, cancelB := chromedp.NewContext(root, chromedp.WithNewBrowserContext())
	defer cancelB()
	b := newTab(t, bctx)
	b.signUp(s.URL, "Other Team", "other@example.com")
	if got := b.text(byTestID("tenant-name")); got != "Other Team" {
		t.Fatalf("second context signed in as team %q", got)
	}
	c, cancel := context.WithTimeout(bctx, 10*time.Second)
	defer cancel()
	res, err := chromedp.RunResponse(c, chromedp.Navigate(s.URL+convPath))
	if err != nil {
		t.Fatalf("open the first team's conversation: %v", err)
	}
	if res.Status != http.StatusNotFound && res.Status != http.StatusForbidden {
		t.Fatalf("another tenant's conversation answered %d, want 404 or 403", res.Status)
	}
	b.step("error page", chromedp.WaitVisible(byTestID("error")))
	body := run(b, "page text", chromedp.Text(chromedp.CSS("body")))
	if strings.Contains(body, "Quokkaferry") || strings.Contains(body, "platform nine") {
		t.Fatalf("another tenant sees the first team's memory:\n%s", body)
	}
	b.shot("other-tenant-denied.png", chromedp.FullScreenshot(100))

	// The browser logs the refused page load itself; anything else in either
	// tab (a CSP violation, a script error) fails the test.
	refused := fmt.Sprintf("status of %d", res.Status)
	for _, p := range a.consoleErrors() {
		t.Errorf("browser console (first team): %s", p)
	}
	for _, p := range b.consoleErrors() {
		if !strings.Contains(p, refused) {
			t.Errorf("browser console (other team): %s", p)
		}
	}
}
