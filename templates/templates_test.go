package templates

import (
	"bytes"
	"context"
	"flag"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/PuerkitoBio/goquery"
	"github.com/a-h/templ"
)

var update = flag.Bool("update", false, "rewrite golden files under testdata/")

func render(t *testing.T, c templ.Component) (string, *goquery.Document) {
	t.Helper()
	var b bytes.Buffer
	if err := c.Render(context.Background(), &b); err != nil {
		t.Fatal(err)
	}
	doc, err := goquery.NewDocumentFromReader(strings.NewReader(b.String()))
	if err != nil {
		t.Fatal(err)
	}
	return b.String(), doc
}

func byID(doc *goquery.Document, id string) *goquery.Selection {
	return doc.Find(`[data-testid="` + id + `"]`)
}

func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test ./templates -update to create it)", err)
	}
	if got != string(want) {
		t.Fatalf("%s differs from the golden file; inspect and rerun with -update if intended.\ngot:\n%s", path, got)
	}
}

// sampleHistory is a heat history as the console hands it over: born hot,
// two reheats, a few samples per segment. The values need not follow the
// heat law (web's tests render the real thing against a golden file):
// layout only places them.
func sampleHistory() HeatHistory {
	return HeatHistory{Tau: 800, Now: 4200, End: 4200, Current: 0.17,
		Segments: []HeatSegment{
			{Clock: 1000, Peak: 1, Samples: []HeatSample{{Clock: 1600, Heat: 0.47}, {Clock: 2200, Heat: 0.22}}},
			{Clock: 2200, Peak: 0.85, Samples: []HeatSample{{Clock: 3100, Heat: 0.28}}},
			{Clock: 3100, Peak: 0.7, Samples: []HeatSample{{Clock: 4200, Heat: 0.17}}},
		}}
}

func TestHeatCurveSVG(t *testing.T) {
	t.Parallel()
	_, doc := render(t, heatCurveSVG(Item{ID: 7, Heat: sampleHistory()}, 240, 64))
	if got := byID(doc, "heat-mark").Length(); got != 3 {
		t.Fatalf("%d marks, want birth and two reheats", got)
	}
	if got := byID(doc, "heat-curve").AttrOr("data-reheats", ""); got != "2" {
		t.Fatalf("data-reheats %q", got)
	}
	if got := byID(doc, "heat-curve").AttrOr("aria-label", ""); got != "heat over the clock, now 0.17" {
		t.Fatalf("aria-label %q", got)
	}
}

func TestConnectPageGolden(t *testing.T) {
	t.Parallel()
	p := Page{Title: "Welcome", Nav: "connect", CSRF: "tok", Email: "ada@example.com", Role: RoleTenantAdmin, TenantName: "Acme"}
	c := Connect{Key: "ppk_abc", KeyName: "first key", UserName: "default",
		OpenAIBase: "http://localhost:8080/k/{key}/v1", AnthropicBase: "http://localhost:8080/k/{key}"}
	out, doc := render(t, ConnectPage(p, c, true))
	golden(t, "connect_welcome.html.golden", out)
	checks := map[string]string{
		"new-key":             "ppk_abc",
		"proxy-url-openai":    "http://localhost:8080/k/ppk_abc/v1",
		"proxy-url-anthropic": "http://localhost:8080/k/ppk_abc",
		"welcome":             "Welcome, Acme",
		"connect-user":        "default",
	}
	for id, want := range checks {
		if got := byID(doc, id).Text(); got != want {
			t.Errorf("%s = %q, want %q", id, got, want)
		}
	}
	if hx := doc.Find("body").AttrOr("hx-headers", ""); hx != `{"X-CSRF-Token":"tok"}` {
		t.Errorf("hx-headers %q", hx)
	}
}

func TestConnectWithoutKeyShowsPlaceholder(t *testing.T) {
	t.Parallel()
	c := Connect{OpenAIBase: "https://p.example/k/{key}/v1", AnthropicBase: "https://p.example/k/{key}"}
	_, doc := render(t, ConnectPage(Page{Role: RoleTenantMember, TenantName: "T"}, c, false))
	if byID(doc, "new-key").Length() != 0 {
		t.Fatal("a key box without a key")
	}
	if got := byID(doc, "proxy-url-openai").Text(); got != "https://p.example/k/YOUR_PERPETUITY_KEY/v1" {
		t.Fatalf("placeholder URL %q", got)
	}
	for _, s := range c.Snippets() {
		if strings.Contains(s.Code, "{key}") {
			t.Errorf("snippet %s keeps the template marker", s.ID)
		}
	}
}

