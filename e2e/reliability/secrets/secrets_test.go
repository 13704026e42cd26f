// Package secrets is issue 9, item 6: canary provider keys, a canary
// Perpetuity key (real) and a fake one are pushed through every success and
// error path of the real binary, then searched for in every place a secret
// could end up: the server's log, every response (body and headers),
// /metrics, every column of every table, the console's pages, and what the
// upstream received (Perpetuity keys only: provider keys are meant to go
// there). Each path has its own tenant and canaries, so any occurrence
// names the path that leaked it.
package secrets

import (
	"context"
	"crypto/sha256"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/perpetuity/perpetuity/e2e/reliability/figure"
	"github.com/perpetuity/perpetuity/e2e/rig"
	"github.com/perpetuity/perpetuity/memory/store"
)

// The places searched, in report order.
var placeNames = []string{"log", "responses", "metrics", "database", "console", "upstream"}

// consoleCanaries are the console's own secrets: the passwords typed into
// it and the key sign-up shows once.
type consoleCanaries struct {
	signupPassword string
	adminPassword  string
	signupKey      string // read from the sign-up page
}

func (cc consoleCanaries) needles() []needle {
	ns := needlesFor("sign-up password", cc.signupPassword, len("canary-pw-"))
	ns = append(ns, needlesFor("platform admin password", cc.adminPassword, len("canary-pw-"))...)
	if cc.signupKey != "" {
		ns = append(ns, needlesFor("key issued at sign-up", cc.signupKey, len(store.ShortPrefix(cc.signupKey)))...)
	}
	return ns
}

var keyShape = regexp.MustCompile(`ppk_[A-Za-z0-9_-]{32}`)

