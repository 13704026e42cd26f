package edge

import (
	"bufio"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/perpetuity/perpetuity/e2e/reliability/figure"
	"github.com/perpetuity/perpetuity/e2e/reliability/internal/harness"
)

const (
	// hugeMethod is the size of each random method: the finding's 500 KB,
	// within net/http's 1 MiB header limit.
	hugeMethod = 500 << 10
	hugePath   = 64 << 10
	// The bounds: the label values a request can make are a fixed set, so
	// /metrics may only grow by the few series the attack's statuses and
	// routes add, and each request by one access-log line.
	maxMetricsGrowth = 32 << 10
	maxLogPerRequest = 1 << 10
	maxLogLine       = 2 << 10
	maxMethodValues  = 8 // GET HEAD POST PUT PATCH DELETE OPTIONS other
	maxRouteLabel    = 64
	maxAnswerBytes   = 4 << 10
)

var (
	methodLabel = regexp.MustCompile(`method="([^"]*)"`)
	routeLabel  = regexp.MustCompile(`route="([^"]*)"`)
)

// TestHugeMethodsAndPaths is finding 2: any method string became a
// Prometheus label value and a log field, so 400 requests with 500 KB
// random methods grew /metrics to 201 MB per scrape.
func TestHugeMethodsAndPaths(t *testing.T) {
	t.Parallel()
	s := harness.Start(t)
	n := figure.N(400, 40)
	host := strings.TrimPrefix(s.URL, "http://")
	rng := rand.New(rand.NewPCG(2, 15))

	// A few ordinary requests first, so the baseline has the series a
	// working server has.
	for _, p := range []string{"/healthz", "/readyz", "/signin", "/nope"} {
		if _, _, err := rawRequest(host, "GET", p); err != nil {
			t.Fatal(err)
		}
	}
	before := scrape(t, s.URL)
	logBefore := len(s.Proc.Log.String())

	statuses := map[int]int{}
	biggestAnswer, relayedN := 0, 0
	start := time.Now()
	for i := range n {
		method, path, relayed := attackShape(rng, i, s.Key)
		status, size, err := rawRequest(host, method, path)
		if err != nil {
			t.Fatalf("request %d (method %d bytes, path %d bytes): %v", i, len(method), len(path), err)
		}
		statuses[status]++
		if relayed {
			// The provider's own answer, relayed as it came (OpenAI's 404
			// quotes the path too); only the proxy's answers are bounded.
			relayedN++
			continue
		}
		biggestAnswer = max(biggestAnswer, size)
	}
	took := time.Since(start)
	// The access log line is written as the response ends; give the last
	// one a moment to reach the pipe.
	time.Sleep(200 * time.Millisecond)
	after := scrape(t, s.URL)
	log := s.Proc.Log.String()
	logGrowth := len(log) - logBefore
	longestLine := 0
	for line := range strings.SplitSeq(log[logBefore:], "\n") {
		longestLine = max(longestLine, len(line))
	}

	badRoutes := 0
	for r := range after.routes {
		if len(r) > maxRouteLabel {
			badRoutes++
		}
	}
	growth := after.bytes - before.bytes
	pass := growth <= maxMetricsGrowth && len(after.methods) <= maxMethodValues && badRoutes == 0 &&
		logGrowth <= n*maxLogPerRequest && longestLine <= maxLogLine && biggestAnswer <= maxAnswerBytes
	figure.Record(t, figure.Figure{
		Item: 102, Name: "Huge random methods and paths",
		Figure: fmt.Sprintf("%d requests with %d KB random methods or %d KB random paths: /metrics %d -> %d bytes per scrape (+%d), %d distinct method label values %v, %d distinct route label values (longest %d bytes); log +%d bytes (%d per request, longest line %d bytes); largest answer of the server's own %d bytes (%d pass-through answers from the provider not counted); statuses %s; %.1f s",
			n, hugeMethod>>10, hugePath>>10, before.bytes, after.bytes, growth, len(after.methods), shortLabels(after.methods), len(after.routes), longest(after.routes),
			logGrowth, logGrowth/n, longestLine, biggestAnswer, relayedN, statusLine(statuses), took.Seconds()),
		Target: fmt.Sprintf("/metrics grows <= %d KB; <= %d method label values; route labels <= %d bytes; log <= %d bytes per request, lines <= %d bytes; answers <= %d bytes",
			maxMetricsGrowth>>10, maxMethodValues, maxRouteLabel, maxLogPerRequest, maxLogLine, maxAnswerBytes),
		Pass: pass,
		Details: "The real binary. Each request is written on a raw connection: three in four carry a method of random capital letters " +
			"(a valid HTTP token, so net/http accepts it) to /healthz, a chat route, a pass-through route with a random path, or a random path; " +
			"one in four a standard method with a random path under the key's pass-through route or outside every route. " +
			"/metrics is scraped before and after; the log is the process's standard error and output. " +
			"Pass-through requests reach the fake provider, whose 404 quotes the path as OpenAI's does; those answers are the provider's and are not bounded here.",
	})
	if growth > maxMetricsGrowth {
		t.Errorf("/metrics grew by %d bytes (%d -> %d), want <= %d", growth, before.bytes, after.bytes, maxMetricsGrowth)
	}
	if len(after.methods) > maxMethodValues {
		t.Errorf("%d distinct method label values, want <= %d", len(after.methods), maxMethodValues)
	}
	if badRoutes > 0 {
		t.Errorf("%d route label values longer than %d bytes", badRoutes, maxRouteLabel)
	}
	if logGrowth > n*maxLogPerRequest || longestLine > maxLogLine {
		t.Errorf("log grew by %d bytes over %d requests, longest line %d bytes; want <= %d per request, lines <= %d",
			logGrowth, n, longestLine, maxLogPerRequest, maxLogLine)
	}
	if biggestAnswer > maxAnswerBytes {
		t.Errorf("an answer of %d bytes from the server: the request's method or path came back", biggestAnswer)
	}
}