func TestNavigationFollowsRole(t *testing.T) {
	t.Parallel()
	cases := []struct {
		role               string
		tenant             string
		accounts, platform bool
		overview           bool
	}{
		{RoleTenantMember, "T", false, false, true},
		{RoleTenantAdmin, "T", true, false, true},
		{RolePlatformAdmin, "T", true, true, true},
		{RolePlatformAdmin, "", false, true, false},
	}
	for _, c := range cases {
		_, doc := render(t, UsersPage(Page{Role: c.role, TenantName: c.tenant}, nil))
		if got := byID(doc, "nav-accounts").Length() == 1; got != c.accounts {
			t.Errorf("%s in %q: accounts link %v", c.role, c.tenant, got)
		}
		if got := byID(doc, "nav-platform").Length() == 1; got != c.platform {
			t.Errorf("%s in %q: platform link %v", c.role, c.tenant, got)
		}
		if got := byID(doc, "nav-overview").Length() == 1; got != c.overview {
			t.Errorf("%s in %q: overview link %v", c.role, c.tenant, got)
		}
	}
}

func TestItemCardShowsHeatAtAGlance(t *testing.T) {
	t.Parallel()
	hot := Item{ID: 1, ConversationID: 3, Conversation: "plans", Role: "user", Speaker: "Ada", Text: "<b>not markup</b>", When: "2 days ago",
		Terms: []string{"plans", "friday"}, Heat: HeatHistory{Tau: 100, Now: 10, End: 11, Current: 1, Segments: []HeatSegment{{Clock: 10, Peak: 1}}}}
	cold := hot
	cold.ID, cold.Heat.Now, cold.Heat.End, cold.Heat.Current = 2, 10000, 10000, 0
	_, doc := render(t, MemoryResults(Memory{Items: []Item{hot, cold}}))
	items := byID(doc, "item")
	if items.Length() != 2 {
		t.Fatalf("%d items", items.Length())
	}
	if !items.Eq(0).HasClass("heat-10") || !items.Eq(1).HasClass("heat-0") {
		t.Fatalf("heat classes %q / %q", items.Eq(0).AttrOr("class", ""), items.Eq(1).AttrOr("class", ""))
	}
	if got := items.Eq(0).Find(`[data-testid="item-heat"]`).AttrOr("data-heat", ""); got != "1.00" {
		t.Fatalf("hot heat %q", got)
	}
	if got := byID(doc, "item-text").First().Text(); got != "<b>not markup</b>" {
		t.Fatalf("verbatim text %q", got)
	}
	if doc.Find("b").Length() != 0 {
		t.Fatal("stored text rendered as markup")
	}
	if href := byID(doc, "item-conversation").First().AttrOr("href", ""); href != "/console/conversations/3#item-1" {
		t.Fatalf("conversation link %q", href)
	}
	_, empty := render(t, MemoryResults(Memory{}))
	if byID(empty, "memory-empty").Length() != 1 {
		t.Fatal("no empty state")
	}
}

func TestNewHeatCurveGeometry(t *testing.T) {
	t.Parallel()
	hh := sampleHistory()
	c := NewHeatCurve(hh, 200, 50)
	if len(c.Marks) != 3 {
		t.Fatalf("%d marks", len(c.Marks))
	}
	if c.Marks[0].X != 4 || math.Abs(c.NowX-196) > 1e-9 {
		t.Fatalf("x range %v..%v, want the box minus padding", c.Marks[0].X, c.NowX)
	}
	if c.Marks[0].Y != 6 {
		t.Fatalf("born-hot mark at y=%v, want the top", c.Marks[0].Y)
	}
	// A reheat jumps up (smaller y) from where the decay had reached.
	before := hh.Segments[0].Samples[1].Heat
	if !(c.Marks[1].Y < c.Baseline-before/1*(c.Baseline-6)) {
		t.Fatalf("reheat mark y=%v not above the decayed curve", c.Marks[1].Y)
	}
	if got := strings.Count(c.Line, " L"); got != 6 {
		t.Fatalf("line has %d steps, want the 4 samples and the 2 reheat jumps: %s", got, c.Line)
	}
	if c.Current != hh.Current || c.NowColor != HeatColor(hh.Current) {
		t.Fatalf("now %v %s", c.Current, c.NowColor)
	}
	// Degenerate inputs draw something sane instead of NaN.
	for _, d := range []HeatHistory{
		{},
		{Now: 1, End: 1, Segments: []HeatSegment{{Clock: 5, Peak: 1}}},
		{Now: 3, Current: math.NaN(), Segments: []HeatSegment{{Peak: math.Inf(1), Samples: []HeatSample{{Clock: 1, Heat: math.NaN()}}}}},
	} {
		g := NewHeatCurve(d, 100, 30)
		if strings.Contains(g.Line, "NaN") || strings.Contains(g.Area, "Inf") || math.IsNaN(g.NowX) || math.IsNaN(g.NowY) {
			t.Fatalf("degenerate curve %q", g.Line)
		}
	}
}

