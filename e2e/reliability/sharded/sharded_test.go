// Package sharded is issue 21 items 2 to 4 on this machine: three
// `perpetuity serve` replicas, each owning a third of the tenants
// (PERPETUITY_SHARD) under an arena budget that holds about a third of
// them, behind Debian's nginx running the committed balancer config
// (deploy/nginx/perpetuity.conf, consistent hashing of the Perpetuity key).
// Every tenant's canary is stored and recalled through the balancer; a
// replica killed with SIGKILL mid-run hands its tenants to the others with
// no acknowledged turn lost and each replica's resident bytes within the
// budget plus one tenant; a rolling restart (SIGTERM, start again, next)
// under streaming load loses no acknowledged turn and cuts no stream
// without the dialect's error event.
package sharded

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/perpetuity/perpetuity/e2e/fakeprovider"
	"github.com/perpetuity/perpetuity/e2e/reliability/figure"
	"github.com/perpetuity/perpetuity/e2e/reliability/internal/harness"
	"github.com/perpetuity/perpetuity/e2e/rig"
	"github.com/perpetuity/perpetuity/migrations/dbtest"
)

const (
	replicas     = 3
	workers      = 6
	drainTimeout = 3 * time.Second
	streamWords  = 20
	streamPace   = 40 * time.Millisecond // a stream lasts about 0.8 s
	// One worker's streams outlast the drain (60 x 80 ms = 4.8 s): a
	// restart must cut those with the error event.
	longWords = 60
	longPace  = 80 * time.Millisecond
	minBudget = 1 << 20 // PERPETUITY_ARENA_BUDGET's floor
)

// ack is a turn whose request got a 2xx (and, streamed, its terminator).
type ack struct {
	tenant int
	tag    int
	at     time.Time
	reply  string // the whole reply when streamed
	rid    string // X-Perpetuity-Request-Id, to find the replica that served it
}

type world struct {
	t       *testing.T
	dbURL   string
	tenants []rig.Tenant
	canary  []string
	byID    map[int64]int
	cl      *client
	fleet   *fleet
	lb      *balancer
	nextTag atomic.Int64
	// probes maps a recall probe's tag to its tenant: the fake checks the
	// canary only when the live question is a probe (stored probes come
	// back in later frames).
	probes sync.Map
	long   sync.Map // tags of the streams that outlast the drain

	mu   sync.Mutex
	acks []ack
}

func (w *world) tag() int { return int(w.nextTag.Add(1)) }

func (w *world) acked(a ack) {
	w.mu.Lock()
	w.acks = append(w.acks, a)
	w.mu.Unlock()
}