func TestSecretsCanaries(t *testing.T) {
	w := startWorld(t, "PERPETUITY_MAX_BODY_BYTES="+strconv.Itoa(maxBody), "PERPETUITY_KEY_RPM="+strconv.Itoa(keyRPM))
	ctx := context.Background()

	// Every failure path, each with its own tenant and canaries.
	var sets []canaries
	for _, p := range paths() {
		c := newCanaries(p.name)
		nt := rig.CreateTenant(t, w.env, "secrets "+p.name)
		c.ppk, c.tenantID = nt.Key, nt.TenantID
		p.run(w, c)
		sets = append(sets, c)
	}

	// The console: sign up (a password, and a key shown once), a platform
	// admin who enters every path's tenant and reads every page.
	cc := consoleCanaries{signupPassword: "canary-pw-" + randomTail(32), adminPassword: "canary-pw-" + randomTail(32)}
	var consolePages []page
	var signupPage page
	{
		b := newConsole(t, w.proc.URL)
		b.get("/signup")
		answer := b.post("/signup", url.Values{"team": {"Secrets team"}, "email": {"signup@secrets.test"}, "password": {cc.signupPassword}})
		if answer.status != http.StatusSeeOther {
			t.Fatalf("sign-up: status %d: %s", answer.status, truncate(answer.body, 500))
		}
		answer.path = "POST /signup (303)"
		// The key is shown once, on the welcome page the sign-up redirects
		// to, and never in the redirect itself.
		signupPage = b.get(answer.header.Get("Location"))
		signupPage.path = signupLabel
		consolePages = append(consolePages, answer, signupPage)
		cc.signupKey = keyShape.FindString(string(signupPage.body))
		if cc.signupKey == "" {
			t.Fatal("sign-up page shows no key")
		}
		consolePages = append(consolePages, b.crawl(60, "/console", "/console/keys", "/console/connect")...)
		// Signing in again must not need (or show) anything secret either.
		b2 := newConsole(t, w.proc.URL)
		b2.signIn("signup@secrets.test", cc.signupPassword)
		consolePages = append(consolePages, b2.crawl(60, "/console", "/console/keys", "/console/audit")...)
	}
	createPlatformAdmin(t, w.env, "root@secrets.test", cc.adminPassword)
	admin := newConsole(t, w.proc.URL)
	admin.signIn("root@secrets.test", cc.adminPassword)
	consolePages = append(consolePages, admin.get("/platform/tenants"))
	prefixesSeen := 0
	for _, c := range sets {
		p := admin.post("/platform/tenants/"+strconv.FormatInt(c.tenantID, 10)+"/enter", nil)
		if p.status != http.StatusSeeOther {
			t.Fatalf("enter tenant %d: status %d", c.tenantID, p.status)
		}
		pages := admin.crawl(40, "/console", "/console/keys", "/console/users", "/console/memory", "/console/audit", "/console/connect")
		for _, pg := range pages {
			if pg.path == "/console/keys" && strings.Contains(string(pg.body), store.ShortPrefix(c.ppk)) {
				prefixesSeen++ // positive control: this is that tenant's key list
			}
		}
		consolePages = append(consolePages, pages...)
		admin.get("/platform/tenants") // refresh the CSRF token for the next enter
	}

	// Give reply captures and request records, which run after the
	// response, time to land in the log and the database.
	time.Sleep(time.Second)

	// Gather the places.
	places := map[string][]chunk{}
	w.mu.Lock()
	for i, x := range w.exchanges {
		places["responses"] = append(places["responses"], chunk{label: fmt.Sprintf("%s/%s#%d", x.path, x.what, i), data: []byte(x.text())})
	}
	nExchanges := len(w.exchanges)
	w.mu.Unlock()
	metrics := w.do("metrics", call{what: "GET /metrics", method: http.MethodGet, path: "/metrics", want: 200})
	places["metrics"] = []chunk{{"metrics", metrics.body}}
	dbChunks, nTables, nValues := dumpDatabase(ctx, t, w.dbURL)
	places["database"] = dbChunks
	for _, pg := range consolePages {
		places["console"] = append(places["console"], chunk{label: pg.path, data: pg.text()})
	}
	for i, r := range w.fake.Requests() {
		var b strings.Builder
		fmt.Fprintf(&b, "%s\n", r.Dialect)
		for k, vs := range r.Header {
			fmt.Fprintf(&b, "%s: %s\n", k, strings.Join(vs, ", "))
		}
		b.Write(r.Body)
		places["upstream"] = append(places["upstream"], chunk{label: fmt.Sprintf("upstream#%d", i), data: []byte(b.String())})
	}
	logText := w.proc.Log.String()
	places["log"] = []chunk{{"stderr+stdout", []byte(logText)}}

	// Search: every path's needles in every place.
	type cell struct {
		n     int
		found []string
	}
	matrix := map[string]map[string]cell{}
	total := 0
	rows := append([]string(nil), pathNames(sets)...)
	rows = append(rows, "console")
	for _, row := range rows {
		matrix[row] = map[string]cell{}
		var ns []needle
		if row == "console" {
			ns = cc.needles()
		} else {
			ns = setByName(sets, row).needles()
		}
		for _, place := range placeNames {
			var cl cell
			for _, ch := range places[place] {
				use := ns
				switch {
				case place == "upstream":
					use = perpetuityOnly(ns) // provider keys are meant to reach the provider
				case place == "responses" && row == echoPath && strings.HasPrefix(ch.label, echoPath+"/"):
					use = perpetuityOnly(ns)
				case place == "console" && row == "console" && ch.label == signupLabel:
					use = withoutSecret(ns, "key issued at sign-up") // shown there once, by design
				}
				n, found := hits(ch.data, use)
				if n > 0 {
					cl.n += n
					cl.found = append(cl.found, fmt.Sprintf("%s in %s", strings.Join(found, ", "), ch.label))
					t.Errorf("LEAK: path %q, place %s, %s: %d occurrence(s) of %s\n…%s…", row, place, ch.label, n, strings.Join(found, ", "), excerpt(ch.data, use))
				}
			}
			matrix[row][place] = cl
			total += cl.n
		}
	}

	// Positive controls: each place was really searched where secrets
	// travel.
	controls := []struct {
		name string
		ok   bool
	}{
		{"log has access lines for /k/:key routes", strings.Contains(logText, `"route":"/k/:key/v1/chat/completions"`)},
		{"metrics count /k/:key routes", strings.Contains(string(metrics.body), `route="/k/:key/v1/chat/completions"`)},
		{"database dump holds the 2xx turns", anyContains(dbChunks, marker2xx)},
		{"console shows every path tenant's key prefix", prefixesSeen == len(sets)},
		{"sign-up page shows its key once", strings.Count(string(signupPage.body), cc.signupKey) >= 1},
		// The search itself: the needles do find a key where it is meant
		// to be (the provider keys the upstream received).
		{"the search finds the provider keys the upstream received", foundIn(places["upstream"], withoutSecret(setByName(sets, "2xx").needles(), "fake")) >= 2},
	}
	for _, c := range controls {
		if !c.ok {
			t.Errorf("positive control failed: %s", c.name)
		}
	}
	// Keys are stored hashed: each real key's SHA-256 is its row's
	// key_hash, exactly once.
	hashed := 0
	for _, c := range append(sets, canaries{ppk: cc.signupKey}) {
		h := sha256.Sum256([]byte(c.ppk))
		n, err := rig.Scalar(ctx, w.dbURL, `SELECT count(*) FROM api_keys WHERE key_hash = $1`, h[:])
		if err != nil {
			t.Fatal(err)
		}
		if n == 1 {
			hashed++
		} else {
			t.Errorf("key %s…: %d api_keys rows hold its hash, want 1", store.ShortPrefix(c.ppk), n)
		}
	}

	// The report.
	var d strings.Builder
	fmt.Fprintf(&d, "Each failure path has its own tenant, real ppk_ key, fake ppk_ key and provider keys (Bearer sk-canary-…, x-api-key sk-ant-canary-…); "+
		"searched for whole, as hex and base64, and as every 8-byte piece of the part never displayed. %d proxy exchanges, %d console pages, "+
		"%d tables (%d values) dumped as the owner role, %d upstream requests, %d log bytes. The panic path is TestSecretsPanicPath (in-process).\n\n",
		nExchanges, len(consolePages), nTables, nValues, len(places["upstream"]), len(logText))
	fmt.Fprintf(&d, "| path | %s |\n|---|%s\n", strings.Join(placeNames, " | "), strings.Repeat("--:|", len(placeNames)))
	for _, row := range rows {
		fmt.Fprintf(&d, "| %s |", row)
		for _, place := range placeNames {
			fmt.Fprintf(&d, " %d |", matrix[row][place].n)
		}
		d.WriteString("\n")
	}
	fmt.Fprintf(&d, "\nUpstream is searched for Perpetuity keys only (provider keys are forwarded by design). Stored as SHA-256 only: %d/%d real keys. "+
		"The proxy has no upstream timeout setting (a stream lasts as long as the model talks), so \"upstream timeout\" is a provider slow to its "+
		"first byte (3 s) and a client that gives up after 0.5 s. \"429 proxy rate limit\" runs with PERPETUITY_KEY_RPM=%d.", hashed, len(sets)+1, keyRPM)
	controlsOK := true
	for _, c := range controls {
		controlsOK = controlsOK && c.ok
	}
	figure.Record(t, figure.Figure{
		Item:    6,
		Name:    "Secrets canaries",
		Figure:  fmt.Sprintf("%d occurrences over %d paths × %d places", total, len(rows), len(placeNames)),
		Target:  "0 occurrences",
		Pass:    total == 0 && controlsOK && hashed == len(sets)+1,
		Details: d.String(),
	})
}

func pathNames(sets []canaries) []string {
	out := make([]string, len(sets))
	for i, c := range sets {
		out[i] = c.path
	}
	return out
}

func setByName(sets []canaries, name string) canaries {
	for _, c := range sets {
		if c.path == name {
			return c
		}
	}
	return canaries{}
}

func perpetuityOnly(ns []needle) []needle {
	var out []needle
	for _, n := range ns {
		if strings.Contains(n.secret, "Perpetuity key") {
			out = append(out, n)
		}
	}
	return out
}

func withoutSecret(ns []needle, secret string) []needle {
	var out []needle
	for _, n := range ns {
		if !strings.HasPrefix(n.secret, secret) {
			out = append(out, n)
		}
	}
	return out
}

const signupLabel = "GET /console/welcome/:id (the sign-up's key, shown once)"

func foundIn(chunks []chunk, ns []needle) int {
	n := 0
	for _, c := range chunks {
		k, _ := hits(c.data, ns)
		n += k
	}
	return n
}

func anyContains(chunks []chunk, s string) bool {
	for _, c := range chunks {
		if strings.Contains(string(c.data), s) {
			return true
		}
	}
	return false
}