func TestHeatLevelAndColor(t *testing.T) {
	t.Parallel()
	cases := []struct {
		h     float64
		level int
		color string
	}{
		{math.NaN(), 0, "#1e3a8a"},
		{-1, 0, "#1e3a8a"},
		{0, 0, "#1e3a8a"},
		{0.5, 5, "#bb5782"},
		{1, 10, "#dc2626"},
		{7, 10, "#dc2626"},
	}
	for _, c := range cases {
		if got := heatLevel(c.h); got != c.level {
			t.Errorf("heatLevel(%v) = %d, want %d", c.h, got, c.level)
		}
		if got := HeatColor(c.h); got != c.color {
			t.Errorf("HeatColor(%v) = %s, want %s", c.h, got, c.color)
		}
	}
}

func TestNewChart(t *testing.T) {
	t.Parallel()
	c := Chart{ID: "r", Unit: "requests", Labels: []string{"01-01", "01-02", "01-03"}, Series: []Series{{Name: "r", Color: "#000", Values: []float64{0, 5, 10}}}}
	g := NewChart(c, 100, 50)
	if len(g.Bars) != 3 || g.Max != "10" || g.First != "01-01" || g.Last != "01-03" {
		t.Fatalf("chart %+v", g)
	}
	if g.Bars[0].H != 0 || math.Abs(g.Bars[2].H-2*g.Bars[1].H) > 1e-9 || g.Bars[2].Y != 2 {
		t.Fatalf("bar heights %v %v %v", g.Bars[0].H, g.Bars[1].H, g.Bars[2].H)
	}
	c.Series = append(c.Series, Series{Name: "s", Values: []float64{1, 2, 3}})
	if g := NewChart(c, 100, 50); len(g.Lines) != 2 || len(g.Bars) != 0 || len(strings.Fields(g.Lines[1].Points)) != 3 {
		t.Fatalf("multi-series chart %+v", g)
	}
	if g := NewChart(Chart{}, 100, 50); len(g.Bars)+len(g.Lines) != 0 || g.Max != "0" {
		t.Fatalf("empty chart %+v", g)
	}
	for v, want := range map[float64]string{0: "0", 12: "12", 1.5: "1.5", 12345: "12k", 2.5e6: "2.5M", 3e9: "3.0G"} {
		if got := compact(v); got != want {
			t.Errorf("compact(%v) = %q, want %q", v, got, want)
		}
	}
}

func TestHeatStrip(t *testing.T) {
	t.Parallel()
	items := []Item{
		{ID: 1, Role: "user", Heat: HeatHistory{Current: 1}},
		{ID: 2, Role: "assistant", Heat: HeatHistory{Current: 0}},
	}
	_, doc := render(t, heatStrip(items))
	cells := byID(doc, "heat-cell")
	if cells.Length() != 2 {
		t.Fatalf("%d cells", cells.Length())
	}
	if cells.Eq(0).AttrOr("fill", "") != HeatColor(1) || cells.Eq(1).AttrOr("fill", "") != HeatColor(0) {
		t.Fatalf("cell colours %q %q", cells.Eq(0).AttrOr("fill", ""), cells.Eq(1).AttrOr("fill", ""))
	}
	if href := cells.Eq(1).Parent().AttrOr("href", ""); href != "#item-2" {
		t.Fatalf("cell link %q", href)
	}
	if NewHeatStrip(nil, 100) != nil {
		t.Fatal("strip for no items")
	}
}
