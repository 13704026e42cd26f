// Package dbrestart is issue 9's item 2: PostgreSQL crashes (stopped in
// immediate mode) under a serving process that streams continuously, and
// comes back. The test owns its cluster (rig.Cluster), so stopping it
// disturbs no other test.
package dbrestart

import (
	"context"
	"encoding/json"
	"fmt"
	mrand "math/rand/v2"
	"net/http"
	"net/http/httptest"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/perpetuity/perpetuity/e2e/fakeprovider"
	"github.com/perpetuity/perpetuity/e2e/reliability/crash"
	"github.com/perpetuity/perpetuity/e2e/reliability/figure"
	"github.com/perpetuity/perpetuity/e2e/rig"
)

const (
	clients = 4
	// recoverWithin is how long after the database accepts connections
	// again the service must acknowledge a new turn, by itself.
	recoverWithin = 30 * time.Second
	// retryPause keeps a refused client from spinning through an outage.
	retryPause = 20 * time.Millisecond
)

// outage is one immediate stop and start of the database.
type outage struct {
	down    time.Time // pg_ctl stop -m immediate issued
	stopped time.Time // ... and returned: the server is gone
	start   time.Time // pg_ctl start issued
	// ready is when the database first accepted a connection and answered
	// a query (polled every few milliseconds: pg_ctl -w itself polls at
	// 100 ms, so its return lags the server).
	ready time.Time
	// recovered: a turn sent after stopped was acknowledged (its capture
	// necessarily ran after ready); recovery is from ready to that turn's
	// response headers, the first such.
	recovered bool
	recovery  time.Duration
}

// slowReply streams the marker's reply over 100-300 ms, so outages land
// mid-stream.
func slowReply(r fakeprovider.Recorded) fakeprovider.Reply {
	rep := crash.Reply(r)
	rep.ChunkDelay = time.Duration(10+mrand.IntN(20)) * time.Millisecond
	return rep
}

