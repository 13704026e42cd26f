package crash

import (
	"context"
	"fmt"
	mrand "math/rand/v2"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/perpetuity/perpetuity/e2e/fakeprovider"
	"github.com/perpetuity/perpetuity/e2e/rig"
)

// clients is how many harnesses talk to the server at once (2 cores).
const clients = 4

// maxKillDelay bounds the random time a warm server keeps serving the
// clients before its SIGKILL.
const maxKillDelay = 300 * time.Millisecond

// firstTurnTimeout is how long a restarted server may take to acknowledge
// its first turn (start-up, dictionaries, arena warm-up included).
const firstTurnTimeout = 60 * time.Second

// probe is a turn that asks about an earlier acknowledged turn: if the
// restarted server's arena caught up, the frame forwarded upstream quotes
// the earlier turn verbatim.
type probe struct {
	turn    *Turn
	earlier string // the earlier turn's user text; empty: nothing to recall yet
}

// run is the state of the kill loop.
type run struct {
	t    *testing.T
	fake *fakeprovider.Provider
	env  []string
	key  string
	hc   *http.Client

	ledger       Ledger
	probes       []probe         // acknowledged recall probes, each checked
	firstAck     []time.Duration // listening -> first turn acknowledged, per restart
	delays       []time.Duration // warm -> SIGKILL, per round
	inFlight     int             // turns sent before a kill and not finished by it
	mon          *pgx.Conn       // samples pg_stat_activity at each kill
	inTx         int             // kills that found the server inside a transaction
	inCapture    int             // ... inside a capture transaction
	refusedFirst int             // 503s a cold server answered before its first acknowledged turn
	logs         []*rig.LockedBuffer
}

// round starts the server, has it acknowledge a first turn that recalls an
// earlier one (the restart answers and its arena caught up), lets the
// clients loose on it and kills it after a random delay.
func (r *run) round(i int) {
	t := r.t
	p, err := rig.Serve(t, r.env)
	if err != nil {
		t.Fatalf("round %d: restart: %v", i, err)
	}
	listening := time.Now()
	r.logs = append(r.logs, p.Log)
	base := p.URL + "/k/" + r.key

	// Kills are timed from a warm server: a cold one spends its first few
	// hundred milliseconds loading, and a kill there would test nothing.
	r.firstTurn(i, base, listening, p.Log)

	// Clients stop starting turns once the kill is decided, so the turns a
	// dead server refuses do not count as sent; the ones in flight are cut
	// by the kill itself, not by the client.
	var halt atomic.Bool
	var wg sync.WaitGroup
	for c := range clients {
		cl := &Client{Base: base, HTTP: r.hc, Conversation: fmt.Sprintf("crash-client-%d", c)}
		wg.Go(func() {
			for n := 1; !halt.Load(); n++ {
				m := NewMarker()
				tu := &Turn{Client: c, Kind: RandomKind(), Marker: m, Text: UserText(c, n, m)}
				cl.Send(context.Background(), tu)
				r.ledger.Add(tu)
			}
		})
	}
	delay := time.Duration(mrand.Int64N(int64(maxKillDelay)))
	r.delays = append(r.delays, delay)
	time.Sleep(delay)
	halt.Store(true)
	r.sampleTx()
	killAt := time.Now()
	p.Kill()
	wg.Wait()
	for _, tu := range r.ledger.Turns() {
		if tu.Sent.Before(killAt) && !tu.Done.Before(killAt) {
			r.inFlight++
		}
	}
	r.fake.Reset() // bounds what the fake keeps: frames grow with the memory
}

// firstTurn has the restarted server acknowledge a turn that recalls an
// earlier one. On a busy machine the cold server's first capture can
// outlast its capture timeout (PERPETUITY_CAPTURE_TIMEOUT): that is an
// explicit 503 with nothing forwarded, so the turn is asked again, with a
// fresh marker, until firstTurnTimeout.
func (r *run) firstTurn(i int, base string, listening time.Time, log *rig.LockedBuffer) {
	cl := &Client{Base: base, HTTP: r.hc, Conversation: "crash-client-0"}
	deadline := time.Now().Add(firstTurnTimeout)
	for {
		pr := r.newProbe(0, i)
		ctx, cancel := context.WithDeadline(context.Background(), deadline)
		cl.Send(ctx, pr.turn)
		cancel()
		r.ledger.Add(pr.turn)
		switch {
		case pr.turn.Acked:
			r.firstAck = append(r.firstAck, pr.turn.Done.Sub(listening))
			r.checkProbe(fmt.Sprintf("round %d", i), pr)
			return
		case pr.turn.Status == http.StatusServiceUnavailable && DialectError(pr.turn.Kind, pr.turn.Body) && time.Now().Before(deadline):
			r.refusedFirst++
		default:
			r.t.Errorf("round %d: the restarted server did not acknowledge a first turn within %v: status %d, %v, %s\n"+
				"database sessions:\n%s\nserver log:\n%s", i, firstTurnTimeout, pr.turn.Status, pr.turn.Err, pr.turn.Body, r.activity(), log.String())
			return
		}
	}
}

