package isolation

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/perpetuity/perpetuity/e2e/fakeprovider"
	"github.com/perpetuity/perpetuity/e2e/reliability/figure"
	"github.com/perpetuity/perpetuity/e2e/rig"
	"github.com/perpetuity/perpetuity/migrations/dbtest"
)

const (
	tenantCount = 20
	workers     = 6
)

// TestTenantIsolationUnderTraffic: twenty tenants, random traffic over
// every API and console page with other tenants' ids mixed in; not one
// foreign canary anywhere, and every tenant still recalls its own.
func TestTenantIsolationUnderTraffic(t *testing.T) {
	total := figure.N(10000, 500)
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d, %d random requests", seed, total)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Minute)
	defer cancel()

	fake := fakeprovider.New()
	fake.SetDefault(func(r fakeprovider.Recorded) fakeprovider.Reply {
		if tool := r.Header.Get(hdrTool); tool != "" && !endsWithToolResult(r) {
			return fakeprovider.Reply{ToolCalls: []fakeprovider.ToolCall{{Name: tool, Arguments: r.Header.Get(hdrArgs)}}}
		}
		return fakeprovider.Reply{Text: r.Header.Get(hdrReply)}
	})
	fs := httptest.NewServer(fake)
	t.Cleanup(fs.Close)
	dbURL := dbtest.New(t)
	env := []string{"DATABASE_URL=" + dbURL, "PERPETUITY_OPENAI_BASE_URL=" + fs.URL + "/v1",
		"PERPETUITY_ANTHROPIC_BASE_URL=" + fs.URL}
	proc, err := rig.Serve(t, env)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			path := filepath.Join(os.TempDir(), fmt.Sprintf("isolation-server-%d.log", seed))
			_ = os.WriteFile(path, []byte(proc.Log.String()), 0o644)
			t.Logf("server log in %s; its tail:\n%s", path, tail(proc.Log.String(), 3000))
		}
	})
	owner, err := pgxpool.New(ctx, dbURL)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(owner.Close)

	tenants := make([]*tenant, tenantCount)
	for i := range tenants {
		tenants[i] = newTenant(i)
		tenants[i].con = newConsole(proc.URL, net.IPv4(127, 0, 0, byte(10+i)))
	}
	led := newLedger(tenants)
	d := &driver{url: proc.URL, ids: &ids{}, led: led, tenants: tenants,
		api: &http.Client{Timeout: 120 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 32}}}

	start := time.Now()
	if err := d.setUp(ctx, owner, seed); err != nil {
		t.Fatal(err)
	}
	led.upstreamRequests(fake.Requests())
	fake.Reset()
	if err := d.ids.refresh(ctx, owner); err != nil {
		t.Fatal(err)
	}
	t.Logf("set up %d tenants in %s", tenantCount, time.Since(start).Round(time.Millisecond))

	start = time.Now()
	batch := figure.N(250, 100)
	for done := 0; done < total; done += batch {
		d.run(ctx, seed+uint64(done), min(batch, total-done))
		led.upstreamRequests(fake.Requests())
		fake.Reset()
		if err := d.ids.refresh(ctx, owner); err != nil {
			t.Fatal(err)
		}
	}
	traffic := time.Since(start)

	d.final(ctx, t, env)
	led.upstreamRequests(fake.Requests())
	fake.Reset()

	report(t, led, total, traffic)
}

// setUp signs every tenant up through the console (six at a time), gives
// it keys for alice and its canary-named user, starts an integrity check
// (so reports exist to probe) and stores the vault-code fact for every
// memory user: import for bob (under a conversation id every tenant
// uses), chat through each key.
func (d *driver) setUp(ctx context.Context, owner *pgxpool.Pool, seed uint64) error {
	sem := make(chan struct{}, 6)
	errs := make(chan error, len(d.tenants))
	var wg sync.WaitGroup
	for _, tn := range d.tenants {
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			if err := d.setUpTenant(ctx, owner, tn, rand.New(rand.NewPCG(seed, uint64(tn.idx)))); err != nil {
				errs <- fmt.Errorf("tenant %d: %w", tn.idx, err)
			}
		})
	}
	wg.Wait()
	close(errs)
	return <-errs // nil when the channel is empty
}