func TestShardedBehindNginx(t *testing.T) {
	t.Parallel()
	began := time.Now()
	ngx := nginxBinary(t)
	n := figure.N(150, 60)
	ctx := context.Background()

	w := &world{t: t, dbURL: dbtest.New(t), byID: map[int64]int{}}
	fake := fakeprovider.New()
	fake.SetDefault(func(r fakeprovider.Recorded) fakeprovider.Reply { return w.reply(r) })
	up := httptest.NewServer(fake)
	t.Cleanup(up.Close)
	env := []string{"DATABASE_URL=" + w.dbURL, "PERPETUITY_OPENAI_BASE_URL=" + up.URL + "/v1", "PERPETUITY_ANTHROPIC_BASE_URL=" + up.URL,
		"PERPETUITY_DRAIN_TIMEOUT=" + drainTimeout.String(), "PERPETUITY_DRAIN_READY_DELAY=300ms"}

	// Tenants, each with a filler history that makes its arena a
	// measurable share of the budget's 1 MiB floor.
	w.tenants = make([]rig.Tenant, n)
	w.canary = make([]string, n)
	parallel(n, workers, func(i int) {
		w.tenants[i] = rig.CreateTenant(t, env, fmt.Sprintf("sharded-%d", i))
		w.canary[i] = fmt.Sprintf("zebra-%d-%d", i, 7919*(i+1)%10007)
	})
	for i, tn := range w.tenants {
		w.byID[tn.TenantID] = i
	}
	hc := &http.Client{Timeout: 60 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 4 * workers}}
	// One conversation of 40 messages a tenant: 352 KB resident each (the
	// calibration replica measures it), so 20 tenants pass the budget's
	// 1 MiB floor and a third of the tenants is the budget.
	const convs = 1
	seed, err := rig.Serve(t, env)
	if err != nil {
		t.Fatal(err)
	}
	var seedErr atomic.Value
	parallel(n, 4, func(i int) {
		if err := importHistory(ctx, hc, seed.URL, w.tenants[i].Key, importBody(i, convs, 40)); err != nil {
			seedErr.Store(err)
		}
	})
	if err, _ := seedErr.Load().(error); err != nil {
		t.Fatal(err)
	}
	// A replica without a budget or a share warms every tenant: its
	// arena bytes per tenant is the size one tenant takes.
	_ = seed.Cmd.Process.Kill()
	<-seed.Exited()
	perTenant := w.tenantBytes(env)
	budget := max(int64(minBudget), perTenant*int64((n+replicas-1)/replicas))
	t.Logf("%d tenants of %d conversations: %d B resident each; budget %d B (%.1f tenants)",
		n, convs, perTenant, budget, float64(budget)/float64(perTenant))

	w.fleet = &fleet{t: t, env: append(env, fmt.Sprintf("PERPETUITY_ARENA_BUDGET=%d", budget)), ports: make([]int, replicas), procs: make([]*rig.Proc, replicas)}
	for i := range replicas {
		w.fleet.ports[i] = freePort(t)
	}
	parallel(replicas, replicas, func(i int) { w.fleet.start(i) })
	w.lb = startBalancer(t, ngx, w.fleet.ports)
	w.cl = &client{hc: hc, lb: w.lb.URL}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("nginx error log:\n%s", w.lb.ErrorLog())
		}
	})

	// (1) A canary per tenant stored, then every one recalled, through the
	// balancer.
	parallel(n, workers, func(i int) {
		tag := w.tag()
		q := harness.Question(tag, fmt.Sprintf("remember: the vault code of tenant %d is %s", i, w.canary[i]))
		code, _, rid, err := w.cl.turn(ctx, w.tenants[i].Key, q)
		if err != nil || code != http.StatusOK {
			t.Errorf("tenant %d canary: %d %v", i, code, err)
			return
		}
		w.acked(ack{tenant: i, tag: tag, at: time.Now(), rid: rid})
	})
	if t.Failed() {
		t.FailNow()
	}
	if got := w.recallAll(ctx); got != n {
		t.Fatalf("recalled %d of %d canaries through the balancer", got, n)
	}
	owner := w.owners()
	spread := make([]int, replicas)
	for _, r := range owner {
		spread[r]++
	}
	t.Logf("through the balancer: %d/%d canaries recalled; tenants per replica %v", n, n, spread)
	if len(owner) != n {
		t.Fatalf("%d tenants are served by more than one replica or none (%d of %d placed): the balancer does not keep a key on one replica", n-len(owner), len(owner), n)
	}

	// (2) SIGKILL the replica with the most tenants while every tenant
	// keeps talking; its tenants must be answered by the others.
	victim := 0
	for r := range replicas {
		if spread[r] > spread[victim] {
			victim = r
		}
	}
	stop := make(chan struct{})
	var loadWG sync.WaitGroup
	var refused atomic.Int64
	for wk := range workers {
		loadWG.Go(func() {
			for k := 0; ; k++ {
				i := (wk + k*workers) % n
				select {
				case <-stop:
					return
				default:
				}
				tag := w.tag()
				code, _, rid, err := w.cl.turn(ctx, w.tenants[i].Key, harness.Question(tag, fmt.Sprintf("note %d of tenant %d", k, i)))
				if err != nil || code/100 != 2 {
					refused.Add(1)
					continue
				}
				w.acked(ack{tenant: i, tag: tag, at: time.Now(), rid: rid})
			}
		})
	}
	time.Sleep(1500 * time.Millisecond)
	before := make([]arena, replicas)
	for r := range replicas {
		before[r] = scrape(t, w.fleet.proc(r).URL)
	}
	killAt := time.Now()
	killed := w.fleet.proc(victim)
	killed.Kill()
	moved := map[int]time.Duration{}
	for deadline := killAt.Add(60 * time.Second); len(moved) < spread[victim]; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			close(stop)
			loadWG.Wait()
			t.Fatalf("%d of the killed replica's %d tenants answered within 60 s", len(moved), spread[victim])
		}
		w.mu.Lock()
		for _, a := range w.acks {
			if owner[a.tenant] == victim && a.at.After(killAt) {
				if _, ok := moved[a.tenant]; !ok {
					moved[a.tenant] = a.at.Sub(killAt)
				}
			}
		}
		w.mu.Unlock()
	}
	time.Sleep(time.Second)
	close(stop)
	loadWG.Wait()
	var lastMove time.Duration
	for _, d := range moved {
		lastMove = max(lastMove, d)
	}
	if got := w.recallAll(ctx); got != n {
		t.Fatalf("after the kill: recalled %d of %d canaries through the balancer", got, n)
	}
	var evictions int64
	var peaks []peak
	for r := range replicas {
		a := before[r]
		if r != victim {
			a = scrape(t, w.fleet.proc(r).URL)
			evictions += a.Evictions - before[r].Evictions
		}
		t.Logf("replica %d/%d: peak %d B, now %d B for %d tenants, budget %d B, loads %d, evictions %d", r+1, replicas, a.Peak, a.Bytes, a.Tenants, a.Budget, a.Loads, a.Evictions)
		if a.Budget != budget {
			t.Errorf("replica %d reports a budget of %d B, want %d", r+1, a.Budget, budget)
		}
		peaks = append(peaks, peak{fmt.Sprintf("replica %d through the kill", r+1), a.Peak})
	}
	if evictions == 0 {
		t.Errorf("the two survivors took %d tenants under a budget of %.1f each and evicted nothing: the budget was not exercised", n, float64(budget)/float64(perTenant))
	}
	t.Logf("kill -9 of replica %d (%d tenants): all answered by the others %v after the kill; %d requests refused or failed meanwhile (not acknowledged, retried)",
		victim+1, spread[victim], lastMove.Round(time.Millisecond), refused.Load())

	// (3) The killed replica back, then a rolling restart of all three
	// under streaming load.
	back := w.fleet.start(victim)
	rotation := w.inRotation(ctx, owner, victim)
	t.Logf("replica %d ready again %v after its start, back in nginx's rotation (its tenants answered by it) %v after that",
		victim+1, back.Round(time.Millisecond), rotation.Round(time.Millisecond))
	res := w.rollingRestart(ctx, owner)
	t.Logf("rolling restart: %d streams, %d finished with their terminator, %d carried the error event, %d refused before the reply (not acknowledged)",
		res.total, res.clean, res.errored, res.refused)
	for _, bad := range res.bad {
		t.Error(bad)
	}
	if res.clean == 0 || res.errored < replicas {
		t.Errorf("rolling restart: %d clean and %d cut streams, want both, at least one cut per restart", res.clean, res.errored)
	}
	for r := range replicas {
		a := scrape(t, w.fleet.proc(r).URL)
		peaks = append(peaks, peak{fmt.Sprintf("replica %d after its restart", r+1), a.Peak})
	}

	// (4) Every acknowledged turn is stored. SIGKILL may take a reply that
	// was answered but whose capture had not committed (the question is
	// stored before the provider is called): replies answered by the
	// victim in the 2 s before the kill (or read by the client after it)
	// are counted, not failed.
	w.fleet.stop(0)
	w.fleet.stop(1)
	w.fleet.stop(2)
	lost, lostReplies, window := w.checkStored(ctx, killed, killAt)
	for _, l := range lost {
		t.Error(l)
	}
	// One tenant, at the end of the run (its arena grew by the run's
	// turns): the largest any replica may pass the budget by, holding one
	// request's arena while evicting for it.
	final := w.tenantBytes(env)
	for _, p := range peaks {
		t.Logf("%s: resident bytes peaked at %d B = budget %+.1f%% (one tenant now %d B)", p.what, p.bytes, 100*float64(p.bytes-budget)/float64(budget), final)
		if p.bytes > budget+final {
			t.Errorf("%s: resident bytes peaked at %d B, past the budget %d B plus one tenant (%d B)", p.what, p.bytes, budget, final)
		}
	}
	t.Logf("%d acknowledged turns checked in PostgreSQL: %d lost; %d of the victim's replies acknowledged in the 2 s before the kill not stored (of %d there)",
		len(w.acks), len(lost), lostReplies, window)
	// The balancer's logs never carry a key, though every request had one
	// in its path (and some of them failed upstream).
	access, errs := w.lb.AccessLog(), w.lb.ErrorLog()
	if !strings.Contains(access, "upstream=127.0.0.1:") {
		t.Errorf("nginx's access log has no proxied request: %.300q", access)
	}
	for i, tn := range w.tenants {
		if strings.Contains(access, tn.Key) || strings.Contains(errs, tn.Key) {
			t.Errorf("nginx logged tenant %d's key", i)
		}
	}
	t.Logf("whole test %v", time.Since(began).Round(time.Second))
}

