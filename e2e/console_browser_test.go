package e2e

// The console in a real browser, console only (no proxy): a team signs up
// in headless Chromium, reads its proxy URL and key, finds stored memory and
// its heat picture, and screenshots land in e2e/artifacts/. The full issue-6
// journey (a proxied request through the copied URL) builds on these helpers.

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/perpetuity/perpetuity/web/webtest"
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

// headlessBrowser starts headless Chromium with a fresh profile and collects the
// page's console errors (a CSP violation is one).
func headlessBrowser(t *testing.T) (context.Context, func() []string) {
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
	var mu sync.Mutex
	var problems []string
	msgs := chromedp.Console(ctx)
	go func() {
		for m, err := range msgs {
			if err != nil {
				return
			}
			if m.Type == chromedp.ConsoleError || m.IsException() {
				mu.Lock()
				problems = append(problems, m.String())
				mu.Unlock()
			}
		}
	}()
	return ctx, func() []string {
		mu.Lock()
		defer mu.Unlock()
		return append([]string(nil), problems...)
	}
}

func saveArtifact(t *testing.T, name string, png []byte) {
	t.Helper()
	dir := "artifacts"
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if len(png) < 100 {
		t.Fatalf("screenshot %s is %d bytes", name, len(png))
	}
	if err := os.WriteFile(filepath.Join(dir, name), png, 0o644); err != nil {
		t.Fatal(err)
	}
}

func byTestID(id string) chromedp.CSS { return chromedp.CSS(`[data-testid="` + id + `"]`) }

func TestConsoleSignUpToHeatInBrowser(t *testing.T) {
	srv := webtest.Start(t, webtest.Options{})
	ctx, problems := headlessBrowser(t)
	step := func(name string, actions ...chromedp.Action[chromedp.Void]) {
		t.Helper()
		c, cancel := context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
		if err := chromedp.Do(c, actions...); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
	}
	text := func(sel chromedp.CSS) string {
		t.Helper()
		c, cancel := context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
		s, err := chromedp.Run(c, chromedp.Text(sel))
		if err != nil {
			t.Fatalf("read %s: %v", sel, err)
		}
		return strings.TrimSpace(s)
	}
	shot := func(name string, a chromedp.Action[[]byte]) {
		t.Helper()
		c, cancel := context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
		png, err := chromedp.Run(c, a)
		if err != nil {
			t.Fatalf("screenshot %s: %v", name, err)
		}
		saveArtifact(t, name, png)
	}

	step("sign up",
		chromedp.Navigate(srv.URL+"/signup"),
		chromedp.WaitVisible(byTestID("signup-form")),
		chromedp.SendKeys(byTestID("signup-team"), "Browser Team"),
		chromedp.SendKeys(byTestID("signup-email"), "browser@example.com"),
		chromedp.SendKeys(byTestID("signup-password"), "a long enough password"),
		chromedp.Click(byTestID("signup-submit")),
		chromedp.WaitVisible(byTestID("new-key")),
	)
	key := text(byTestID("new-key"))
	proxy := text(byTestID("proxy-url-openai"))
	if !strings.HasPrefix(key, "ppk_") || proxy != srv.URL+"/k/"+key+"/v1" {
		t.Fatalf("welcome page shows key %q and proxy URL %q", key, proxy)
	}
	step("copy the proxy URL", chromedp.Click(byTestID("copy-openai")))
	shot("console-welcome.png", chromedp.FullScreenshot(100))

	id, err := srv.DB.ResolveKey(context.Background(), key)
	if err != nil {
		t.Fatalf("key from the page: %v", err)
	}
	turns := []webtest.Turn{
		{Conversation: "release", Role: "user", Speaker: "Ada", Text: "We ship the Zephyr release on Friday after the load test.", BornClock: 0, Peak: 1,
			Reheats: [][2]float64{{1800, 0.95}, {3600, 0.9}}},
		{Conversation: "release", Role: "assistant", Speaker: "agent", Text: "Noted: Zephyr ships Friday, after the load test passes.", BornClock: 40, Peak: 1},
		{Conversation: "lunch", Role: "user", Speaker: "Ada", Text: "Lunch with the team is at noon on Thursday.", BornClock: 90, Peak: 1},
	}
	for _, tr := range turns {
		tr.TenantID, tr.UserID, tr.Tau = id.TenantID, id.UserID, 1200
		if _, _, err := webtest.StoreTurn(context.Background(), srv.DB, tr); err != nil {
			t.Fatal(err)
		}
	}
	if err := webtest.SetClock(context.Background(), srv.DB, id.TenantID, id.UserID, 4500); err != nil {
		t.Fatal(err)
	}

	step("memory browser",
		chromedp.Navigate(srv.URL+"/console/memory"),
		chromedp.WaitVisible(byTestID("heat-curve")),
	)
	// htmx: typing narrows the results in place.
	step("search with htmx",
		chromedp.SendKeys(chromedp.ID("memory-q"), "zephyr"),
		chromedp.WaitNotPresent(chromedp.Search(`//pre[contains(., "Lunch with the team")]`)),
		chromedp.WaitVisible(byTestID("heat-curve")),
	)
	if got := text(byTestID("item-text")); !strings.Contains(got, "Zephyr") {
		t.Fatalf("first result %q", got)
	}
	shot("memory-browser.png", chromedp.FullScreenshot(100))
	shot("heat-curve.png", chromedp.ScreenshotScale(byTestID("heat-curve"), 3))

	step("conversation", chromedp.Click(byTestID("item-conversation")), chromedp.WaitVisible(byTestID("heat-strip")))
	shot("conversation-heat.png", chromedp.FullScreenshot(100))

	step("keys", chromedp.Navigate(srv.URL+"/console/keys"), chromedp.WaitVisible(byTestID("keys-table")))
	if got := text(byTestID("key-name")); got != "first key" {
		t.Fatalf("keys page lists %q", got)
	}
	shot("console-keys.png", chromedp.FullScreenshot(100))

	step("overview", chromedp.Navigate(srv.URL+"/console"), chromedp.WaitVisible(byTestID("chart-items")))
	shot("console-overview.png", chromedp.FullScreenshot(100))

	// The copy button may log a clipboard refusal in headless mode; any
	// other console error (a CSP violation, a script error) fails the test.
	for _, p := range problems() {
		if !strings.Contains(strings.ToLower(p), "clipboard") {
			t.Errorf("browser console: %s", p)
		}
	}
}