func (d *driver) setUpTenant(ctx context.Context, owner *pgxpool.Pool, tn *tenant, r *rand.Rand) error {
	if err := tn.signUp(ctx); err != nil {
		return err
	}
	if err := owner.QueryRow(ctx, `SELECT id FROM tenants WHERE name = $1`, tn.team).Scan(&tn.id); err != nil {
		return fmt.Errorf("tenant id: %w", err)
	}
	for _, u := range []string{"alice", tn.opsUser()} {
		if err := tn.addKey(ctx, u); err != nil {
			return err
		}
	}
	tn.seeded = []string{"default", "alice", tn.opsUser(), "bob"}
	if _, err := tn.con.get(ctx, "/console/integrity"); err != nil {
		return err
	}
	if p, err := tn.con.post(ctx, "/console/integrity", nil); err != nil || p.status != http.StatusSeeOther {
		return fmt.Errorf("start integrity check: %d %v", p.status, err)
	}
	at := time.Now().Add(-90 * 24 * time.Hour).UTC()
	// Bob's notes run longer than the tool requests' 80-token frame can
	// show, so a memory_chain around one of them always has turns to
	// bring that the frame did not.
	turns := []importTurn{
		{Role: "user", Speaker: "Keeper " + tn.canary, Text: "The vault code for project Heron is " + tn.canary + ".", At: at.Format(time.RFC3339)},
		{Role: "assistant", Text: "Noted: the vault code for project Heron is " + tn.canary + ".", At: at.Add(time.Minute).Format(time.RFC3339)},
	}
	for i, topic := range []string{"the east door", "the night shift", "the spare keys", "the audit"} {
		at := at.Add(time.Duration(2+2*i) * time.Minute)
		turns = append(turns,
			importTurn{Role: "user", Speaker: "Keeper " + tn.canary, Text: "Code " + tn.canary + " also covers " + topic + ".", At: at.Format(time.RFC3339)},
			importTurn{Role: "assistant", Text: "Understood: " + tn.canary + " covers " + topic + " too.", At: at.Add(time.Minute).Format(time.RFC3339)})
	}
	body, _ := json.Marshal(importLine{Conversation: "shared-conv-1", Title: "Vault notes " + tn.canary, User: "bob", Turns: turns})
	h := http.Header{"Content-Type": {"application/x-ndjson"}}
	status, resp, err := d.send(ctx, http.MethodPost, "/k/"+tn.keys[1].value+"/perpetuity/import", h, body) // alice's key is tenant-wide
	if err != nil || status != http.StatusOK {
		return fmt.Errorf("seed import: %d %v %.300s", status, err, resp)
	}
	d.led.response(tn.idx, "seed import response", resp)
	d.led.count("seed import")
	for i := range tn.keys {
		g := gen{kind: "seed", dialect: []string{"openai", "anthropic"}[i%2], key: i + 1}
		g.model = map[string]string{"openai": "gpt-4o-mini", "anthropic": "claude-sonnet-4-5"}[g.dialect]
		if err := d.generate(ctx, r, tn, fmt.Sprintf("s%02dk%d", tn.idx, i), g); err != nil {
			return err
		}
		d.led.count("seed")
	}
	return nil
}

// run sends n random requests from the workers.
func (d *driver) run(ctx context.Context, seed uint64, n int) {
	var left atomic.Int64
	left.Store(int64(n))
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			r := rand.New(rand.NewPCG(seed, uint64(w)))
			for left.Add(-1) >= 0 {
				nonce := fmt.Sprintf("r%d-%d-%06d", seed%100000, w, r.IntN(1000000))
				kind, err := d.one(ctx, r, d.tenants[r.IntN(len(d.tenants))], nonce)
				d.led.count(kind)
				if err != nil {
					d.led.fail("%s: %v", kind, err)
				}
			}
		})
	}
	wg.Wait()
}