type peak struct {
	what  string
	bytes int64
}

// tenantBytes starts a replica without a budget or a share, which warms
// every tenant, and returns its resident bytes per tenant: what one
// tenant's arena takes (they all hold alike histories).
func (w *world) tenantBytes(env []string) int64 {
	w.t.Helper()
	p, err := rig.Serve(w.t, env)
	if err != nil {
		w.t.Fatal(err)
	}
	defer p.Kill()
	waitReady(w.t, p.URL)
	a := scrape(w.t, p.URL)
	if a.Tenants != int64(len(w.tenants)) || a.Bytes == 0 {
		w.t.Fatalf("an unbudgeted replica warmed %+v, want all %d tenants", a, len(w.tenants))
	}
	return a.Bytes / a.Tenants
}

// reply is the fake provider: a probe for tenant i answers whether the
// canary reached the provider (in the frame); a streamed turn gets its
// tagged words paced; anything else a tagged short reply.
func (w *world) reply(r fakeprovider.Recorded) fakeprovider.Reply {
	tag, _ := harness.TagOf(r.Body)
	if v, ok := w.probes.Load(tag); ok {
		if i := v.(int); strings.Contains(string(r.Body), w.canary[i]) {
			return fakeprovider.Reply{Text: harness.ReplyText(tag, "found")}
		}
		return fakeprovider.Reply{Text: harness.ReplyText(tag, "missing")}
	}
	if _, ok := w.long.Load(tag); ok && r.Stream {
		return fakeprovider.Reply{Text: harness.Words(tag, longWords), ChunkDelay: longPace}
	}
	if r.Stream {
		return fakeprovider.Reply{Text: harness.Words(tag, streamWords), ChunkDelay: streamPace}
	}
	return fakeprovider.Reply{Text: harness.ReplyText(tag, "noted")}
}