// TestDatabaseRestart (issue 9, item 2): clients stream continuously while
// the database is stopped in immediate mode and started again after a
// random pause, N times. No acknowledged turn is lost, every refusal
// during an outage is a 503 in the caller's dialect, never a success that
// was not stored, and the same server process recovers by itself.
func TestDatabaseRestart(t *testing.T) {
	t.Parallel() // its own cluster: only TestUnsafeDurabilityWarns shares the machine
	n := figure.N(20, 2)
	ctx := context.Background()
	cl := rig.NewCluster(t)
	if err := cl.Start(); err != nil {
		t.Fatal(err)
	}
	dbURL := cl.URL("postgres")
	fake := fakeprovider.New()
	fake.SetDefault(slowReply)
	up := httptest.NewServer(fake)
	t.Cleanup(up.Close)
	env := []string{"DATABASE_URL=" + dbURL, "PERPETUITY_OPENAI_BASE_URL=" + up.URL + "/v1", "PERPETUITY_ANTHROPIC_BASE_URL=" + up.URL}
	if out, err := rig.CLI(t, env, "migrate", "up"); err != nil {
		t.Fatalf("migrate: %v\n%s", err, out)
	}
	tn := rig.CreateTenant(t, env, "dbrestart")
	p, err := rig.Serve(t, env)
	if err != nil {
		t.Fatal(err)
	}
	base := p.URL + "/k/" + tn.Key
	hc := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 2 * clients}, Timeout: time.Minute}

	var ledger crash.Ledger
	var lastAck atomic.Int64 // unix nanos of the latest acknowledged turn's headers
	var stopping atomic.Bool
	var wg sync.WaitGroup
	for c := range clients {
		cli := &crash.Client{Base: base, HTTP: hc, Conversation: fmt.Sprintf("dbrestart-%d", c)}
		wg.Go(func() {
			for i := 0; !stopping.Load(); i++ {
				m := crash.NewMarker()
				// Three clients stream in alternating dialects; the fourth mixes all four kinds.
				k := []crash.Kind{crash.OpenAIStream, crash.AnthropicStream}[i%2]
				if c == clients-1 {
					k = crash.RandomKind()
				}
				tu := &crash.Turn{Client: c, Kind: k, Marker: m, Text: crash.UserText(c, i, m)}
				cli.Send(ctx, tu)
				ledger.Add(tu)
				if tu.Acked {
					lastAck.Store(tu.Headers.UnixNano())
				} else {
					time.Sleep(retryPause)
				}
			}
		})
	}
	stopClients := func() {
		if !stopping.Swap(true) {
			wg.Wait()
		}
	}
	t.Cleanup(stopClients)

	waitAck := func(after time.Time) bool {
		deadline := time.Now().Add(recoverWithin)
		for time.Now().Before(deadline) {
			if lastAck.Load() > after.UnixNano() {
				return true
			}
			time.Sleep(5 * time.Millisecond)
		}
		return false
	}
	if !waitAck(time.Time{}) {
		t.Fatalf("no turn acknowledged before the first outage\n%s", p.Log.String())
	}
	var outs []outage
	for i := range n {
		time.Sleep(time.Duration(300+mrand.IntN(500)) * time.Millisecond) // healthy traffic
		var o outage
		o.down = time.Now()
		if err := cl.StopImmediate(); err != nil {
			t.Fatal(err)
		}
		o.stopped = time.Now()
		time.Sleep(time.Duration(200+mrand.IntN(800)) * time.Millisecond)
		o.start = time.Now()
		ready := make(chan time.Time, 1)
		go func() { ready <- firstAnswer(dbURL) }()
		if err := cl.Start(); err != nil {
			t.Fatal(err)
		}
		if o.ready = <-ready; o.ready.IsZero() {
			t.Fatalf("outage %d: pg_ctl start returned but the database answers no query", i)
		}
		outs = append(outs, o)
		if !waitAck(o.ready) {
			t.Errorf("outage %d: no turn acknowledged within %v of the database accepting connections again", i, recoverWithin)
			break
		}
	}
	time.Sleep(300 * time.Millisecond) // traffic after the last recovery
	stopClients()
	exited := false
	select {
	case <-p.Exited():
		exited = true
	default:
	}

	turns := ledger.Turns()
	for i := range outs {
		recovery(turns, &outs[i])
	}
	st := classify(turns, outs)
	a, err := crash.AuditTurns(ctx, dbURL, tn.TenantID, turns)
	if err != nil {
		t.Fatal(err)
	}
	part, err := crash.CheckPartial(ctx, dbURL, tn.TenantID)
	if err != nil {
		t.Fatal(err)
	}
	items, violations, integrityOut, err := crash.Integrity(t, env, tn.TenantID)
	if err != nil {
		t.Fatal(err)
	}
	var recs, starts []time.Duration
	recovered := 0
	for _, o := range outs {
		starts = append(starts, o.ready.Sub(o.start))
		if o.recovered {
			recovered++
			recs = append(recs, o.recovery)
		}
	}
	warned := strings.Contains(p.Log.String(), "DURABILITY WARNING")

	pass := len(a.Missing) == 0 && part.Total() == 0 && violations == 0 && st.wrong == 0 && st.transport == 0 &&
		st.silentCut == 0 && st.misanswered == 0 && a.RepliesPartial == 0 && recovered == n && !exited && !warned && st.refusedInOutage > 0 && !t.Failed()
	fig := figure.Figure{
		Item: 2, Name: "Database restart",
		Figure: fmt.Sprintf("%d immediate stops, %d acknowledged turns, %d missing, %d partial, %d integrity violations; "+
			"%d refusals during outages, all 503 in dialect (%d otherwise); recovered %d of %d without restart, "+
			"database start to first acknowledged capture p50 %v, max %v",
			n, a.Acked, len(a.Missing), part.Total(), violations, st.refusedInOutage, st.wrong, recovered, n,
			ms(quantile(recs, 0.5)), ms(quantile(recs, 1))),
		Target: "0 acknowledged turns lost, only 503 dialect errors during outages, the running process recovers by itself",
		Pass:   pass,
		Details: fmt.Sprintf("A private PostgreSQL cluster (rig.Cluster, fsync and synchronous_commit on) under one `perpetuity serve` "+
			"process, never restarted. %d clients send turns back to back (three streaming, alternating OpenAI chat and Anthropic messages, one "+
			"mixing streaming and JSON in both dialects; the fake provider streams each reply over 100-300 ms, so stops land mid-stream). "+
			"%d times, after 300-800 ms of healthy traffic, `pg_ctl stop -m immediate`, a random 200-1000 ms pause, then `pg_ctl start` "+
			"(from start to the database answering a query, crash recovery included: p50 %v, max %v). %d turns sent, %d acknowledged (2xx, complete reply, the dialect's final event). "+
			"Statuses: %s. Every non-2xx answer must be 503 with the dialect's error body: %d were not; %d transport errors (must be 0); "+
			"%d answers began 2xx and ended with an in-band error event, %d were cut silently and %d answered another turn's question "+
			"(both must be 0). Every acknowledged turn's user "+
			"message is looked up in the database afterwards: %d missing, %d stored twice, %d unknown; %d of %d acknowledged replies stored "+
			"whole (replies finished during an outage cannot be captured: they are logged and lost, the turn itself is kept), %d stored "+
			"cut short or flagged interrupted (must be 0). Partial state "+
			"from the rows: %s. `perpetuity integrity` on %d items: %d violations. Recovery: the time from the database first answering a "+
			"query again (polled every 2 ms) to the response headers of the first acknowledged turn sent after the stop (its capture "+
			"necessarily ran after the database was back), p50 %v, max %v over the %d outages that recovered; the process %s. Its log %s "+
			"DURABILITY WARNING (expected none on this cluster).",
			clients, n, ms(quantile(starts, 0.5)), ms(quantile(starts, 1)), a.Sent, a.Acked, st.statuses(), st.wrong, st.transport,
			st.inBand, st.silentCut, st.misanswered, len(a.Missing), a.Duplicates, a.Unknown, a.RepliesStored, a.Acked, a.RepliesPartial, part, items, violations,
			ms(quantile(recs, 0.5)), ms(quantile(recs, 1)), recovered, map[bool]string{true: "had exited", false: "kept running"}[exited],
			map[bool]string{true: "has a", false: "has no"}[warned]),
	}
	figure.Record(t, fig)
	t.Log(fig.Details)
	for _, m := range a.Missing {
		t.Errorf("acknowledged turn not stored: client %d %s %q (sent %s)", m.Client, m.Kind, m.Text, m.Sent.Format(time.RFC3339Nano))
	}
	for _, w := range st.wrongTurns {
		t.Errorf("refusal not a 503 in the dialect: %s status %d body %s (sent %s)", w.Kind, w.Status, w.Body, w.Sent.Format(time.RFC3339Nano))
	}
	if st.transport != 0 {
		t.Errorf("%d turns got no HTTP answer at all, e.g. %v", st.transport, st.transportErr)
	}
	for _, c := range a.CutReplies {
		t.Errorf("acknowledged turn whose stored reply is not whole: %s", c)
	}
	if st.misanswered != 0 {
		t.Errorf("%d complete replies answered another turn's question", st.misanswered)
	}
	if st.silentCut != 0 {
		t.Errorf("%d 2xx answers were cut without an error event, e.g. %v", st.silentCut, st.cutErr)
	}
	if st.refusedInOutage == 0 {
		t.Errorf("no request was refused during %d outages: the outages missed the traffic", n)
	}
	if part.Total() != 0 {
		t.Errorf("partial state: %s", part)
	}
	if violations != 0 {
		t.Errorf("integrity: %d violations:\n%s", violations, integrityOut)
	}
	if a.Duplicates != 0 || a.Unknown != 0 {
		t.Errorf("%d user turns stored twice, %d stored that no client sent", a.Duplicates, a.Unknown)
	}
	if exited {
		t.Errorf("the server exited:\n%s", p.Log.String())
	}
	if warned {
		t.Error("durability warning on a cluster with fsync and synchronous_commit on")
	}
}