// attackShape is request i's method and path, and whether the request is
// one the pass-through relays to the provider.
func attackShape(rng *rand.Rand, i int, key string) (method, path string, relayed bool) {
	paths := []string{"/healthz", "/k/" + key + "/v1/chat/completions", "/k/" + key + "/v1/" + randomWord(rng, 64), "/" + randomWord(rng, 64)}
	if i%4 != 3 {
		return randomWord(rng, hugeMethod), paths[i%len(paths)], false
	}
	standard := []string{http.MethodGet, http.MethodPost, http.MethodDelete}
	p := "/" + randomWord(rng, hugePath)
	if i%8 == 7 {
		p, relayed = "/k/"+key+"/v1/"+randomWord(rng, hugePath), true
	}
	return standard[rng.IntN(len(standard))], p, relayed
}

func randomWord(rng *rand.Rand, n int) string {
	b := make([]byte, n)
	for i := range b {
		b[i] = 'A' + byte(rng.IntN(26))
	}
	return string(b)
}

// rawRequest sends one request without a body on a connection of its own
// and returns the status and the size of the whole answer.
func rawRequest(host, method, path string) (int, int, error) {
	conn, err := net.DialTimeout("tcp", host, 5*time.Second)
	if err != nil {
		return 0, 0, err
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(30 * time.Second))
	if _, err := fmt.Fprintf(conn, "%s %s HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n\r\n", method, path, host); err != nil {
		return 0, 0, err
	}
	b, err := io.ReadAll(conn)
	if err != nil && len(b) == 0 {
		return 0, 0, err
	}
	resp, err := http.ReadResponse(bufio.NewReader(strings.NewReader(string(b))), nil)
	if err != nil {
		return 0, len(b), fmt.Errorf("answer %q...: %w", b[:min(len(b), 80)], err)
	}
	resp.Body.Close()
	return resp.StatusCode, len(b), nil
}

// scraped is one /metrics scrape: its size and the values of the request
// counter's method and route labels.
type scraped struct {
	bytes           int
	methods, routes map[string]bool
}

func scrape(t *testing.T, url string) scraped {
	t.Helper()
	c := &http.Client{Timeout: 60 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	resp, err := c.Get(url + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	s := scraped{bytes: len(b), methods: map[string]bool{}, routes: map[string]bool{}}
	for line := range strings.SplitSeq(string(b), "\n") {
		if !strings.HasPrefix(line, "perpetuity_http_requests_total{") {
			continue
		}
		if m := methodLabel.FindStringSubmatch(line); m != nil {
			s.methods[m[1]] = true
		}
		if m := routeLabel.FindStringSubmatch(line); m != nil {
			s.routes[m[1]] = true
		}
	}
	return s
}

// shortLabels lists label values, each cut to 12 bytes.
func shortLabels(set map[string]bool) []string {
	var out []string
	for v := range set {
		if len(v) > 12 {
			v = v[:12] + "..."
		}
		out = append(out, v)
	}
	sort.Strings(out)
	if len(out) > 10 {
		out = append(out[:10], fmt.Sprintf("(%d more)", len(out)-10))
	}
	return out
}

func longest(set map[string]bool) int {
	n := 0
	for v := range set {
		n = max(n, len(v))
	}
	return n
}

func statusLine(m map[int]int) string {
	var codes []int
	for c := range m {
		codes = append(codes, c)
	}
	sort.Ints(codes)
	var parts []string
	for _, c := range codes {
		parts = append(parts, fmt.Sprintf("%d x%d", c, m[c]))
	}
	return strings.Join(parts, ", ")
}