// recallAll asks every tenant for its canary in a new conversation and
// counts the answers that had it in their frame.
func (w *world) recallAll(ctx context.Context) int {
	var found atomic.Int64
	parallel(len(w.tenants), workers, func(i int) {
		tag := w.tag()
		w.probes.Store(tag, i)
		q := harness.Question(tag, fmt.Sprintf("recall-probe tenant %d: what is the vault code of tenant %d?", i, i))
		code, text, rid, err := w.cl.turn(ctx, w.tenants[i].Key, q)
		if err != nil || code != http.StatusOK {
			w.t.Errorf("tenant %d probe: %d %v %s", i, code, err, text)
			return
		}
		w.acked(ack{tenant: i, tag: tag, at: time.Now(), rid: rid})
		if strings.HasSuffix(text, "found") {
			found.Add(1)
		} else {
			w.t.Errorf("tenant %d: canary not recalled (%q)", i, text)
		}
	})
	return int(found.Load())
}

// owners maps each tenant to the one replica that served it, from the
// replicas' own access logs; a tenant seen on two is left out.
func (w *world) owners() map[int]int {
	seen := map[int][]int{}
	for r := range replicas {
		for id := range servedTenants(w.fleet.proc(r)) {
			if i, ok := w.byID[id]; ok {
				seen[i] = append(seen[i], r)
			}
		}
	}
	out := map[int]int{}
	for i, rs := range seen {
		if len(rs) == 1 {
			out[i] = rs[0]
		}
	}
	return out
}