// stats classifies every answer the clients got.
type stats struct {
	byStatus        map[int]int
	refusedInOutage int // 503 dialect errors whose request overlapped an outage
	wrong           int // non-2xx answers that are not a 503 dialect error
	wrongTurns      []*crash.Turn
	transport       int // no HTTP answer
	transportErr    error
	inBand          int // 2xx, then an in-band error event
	misanswered     int // 2xx, complete, but the reply to another turn
	silentCut       int // 2xx, then neither the final event nor an error
	cutErr          error
}

func classify(turns []*crash.Turn, outs []outage) stats {
	st := stats{byStatus: map[int]int{}}
	for _, t := range turns {
		st.byStatus[t.Status]++
		switch {
		case t.Status == 0:
			st.transport++
			st.transportErr = t.Err
		case t.Status/100 == 2 && t.Acked:
		case t.Status/100 == 2 && t.Misanswered:
			st.misanswered++
		case t.Status/100 == 2 && t.Err != nil && strings.Contains(t.Err.Error(), "in-band error"):
			st.inBand++
		case t.Status/100 == 2:
			st.silentCut++
			st.cutErr = t.Err
		case t.Status == http.StatusServiceUnavailable && crash.DialectError(t.Kind, t.Body):
			if overlaps(t, outs) {
				st.refusedInOutage++
			}
		default:
			st.wrong++
			if len(st.wrongTurns) < 10 {
				st.wrongTurns = append(st.wrongTurns, t)
			}
		}
	}
	return st
}

func (st stats) statuses() string {
	codes := make([]int, 0, len(st.byStatus))
	for c := range st.byStatus {
		codes = append(codes, c)
	}
	sort.Ints(codes)
	var parts []string
	for _, c := range codes {
		name := fmt.Sprint(c)
		if c == 0 {
			name = "no answer"
		}
		parts = append(parts, fmt.Sprintf("%s x%d", name, st.byStatus[c]))
	}
	return strings.Join(parts, ", ")
}