// one sends one random request: generation over every dialect pair (34%),
// the same greeting in every tenant (6%), recall probes (10%), memory tools
// (12%), import (5%), pass-through (6%), own console pages (14%), other
// tenants' ids in the console (13%).
func (d *driver) one(ctx context.Context, r *rand.Rand, tn *tenant, nonce string) (string, error) {
	switch n := r.IntN(100); {
	case n < 34:
		g := apiGen(r, tn)
		return g.kind, d.generate(ctx, r, tn, nonce, g)
	case n < 40:
		g := apiGen(r, tn)
		g.kind, g.greeting = "greeting shared by every tenant", true
		return g.kind, d.generate(ctx, r, tn, nonce, g)
	case n < 50:
		g := apiGen(r, tn)
		g.kind, g.recall = "recall", true
		return g.kind, d.generate(ctx, r, tn, nonce, g)
	case n < 62:
		g := d.toolGen(r, tn)
		return g.kind, d.generate(ctx, r, tn, nonce, g)
	case n < 67:
		return "import", d.importHTTP(ctx, r, tn, nonce)
	case n < 73:
		return d.passthrough(ctx, r, tn, nonce)
	case n < 87:
		return d.consoleOwn(ctx, r, tn)
	default:
		return d.consoleForeign(ctx, r, tn)
	}
}

// final checks what the traffic must not have broken: every key of every
// tenant still recalls its own vault code in both dialects (no foreign
// revoke or purge went through), each scanned memory tool still finds
// the tenant's own turns, every console still signed in and
// enabled, and the command-line export of each tenant holds its own
// canary and no other.
func (d *driver) final(ctx context.Context, t *testing.T, env []string) {
	dialects := []string{"openai", "anthropic"}
	sem := make(chan struct{}, 4)
	var wg sync.WaitGroup
	for _, tn := range d.tenants {
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			r := rand.New(rand.NewPCG(1, uint64(tn.idx)))
			for ki := range tn.keys {
				for di, dialect := range dialects {
					// The short form asks each key once, in alternating dialects.
					if !figure.Full() && (tn.idx+ki)%2 != di {
						continue
					}
					g := gen{kind: "recall final", recall: true, dialect: dialect, key: ki + 1}
					g.model = map[string]string{"openai": "gpt-4o-mini", "anthropic": "claude-sonnet-4-5"}[dialect]
					if err := d.generate(ctx, r, tn, fmt.Sprintf("f%02d-%d-%s", tn.idx, ki, dialect), g); err != nil {
						d.led.fail("final recall: %v", err)
					}
					d.led.count(g.kind)
				}
			}
			p, err := tn.con.get(ctx, "/console")
			d.led.count("console final")
			if err != nil || p.status != http.StatusOK {
				d.led.fail("tenant %d's console after the traffic: %d %v", tn.idx, p.status, err)
			} else {
				d.led.response(tn.idx, "final console", p.body)
			}
			// Each scanned tool once per tenant, asked as bob, whose notes
			// outrun the 80-token frame: the scan must have found the
			// caller's canary in every tool's results whatever the random
			// traffic drew.
			item, err := d.ids.userItem(r, tn.id, "bob")
			if err != nil {
				d.led.fail("tenant %d: no item of bob for the final tool calls: %v", tn.idx, err)
			}
			for i, call := range []struct{ tool, args string }{
				{"memory_search", `{"query":"vault code project Heron","limit":20}`},
				{"memory_reopen", `{"limit":50}`},
				{"memory_chain", fmt.Sprintf(`{"item":%d,"direction":"around","depth":5}`, item)},
			} {
				g := gen{kind: "tool final", dialect: dialects[(tn.idx+i)%2], user: "bob", tool: call.tool, args: call.args}
				g.model = map[string]string{"openai": "gpt-4o-mini", "anthropic": "claude-sonnet-4-5"}[g.dialect]
				if err := d.generate(ctx, r, tn, fmt.Sprintf("f%02d-%s", tn.idx, call.tool), g); err != nil {
					d.led.fail("final %s: %v", call.tool, err)
				}
				d.led.count(g.kind)
			}
			user := tn.seeded[r.IntN(len(tn.seeded))]
			out, err := rig.CLI(t, env, "export", "--tenant", fmt.Sprint(tn.id), "--user", user)
			d.led.count("cli export")
			if err != nil {
				d.led.fail("export tenant %d user %s: %v: %.300s", tn.idx, user, err, out)
				return
			}
			d.led.page("cli export", d.led.response(tn.idx, "cli export of "+user, out))
		})
	}
	wg.Wait()
}

