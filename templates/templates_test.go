package templates

import (
	"bytes"
	"context"
	"flag"
	"math"
	"os"
	"path/filepath"
	"strconv"
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
	return HeatHistory{Scale: testScale(), Tau: 800, Now: 4200, End: 4200, Current: 0.17, ColdAt: 5200,
		Projection: []HeatSample{{Clock: 4700, Heat: 0.09}, {Clock: 5200, Heat: 0.05}},
		Segments: []HeatSegment{
			{Clock: 1000, Peak: 1, Samples: []HeatSample{{Clock: 1600, Heat: 0.47}, {Clock: 2200, Heat: 0.22}}},
			{Clock: 2200, Peak: 0.85, Samples: []HeatSample{{Clock: 3100, Heat: 0.28}}},
			{Clock: 3100, Peak: 0.7, Samples: []HeatSample{{Clock: 4200, Heat: 0.17}}},
		}}
}

// testScale is the console's heat scale (web's tests hold it to memory's
// constants).
func testScale() HeatScale { return HeatScale{Warm: 0.05, Born: 1, Max: 2} }

func TestHeatCurveSVG(t *testing.T) {
	t.Parallel()
	_, doc := render(t, heatCurveSVG(Item{ID: 7, Heat: sampleHistory()}))
	if got := byID(doc, "heat-mark").Length(); got != 3 {
		t.Fatalf("%d marks, want birth and two reheats", got)
	}
	if got := byID(doc, "heat-curve").AttrOr("data-reheats", ""); got != "2" {
		t.Fatalf("data-reheats %q", got)
	}
	if got := byID(doc, "heat-curve").AttrOr("aria-label", ""); !strings.HasPrefix(got, "Heat now 0.17 (warm)") {
		t.Fatalf("aria-label %q", got)
	}
	// Readable without hovering: the axes, now, the warm line are text.
	if got := byID(doc, "heat-now-label").Text(); got != "0.17" {
		t.Fatalf("now label %q", got)
	}
	var axis []string
	byID(doc, "heat-axis-label").Each(func(_ int, s *goquery.Selection) { axis = append(axis, s.Text()) })
	if strings.Join(axis, " ") != "2 1 0.5 0.2 0.05" {
		t.Fatalf("heat axis labels %q", axis)
	}
	var clock []string
	byID(doc, "heat-clock-label").Each(func(_ int, s *goquery.Selection) { clock = append(clock, s.Text()) })
	if strings.Join(clock, "|") != "born 1,000|now 4,200" {
		t.Fatalf("clock labels %q", clock)
	}
	if byID(doc, "heat-warm-line").Length() != 1 || byID(doc, "heat-future").Length() != 1 {
		t.Fatal("no warm line or no decay ahead")
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
		Heat: HeatHistory{Scale: testScale(), Tau: 100, Now: 10, End: 11, Current: 2, Segments: []HeatSegment{{Clock: 10, Peak: 2}}}}
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
	if got := items.Eq(0).Find(`[data-testid="item-heat"]`).AttrOr("data-heat", ""); got != "2.00" {
		t.Fatalf("hot heat %q", got)
	}
	if w := items.Eq(0).Find(`[data-testid="item-heat-word"]`).Text() + items.Eq(1).Find(`[data-testid="item-heat-word"]`).Text(); w != "warmcold" {
		t.Fatalf("heat words %q", w)
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

// TestMemoryCaptionAndEmptyState: the caption names the order the list
// has, and an empty list says what to do rather than that nothing matched
// a search nobody made.
func TestMemoryCaptionAndEmptyState(t *testing.T) {
	t.Parallel()
	users := []Option{{Value: "1", Label: "ada", Selected: true}}
	it := Item{ID: 1, Role: "user", Text: "x", Heat: HeatHistory{Scale: testScale()}}
	cases := []struct {
		name string
		m    Memory
		id   string
		want string
		not  string
	}{
		{"browsing", Memory{Users: users, Items: []Item{it}}, "memory-caption", "newest first", "relevant"},
		{"searching", Memory{Users: users, Query: "zephyr", Items: []Item{it}}, "memory-caption", "most relevant first", "newest"},
		{"all users", Memory{Users: users, AllUsers: true, Items: []Item{it}}, "memory-caption", "across all users", "relevant"},
		{"nothing asked", Memory{Users: users}, "memory-empty", "Nothing is stored for this user yet", "matches"},
		{"no users", Memory{}, "memory-empty", "Connect", "matches"},
		{"nothing found", Memory{Users: users, Query: "zephyr"}, "memory-empty", "Nothing stored matches “zephyr”", "yet"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			_, doc := render(t, MemoryResults(c.m))
			got := byID(doc, c.id).Text()
			if !strings.Contains(got, c.want) || strings.Contains(got, c.not) {
				t.Fatalf("%s says %q; want %q, not %q", c.id, got, c.want, c.not)
			}
		})
	}
}

// TestHighlightIsEscapedText: marked runs are text inside <mark>; content
// that looks like markup stays text.
func TestHighlightIsEscapedText(t *testing.T) {
	t.Parallel()
	it := Item{ID: 1, Role: "user", Text: "<b>zephyr</b> & <script>x</script>", Heat: HeatHistory{Scale: testScale()},
		Parts: []TextPart{{Text: "<b>"}, {Text: "zephyr", Mark: true}, {Text: "</b> & <script>x</script>"}},
		Match: &Match{Found: []string{"zephyr"}, Missing: []string{"friday"}, Ranking: "Ranked by retrieval."}}
	out, doc := render(t, MemoryResults(Memory{Query: "zephyr friday", Items: []Item{it}}))
	if doc.Find("mark").Length() != 1 || doc.Find("mark").Text() != "zephyr" {
		t.Fatalf("marks: %d %q", doc.Find("mark").Length(), doc.Find("mark").Text())
	}
	if doc.Find("b, script").Length() != 0 || !strings.Contains(out, "&lt;script&gt;") {
		t.Fatal("stored text rendered as markup")
	}
	if got := byID(doc, "item-text").Text(); got != it.Text {
		t.Fatalf("text %q", got)
	}
	why := byID(doc, "item-why")
	if why.Is("[open]") || !strings.Contains(why.Text(), "It contains “zephyr”; not “friday”.") {
		t.Fatalf("why: open=%v %q", why.Is("[open]"), why.Text())
	}
}

func TestNewHeatCurveGeometry(t *testing.T) {
	t.Parallel()
	hh := sampleHistory()
	c := NewHeatCurve(hh, 320, 120)
	if len(c.Marks) != 3 {
		t.Fatalf("%d marks", len(c.Marks))
	}
	// x runs from birth to where it turns cold; now sits before the end.
	left := c.Left + curveInset
	if c.Marks[0].X != left || math.Abs(c.NowX-(left+(4200.0-1000)/(5200-1000)*(c.Right-left))) > 1e-9 {
		t.Fatalf("x of birth %v and now %v", c.Marks[0].X, c.NowX)
	}
	// Log scale: the born-hot mark is a newborn's place, under the top.
	wantY := c.Bottom - testScale().Pos(1)*(c.Bottom-c.Top)
	if math.Abs(c.Marks[0].Y-wantY) > 1e-9 || c.Marks[0].Y <= c.Top {
		t.Fatalf("born-hot mark at y=%v, want %v", c.Marks[0].Y, wantY)
	}
	// A reheat jumps up (smaller y) from where the decay had reached.
	before := c.Bottom - testScale().Pos(hh.Segments[0].Samples[1].Heat)*(c.Bottom-c.Top)
	if !(c.Marks[1].Y < before) {
		t.Fatalf("reheat mark y=%v not above the decayed curve at %v", c.Marks[1].Y, before)
	}
	if got := strings.Count(c.Past, " L"); got != 6 {
		t.Fatalf("line has %d steps, want the 4 samples and the 2 reheat jumps: %s", got, c.Past)
	}
	if got := strings.Count(c.Future, " L"); got != 2 {
		t.Fatalf("decay ahead has %d steps: %s", got, c.Future)
	}
	if math.Abs(c.WarmY-(c.Bottom-testScale().Pos(0.05)*(c.Bottom-c.Top))) > 1e-9 {
		t.Fatalf("warm line at %v", c.WarmY)
	}
	if c.Current != hh.Current || c.NowColor != testScale().Color(hh.Current) || !c.Warm {
		t.Fatalf("now %v %s warm=%v", c.Current, c.NowColor, c.Warm)
	}
	// Degenerate inputs draw something sane instead of NaN.
	for _, d := range []HeatHistory{
		{},
		{Now: 1, End: 1, Segments: []HeatSegment{{Clock: 5, Peak: 1}}},
		{Scale: testScale(), Now: 3, Current: math.NaN(), Segments: []HeatSegment{{Peak: math.Inf(1), Samples: []HeatSample{{Clock: 1, Heat: math.NaN()}}}}},
	} {
		g := NewHeatCurve(d, 100, 60)
		if strings.Contains(g.Past, "NaN") || strings.Contains(g.Area, "Inf") || math.IsNaN(g.NowX) || math.IsNaN(g.NowY) {
			t.Fatalf("degenerate curve %q", g.Past)
		}
	}
}

// TestHeatScaleDoesNotSaturate: heats the old linear bar drew full (0.99
// to 2) are told apart, the warm line is where the scale says, and
// colours run from cold blue to a retrieval's red.
func TestHeatScaleDoesNotSaturate(t *testing.T) {
	t.Parallel()
	s := testScale()
	prev := -1.0
	for _, h := range []float64{0.01, 0.05, 0.2, 0.99, 1, 1.2, 1.5, 2} {
		p := s.Pos(h)
		if !(p > prev) && h > 0.01 {
			t.Errorf("Pos(%v) = %v does not rise past %v", h, p, prev)
		}
		prev = p
	}
	if s.Pos(2) != 1 || s.Pos(7) != 1 || s.Pos(0) != 0 || s.Pos(math.NaN()) != 0 || s.Pos(-1) != 0 {
		t.Fatal("scale ends")
	}
	if s.Level(0.99) == s.Level(2) || s.Level(2) != 10 || s.Level(0) != 0 || s.Level(0.05) != 3 {
		t.Fatalf("levels %d %d %d %d", s.Level(0.99), s.Level(2), s.Level(0), s.Level(0.05))
	}
	for h, want := range map[float64]string{0: "#1e3a8a", 0.05: "#7c3aed", 1: "#f97316", 2: "#dc2626", math.NaN(): "#1e3a8a"} {
		if got := s.Color(h); got != want {
			t.Errorf("Color(%v) = %s, want %s", h, got, want)
		}
	}
	if (HeatScale{}).Pos(1) != 0 {
		t.Fatal("an unset scale places heat")
	}
}

func TestHeatBins(t *testing.T) {
	t.Parallel()
	o := HeatOverview{Scale: testScale(), Bins: NewHeatBins(testScale())}
	for _, h := range []float64{0, 0.01, 0.049, 0.05, 0.3, 0.99, 1, 2, 5} {
		o.Add(h)
	}
	var got []string
	for _, b := range o.Bins {
		got = append(got, b.Label+"="+itoa(b.Count))
	}
	want := "cold, below 0.05=3|0.05 to 0.2=1|0.2 to 0.5=1|0.5 to 1=2|over 1, reheated=2"
	if strings.Join(got, "|") != want || o.Total != 9 || o.Warm != 6 {
		t.Fatalf("bins %s, %d of %d warm", strings.Join(got, "|"), o.Warm, o.Total)
	}
	out, doc := render(t, heatOverview(o))
	golden(t, "heat_overview.html.golden", out)
	if byID(doc, "heat-bin").Length() != 5 || byID(doc, "heat-bin").First().AttrOr("data-count", "") != "2" {
		t.Fatalf("%d bins drawn", byID(doc, "heat-bin").Length())
	}
	if got := byID(doc, "user-heat-summary").Text(); !strings.HasPrefix(got, "6 of 9 items are warm") {
		t.Fatalf("summary %q", got)
	}
}

func TestCount(t *testing.T) {
	t.Parallel()
	for n, want := range map[int64]string{0: "0", 7: "7", 999: "999", 1000: "1,000", 21812: "21,812", 1234567: "1,234,567", -4500: "-4,500"} {
		if got := Count(n); got != want {
			t.Errorf("Count(%d) = %q, want %q", n, got, want)
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
		{ID: 1, Role: "user", Heat: HeatHistory{Current: 2}},
		{ID: 2, Role: "assistant", Heat: HeatHistory{Current: 0.99}},
		{ID: 3, Role: "user", Heat: HeatHistory{Current: 0.01}},
	}
	out, doc := render(t, heatStrip(items, testScale()))
	golden(t, "heat_strip.svg.golden", out)
	cells := byID(doc, "heat-cell")
	if cells.Length() != 3 {
		t.Fatalf("%d cells", cells.Length())
	}
	if cells.Eq(0).AttrOr("fill", "") != testScale().Color(2) || cells.Eq(2).AttrOr("fill", "") != testScale().Color(0.01) {
		t.Fatalf("cell colours %q %q", cells.Eq(0).AttrOr("fill", ""), cells.Eq(2).AttrOr("fill", ""))
	}
	// The bars say heat by height too: a retrieval's peak stands above a
	// newborn's, which the old strip drew identically.
	h := func(i int) float64 { v, _ := strconv.ParseFloat(cells.Eq(i).AttrOr("height", ""), 64); return v }
	if !(h(0) > h(1) && h(1) > h(2)) {
		t.Fatalf("bar heights %v %v %v", h(0), h(1), h(2))
	}
	if href := cells.Eq(1).Parent().AttrOr("href", ""); href != "#item-2" {
		t.Fatalf("cell link %q", href)
	}
	if got := byID(doc, "heat-strip-caption").Text(); !strings.Contains(got, "2 of 3 warm") {
		t.Fatalf("caption %q", got)
	}
	if s := NewHeatStrip(nil, testScale(), 100, 50); len(s.Bars) != 0 {
		t.Fatal("strip for no items")
	}
}

// TestRolloutProgressInWords: a running derivation shows how far it is in
// items and time, never which worker runs it.
func TestRolloutProgressInWords(t *testing.T) {
	t.Parallel()
	r := DictVersionRow{Version: 2, State: DictDeriving, Percent: 42, Derived: 1234, Total: 2940, ETA: "about 2 minutes left"}
	_, doc := render(t, RolloutCell(Page{CSRF: "tok"}, r))
	if got := byID(doc, "rollout-line").Text(); got != "42% · 1,234 of 2,940 items · about 2 minutes left" {
		t.Fatalf("progress line %q", got)
	}
	r.State = DictReady
	_, doc = render(t, RolloutCell(Page{CSRF: "tok"}, r))
	// Flip and Retire lead to their confirmation pages, not to the action.
	if byID(doc, "rollout-flip").AttrOr("href", "") != "/console/dictionaries/2/flip" || doc.Find("form").Length() != 0 {
		t.Fatal("flip acts on one click")
	}
	if byID(doc, "rollout-retire").AttrOr("href", "") != "/console/dictionaries/2/retire" {
		t.Fatal("retire acts on one click")
	}
}