// inRotation sends turns for one of replica r's tenants until replica r
// answers one: nginx retries a server it marked failed only after
// fail_timeout.
func (w *world) inRotation(ctx context.Context, owner map[int]int, r int) time.Duration {
	began := time.Now()
	i := ownedBy(owner, r)
	for deadline := began.Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		tag := w.tag()
		code, _, rid, err := w.cl.turn(ctx, w.tenants[i].Key, harness.Question(tag, "are you back"))
		if err != nil || code/100 != 2 {
			continue
		}
		w.acked(ack{tenant: i, tag: tag, at: time.Now(), rid: rid})
		if w.fleet.servedBy(rid) == w.fleet.proc(r) {
			return time.Since(began)
		}
	}
	w.t.Fatalf("replica %d did not get its tenants back from nginx within 30 s", r+1)
	return 0
}

// ownedBy is a tenant the balancer sends to replica r.
func ownedBy(owner map[int]int, r int) int {
	best := -1
	for i, o := range owner {
		if o == r && (best < 0 || i < best) {
			best = i
		}
	}
	return best
}

type rollResult struct {
	total, clean, errored, refused int
	bad                            []string
}

// rollingRestart streams turns from every tenant, alternating dialects,
// while each replica in turn is stopped with SIGTERM and started again.
// Worker 0's streams outlast the drain; and before each stop one such
// stream is opened for a tenant the balancer sends to that replica, so
// every restart has a stream it must cut with the error event.
func (w *world) rollingRestart(ctx context.Context, owner map[int]int) rollResult {
	var res rollResult
	var mu sync.Mutex
	run := func(i, k int, d harness.Dialect, long bool) outcome {
		tag := w.tag()
		words := streamWords
		if long {
			words = longWords
			w.long.Store(tag, true)
		}
		code, tr, rid, err := w.cl.stream(ctx, w.tenants[i].Key, d, harness.Question(tag, fmt.Sprintf("stream %d of tenant %d", k, i)))
		full := harness.Words(tag, words)
		mu.Lock()
		defer mu.Unlock()
		res.total++
		switch {
		case err != nil || code/100 != 2:
			res.refused++
			return refused
		case tr.CleanLooking() && tr.Text == full && tr.End == nil:
			res.clean++
			w.acked(ack{tenant: i, tag: tag, at: time.Now(), reply: full, rid: rid})
			return clean
		case tr.Errors > 0 && !tr.CleanAfterError:
			res.errored++
			return errored
		}
		res.bad = append(res.bad, fmt.Sprintf("tenant %d %s stream %d: %d with %+v: cut without the dialect's error event (or clean-looking but short)", i, d.Name, tag, code, tr))
		return bad
	}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	n := len(w.tenants)
	for wk := range workers {
		wg.Go(func() {
			for k := 0; ; k++ {
				select {
				case <-stop:
					return
				default:
				}
				i := (wk + k*workers) % n
				run(i, k, harness.Dialects[(wk+k)%2], wk == 0)
			}
		})
	}
	time.Sleep(time.Second)
	for r := range replicas {
		i := ownedBy(owner, r)
		got := make(chan outcome, 1)
		go func() { got <- run(i, -1, harness.Dialects[r%2], true) }()
		// Well into its reply (4.8 s), and 3.8 s from its end: the drain
		// (3 s from the signal) ends before the stream does.
		time.Sleep(time.Second)
		w.fleet.stop(r)
		if o := <-got; o != errored {
			mu.Lock()
			res.bad = append(res.bad, fmt.Sprintf("replica %d: the stream outlasting its drain (tenant %d) ended %v, want cut with the error event", r+1, i, o))
			mu.Unlock()
		}
		w.fleet.start(r)
		time.Sleep(time.Second)
	}
	close(stop)
	wg.Wait()
	return res
}