func report(t *testing.T, led *ledger, total int, traffic time.Duration) {
	led.mu.Lock()
	defer led.mu.Unlock()
	for i, l := range led.leaks {
		if i == 20 {
			t.Errorf("... and %d more leaks", len(led.leaks)-20)
			break
		}
		t.Errorf("LEAK: %s", l)
	}
	for i, f := range led.failures {
		if i == 20 {
			t.Errorf("... and %d more failures", len(led.failures)-20)
			break
		}
		t.Errorf("failure: %s", f)
	}
	// Own recall: every final probe, and at least one random probe per
	// tenant that got any.
	var finalTried, finalHit, randTried, randHit int
	for idx := range led.tenants {
		c := led.recall["recall final"][idx]
		finalTried, finalHit = finalTried+c[0], finalHit+c[1]
		if c[0] == 0 || c[1] != c[0] {
			t.Errorf("tenant %d recalled its own vault code in %d of %d final probes", idx, c[1], c[0])
		}
		rc := led.recall["recall"][idx]
		randTried, randHit = randTried+rc[0], randHit+rc[1]
	}
	for kind, c := range led.ownPages {
		if c[1] != c[0] {
			t.Errorf("%s showed the tenant's own canary in %d of %d reads", kind, c[1], c[0])
		}
	}
	for _, tool := range []string{"memory_search", "memory_reopen", "memory_chain"} {
		if led.ownTool[tool] == 0 {
			t.Errorf("no %s result carried the caller's own canary: the tool scan saw nothing to find", tool)
		}
	}
	if led.toolResults == 0 || led.upstream == 0 {
		t.Errorf("scanned %d upstream requests and %d tool results", led.upstream, led.toolResults)
	}
	pass := len(led.leaks) == 0 && !t.Failed()
	figure.Record(t, figure.Figure{
		Item: 5, Name: "Tenant isolation (traffic)",
		Figure: fmt.Sprintf("%d tenants, %d requests (%d random) over %d APIs/pages, %d foreign canaries in %d responses, %d upstream requests, %d tool results",
			tenantCount, led.requests, total, len(led.kinds), len(led.leaks), led.responses, led.upstream, led.toolResults),
		Target: "0 foreign canaries anywhere; every tenant recalls its own canary",
		Pass:   pass,
		Details: fmt.Sprintf("One server, %d tenants signed up through the console (each from its own loopback address), sharing memory user names "+
			"(alice, bob, carol), conversation ids and vocabulary; only each tenant's canary differs, and it is in every turn, key name, "+
			"speaker and one user name of the tenant. Random traffic from %d workers in %s. Scanned for any other tenant's canary: every "+
			"API, SSE and import response, every console page and export (CLI and console), every request the fake provider received "+
			"(the frame built for each tenant) and every memory tool result (chain and search also aimed at other tenants' item and "+
			"conversation ids). Console probes with other tenants' ids (read, export, revoke, purge, disable, role, new key) must answer "+
			"403/404. Own recall: %d/%d final probes (every key, both dialects), %d/%d random probes; own canary in tool results: %v. "+
			"Failures other than leaks: %d. Requests by kind: %s.",
			tenantCount, workers, traffic.Round(time.Second), finalHit, finalTried, randHit, randTried, led.ownTool, len(led.failures), kindsLocked(led)),
	})
}

func kindsLocked(l *ledger) string {
	type kc struct {
		k string
		n int
	}
	var ks []kc
	for k, n := range l.kinds {
		ks = append(ks, kc{k, n})
	}
	sort.Slice(ks, func(i, j int) bool { return ks[i].n > ks[j].n || ks[i].n == ks[j].n && ks[i].k < ks[j].k })
	var b strings.Builder
	for i, x := range ks {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "%s %d", x.k, x.n)
	}
	return b.String()
}

func tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[len(s)-n:]
}