// overlaps reports whether the turn ran while the database was down or
// coming back (between the stop and the first acknowledged capture).
func overlaps(t *crash.Turn, outs []outage) bool {
	for _, o := range outs {
		back := o.ready.Add(recoverWithin)
		if o.recovered {
			back = o.ready.Add(o.recovery)
		}
		if t.Sent.Before(back) && t.Done.After(o.down) {
			return true
		}
	}
	return false
}

// recovery is the time from the database accepting connections to the
// headers of the first acknowledged turn sent after the stop.
func recovery(turns []*crash.Turn, o *outage) {
	var best time.Time
	for _, t := range turns {
		if t.Acked && !t.Sent.Before(o.stopped) && (best.IsZero() || t.Headers.Before(best)) {
			best = t.Headers
		}
	}
	if !best.IsZero() {
		// The poll may see the database a few milliseconds after the
		// server did: never below 0.
		o.recovered, o.recovery = true, max(0, best.Sub(o.ready))
	}
}

// firstAnswer polls the database until it answers a query and returns
// when it first did; zero after a minute of silence.
func firstAnswer(dbURL string) time.Time {
	deadline := time.Now().Add(time.Minute)
	for time.Now().Before(deadline) {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		conn, err := pgx.Connect(ctx, dbURL)
		if err == nil {
			err = conn.Ping(ctx)
			conn.Close(ctx)
		}
		cancel()
		if err == nil {
			return time.Now()
		}
		time.Sleep(2 * time.Millisecond)
	}
	return time.Time{}
}

func quantile(ds []time.Duration, q float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[int(q*float64(len(s)-1))]
}

func ms(d time.Duration) string { return d.Round(time.Millisecond).String() }

// TestUnsafeDurabilityWarns (issue 9, item 2): a database that may lose
// acknowledged commits in a crash (fsync=off, synchronous_commit=off) is
// named loudly at start-up, one ERROR line per setting.
func TestUnsafeDurabilityWarns(t *testing.T) {
	t.Parallel()
	cl := rig.NewCluster(t, "fsync=off", "synchronous_commit=off")
	if err := cl.Start(); err != nil {
		t.Fatal(err)
	}
	fake := httptest.NewServer(fakeprovider.New())
	t.Cleanup(fake.Close)
	env := []string{"DATABASE_URL=" + cl.URL("postgres"), "PERPETUITY_OPENAI_BASE_URL=" + fake.URL + "/v1", "PERPETUITY_ANTHROPIC_BASE_URL=" + fake.URL}
	p, err := rig.Serve(t, env)
	if err != nil {
		t.Fatal(err)
	}
	warned := map[string]bool{}
	for _, line := range strings.Split(p.Log.String(), "\n") {
		var rec struct {
			Level, Msg, Setting, Value string
		}
		if json.Unmarshal([]byte(line), &rec) != nil || !strings.Contains(rec.Msg, "DURABILITY WARNING") {
			continue
		}
		if rec.Level == "ERROR" && rec.Value == "off" && strings.Contains(rec.Msg, rec.Setting+"=off") {
			warned[rec.Setting] = true
		}
	}
	resp, err := http.Get(p.URL + "/healthz")
	serving := err == nil && resp.StatusCode == http.StatusOK
	if resp != nil {
		resp.Body.Close()
	}
	pass := warned["fsync"] && warned["synchronous_commit"]
	figure.Record(t, figure.Figure{
		Item: 2, Name: "Database restart: unsafe durability settings",
		Figure: fmt.Sprintf("start-up against fsync=off, synchronous_commit=off: ERROR \"DURABILITY WARNING\" for fsync %v, for synchronous_commit %v; serving %v",
			warned["fsync"], warned["synchronous_commit"], serving),
		Target: "start-up refuses or warns loudly, naming each unsafe setting",
		Pass:   pass,
		Details: "A private cluster started with -c fsync=off -c synchronous_commit=off; `perpetuity serve` against it; its JSON log is read for " +
			"an ERROR-level record whose message carries DURABILITY WARNING and <setting>=off, with the setting and value as fields. The " +
			"current behaviour is to warn and serve (app/serve.go warnDurability), not to refuse. TestDatabaseRestart checks the converse: no " +
			"such line on a cluster with both settings on.",
	})
	if !pass {
		t.Errorf("start-up did not warn for both settings (fsync %v, synchronous_commit %v):\n%s", warned["fsync"], warned["synchronous_commit"], p.Log.String())
	}
}