// activity lists the database's sessions, for a failure report.
func (r *run) activity() string {
	rows, err := r.mon.Query(context.Background(), `SELECT pid, coalesce(state, ''), coalesce(wait_event_type || ':' || wait_event, ''),
			coalesce(now() - xact_start, '0'::interval)::text, left(query, 100)
		FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid() ORDER BY pid`)
	if err != nil {
		return err.Error()
	}
	var b strings.Builder
	var pid int
	var state, wait, age, query string
	_, err = pgx.ForEachRow(rows, []any{&pid, &state, &wait, &age, &query}, func() error {
		fmt.Fprintf(&b, "  %d %s wait=%s xact=%s %q\n", pid, state, wait, age, query)
		return nil
	})
	if err != nil {
		return err.Error()
	}
	return b.String()
}

// newProbe is a turn of client c asking about a random acknowledged turn;
// before anything was acknowledged it is a plain turn.
func (r *run) newProbe(c, n int) probe {
	m := NewMarker()
	acked := ackedTexts(r.ledger.Turns())
	if len(acked) == 0 {
		return probe{turn: &Turn{Client: c, Kind: RandomKind(), Marker: m, Text: UserText(c, -n, m)}}
	}
	return r.probeFor(c, n, acked[mrand.IntN(len(acked))], RandomKind())
}

func (r *run) probeFor(c, n int, earlier string, k Kind) probe {
	m := NewMarker()
	return probe{earlier: earlier, turn: &Turn{Client: c, Kind: k, Marker: m, Text: RecallText(c, -n, earlier, m)}}
}

// checkProbe checks an acknowledged probe's frame and keeps it.
func (r *run) checkProbe(where string, p probe) {
	if p.earlier == "" {
		return
	}
	r.probes = append(r.probes, p)
	if !sawEarlier(r.fake, p) {
		r.t.Errorf("%s: the restarted server's frame for %q does not quote the earlier turn %q", where, p.turn.Text, p.earlier)
	}
}

// finalProbes asks the last server about the oldest, the newest and six
// random acknowledged turns, one at a time, and checks every frame.
func (r *run) finalProbes(cl *Client) int {
	t := r.t
	acked := ackedTexts(r.ledger.Turns())
	if len(acked) == 0 {
		t.Error("no acknowledged turn to recall after the last restart")
		return 0
	}
	picks := []string{acked[0], acked[len(acked)-1]}
	for range 6 {
		picks = append(picks, acked[mrand.IntN(len(acked))])
	}
	ok := 0
	for i, earlier := range picks {
		pr := r.probeFor(-1, i, earlier, Kind(i%int(kinds)))
		ctx, cancel := context.WithTimeout(context.Background(), firstTurnTimeout)
		cl.Send(ctx, pr.turn)
		cancel()
		r.ledger.Add(pr.turn)
		if !pr.turn.Acked {
			t.Errorf("after the last restart, probe %d was not acknowledged: status %d, %v, %s", i, pr.turn.Status, pr.turn.Err, pr.turn.Body)
			continue
		}
		r.checkProbe(fmt.Sprintf("final probe %d", i), pr)
		ok++
	}
	return ok
}

// ackedTexts are the user texts of the acknowledged turns.
func ackedTexts(turns []*Turn) []string {
	var out []string
	for _, t := range turns {
		if t.Acked {
			out = append(out, t.Text)
		}
	}
	return out
}

// sawEarlier reports whether the upstream request that carried the probe
// (the one whose last marker is the probe's) quotes the earlier turn.
func sawEarlier(fake *fakeprovider.Provider, p probe) bool {
	for _, r := range fake.Requests() {
		ms := markerRE.FindAll(r.Body, -1)
		if len(ms) > 0 && string(ms[len(ms)-1]) == p.turn.Marker {
			return strings.Contains(string(r.Body), p.earlier)
		}
	}
	return false
}

// waitReady polls /readyz until it answers 200 (database, schema and
// arenas loaded) and returns how long that took.
func waitReady(base string, limit time.Duration) (time.Duration, error) {
	start := time.Now()
	for time.Since(start) < limit {
		resp, err := http.Get(base + "/readyz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return time.Since(start), nil
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	return 0, fmt.Errorf("not ready after %v", limit)
}

// openTxSQL counts the server's backends inside a transaction, and those
// whose statement is one of a capture's (memory/store/capture.go): the
// message, clock, head, items, rows, counts and born-hot inserts.
const openTxSQL = `SELECT count(*) FILTER (WHERE xact_start IS NOT NULL),
		count(*) FILTER (WHERE xact_start IS NOT NULL AND query ~ $1)
	FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()`

const captureStatements = `^\s*(INSERT INTO (messages|items|retrieval_rows|term_stats|corpus_stats) |` +
	`INSERT INTO activations \(|UPDATE (memory_users SET clock|tenant_heads SET seq))`

// sampleTx records whether the server is inside a transaction, and inside
// a capture, at the moment of the kill.
func (r *run) sampleTx() {
	var open, capture int
	if err := r.mon.QueryRow(context.Background(), openTxSQL, captureStatements).Scan(&open, &capture); err != nil {
		r.t.Fatalf("pg_stat_activity: %v", err)
	}
	if open > 0 {
		r.inTx++
	}
	if capture > 0 {
		r.inCapture++
	}
}

// quantile is the q-quantile of ds (sorted in place).
func quantile(ds []time.Duration, q float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	slices.Sort(ds)
	return ds[int(q*float64(len(ds)-1))]
}