type outcome int

const (
	clean outcome = iota
	errored
	refused
	bad
)

func (o outcome) String() string {
	return [...]string{"clean", "with the error event", "refused", "cut without the error event"}[o]
}

// checkStored reads every tenant's messages and returns the acknowledged
// turns missing their question or reply (a streamed one its whole reply),
// apart from the victim's replies in the 2 s before the kill (or read
// after it), counted.
func (w *world) checkStored(ctx context.Context, killed *rig.Proc, killAt time.Time) (lost []string, lostReplies, window int) {
	byTenant := map[int][]ack{}
	for _, a := range w.acks {
		byTenant[a.tenant] = append(byTenant[a.tenant], a)
	}
	keys := make([]int, 0, len(byTenant))
	for i := range byTenant {
		keys = append(keys, i)
	}
	sort.Ints(keys)
	for _, i := range keys {
		msgs, err := rig.Stored(ctx, w.dbURL, w.tenants[i].TenantID)
		if err != nil {
			w.t.Fatal(err)
		}
		user, reply := map[int]bool{}, map[int]string{}
		for _, m := range msgs {
			tag, ok := harness.TagOf([]byte(m.Text))
			if !ok {
				continue
			}
			switch m.Role {
			case "user":
				user[tag] = true
			case "assistant":
				reply[tag] = m.Text
			}
		}
		for _, a := range byTenant[i] {
			if !user[a.tag] {
				lost = append(lost, fmt.Sprintf("tenant %d turn %d acknowledged at %s: question not stored", i, a.tag, a.at.Format(time.StampMilli)))
			}
			by := w.fleet.servedBy(a.rid)
			// A reply the client read after the kill was sent before it:
			// the client notes the time once its goroutine runs again,
			// which on a loaded machine may be after killAt. A request no
			// replica's log names was served by the victim: its log line
			// is written after the reply, and the kill can fall between
			// (the survivors stop gracefully, their logs whole).
			inWindow := (by == killed || by == nil) && killAt.Sub(a.at) < 2*time.Second
			if inWindow {
				window++
			}
			got, ok := reply[a.tag]
			switch {
			case !ok && inWindow:
				lostReplies++
			case !ok:
				lost = append(lost, fmt.Sprintf("tenant %d turn %d (%s) acknowledged at %s by %s (the kill at %s): reply not stored",
					i, a.tag, a.rid, a.at.Format(time.StampMilli), w.describe(by, killed), killAt.Format(time.StampMilli)))
			case a.reply != "" && got != a.reply:
				lost = append(lost, fmt.Sprintf("tenant %d streamed turn %d: stored reply %q, want %q", i, a.tag, got, a.reply))
			}
		}
	}
	return lost, lostReplies, window
}

func (w *world) describe(p, killed *rig.Proc) string {
	switch {
	case p == nil:
		return "no replica's log"
	case p == killed:
		return fmt.Sprintf("the killed replica (pid %d)", p.Cmd.Process.Pid)
	}
	return fmt.Sprintf("pid %d", p.Cmd.Process.Pid)
}

// parallel runs f(0..n-1) on k goroutines.
func parallel(n, k int, f func(int)) {
	var next atomic.Int64
	var wg sync.WaitGroup
	for range k {
		wg.Go(func() {
			for {
				i := int(next.Add(1)) - 1
				if i >= n {
					return
				}
				f(i)
			}
		})
	}
	wg.Wait()
}
