package crash

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/perpetuity/perpetuity/e2e/fakeprovider"
	"github.com/perpetuity/perpetuity/e2e/reliability/figure"
	"github.com/perpetuity/perpetuity/e2e/rig"
	"github.com/perpetuity/perpetuity/migrations/dbtest"
)

// TestCrashDuringCapture (issue 9, item 1) kills the server with SIGKILL at
// random moments while clients capture turns, restarts it on the same
// database and goes on. Afterwards no acknowledged user turn is missing, no
// message is half-stored, the integrity check finds nothing, and every
// restarted server recalls turns acknowledged before the kills.
func TestCrashDuringCapture(t *testing.T) {
	kills := figure.N(200, 4)
	ctx := context.Background()
	fake := fakeprovider.New()
	fake.SetDefault(Reply)
	up := httptest.NewServer(fake)
	t.Cleanup(up.Close)
	dbURL := dbtest.New(t)
	env := []string{"DATABASE_URL=" + dbURL, "PERPETUITY_OPENAI_BASE_URL=" + up.URL + "/v1", "PERPETUITY_ANTHROPIC_BASE_URL=" + up.URL}
	tn := rig.CreateTenant(t, env, "crash")
	// A second dictionary version, derived and kept ready: every capture
	// then writes a retrieval row per version, so a torn capture has more to
	// tear.
	for _, args := range [][]string{{"dict", "upload", "--builtin", "2"}, {"dict", "derive", "2", "--tenant", strconv.FormatInt(tn.TenantID, 10)}} {
		if out, err := rig.CLI(t, env, args...); err != nil {
			t.Fatalf("%v: %v\n%s", args, err, out)
		}
	}
	mon, err := pgx.Connect(ctx, dbURL)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { mon.Close(context.Background()) })

	tr := &http.Transport{MaxIdleConnsPerHost: 2 * clients}
	r := &run{t: t, fake: fake, env: env, key: tn.Key, hc: &http.Client{Transport: tr, Timeout: 30 * time.Second}, mon: mon}
	for i := range kills {
		r.round(i)
		tr.CloseIdleConnections()
	}

	// The last restart: it must become ready and recall the oldest, the
	// newest and random acknowledged turns.
	p, err := rig.Serve(t, env)
	if err != nil {
		t.Fatalf("final restart: %v", err)
	}
	r.logs = append(r.logs, p.Log)
	readyIn, err := waitReady(p.URL, firstTurnTimeout)
	if err != nil {
		t.Fatalf("final restart: %v\n%s", err, p.Log.String())
	}
	final := r.finalProbes(&Client{Base: p.URL + "/k/" + tn.Key, HTTP: r.hc, Conversation: "crash-final"})
	time.Sleep(200 * time.Millisecond) // lets the probes' replies be captured
	p.Kill()

	a, err := AuditTurns(ctx, dbURL, tn.TenantID, r.ledger.Turns())
	if err != nil {
		t.Fatal(err)
	}
	part, err := CheckPartial(ctx, dbURL, tn.TenantID)
	if err != nil {
		t.Fatal(err)
	}
	items, violations, out, err := Integrity(t, env, tn.TenantID)
	if err != nil {
		t.Fatal(err)
	}
	panics := 0
	for _, l := range r.logs {
		if strings.Contains(l.String(), "panic") {
			panics++
		}
	}

	pass := len(a.Missing) == 0 && part.Total() == 0 && violations == 0 && a.Duplicates == 0 && a.Unknown == 0 &&
		a.Misanswered == 0 && a.RepliesPartial == 0 && panics == 0 && final > 0 && len(r.firstAck) == kills && !t.Failed()
	fig := figure.Figure{
		Item: 1, Name: "Crash during capture",
		Figure: fmt.Sprintf("%d kills, %d acknowledged turns, %d missing, %d partial, %d integrity violations; %d of %d acknowledged replies stored",
			kills, a.Acked, len(a.Missing), part.Total(), violations, a.RepliesStored, a.Acked),
		Target: "0 acknowledged user turns missing, 0 partial messages, 0 integrity violations, every restart answers and recalls earlier turns",
		Pass:   pass,
		Details: fmt.Sprintf("One database for all rounds, so memory accumulates (%d messages, %d items at the end, retrieval rows for dictionary "+
			"versions %v: v2 is derived and kept ready, so each capture writes a row per version). Each round starts the real binary; its first "+
			"turn asks about a random turn acknowledged earlier and must be acknowledged within %v (restart to first acknowledged turn p50 %v, "+
			"max %v; %d first turns were refused with a 503 by a cold server whose capture outlasted its timeout, and asked again); "+
			"then %d clients send turns back to back (OpenAI chat and Anthropic messages, streaming and not, picked at random, each user message "+
			"carrying a unique marker) against the fake provider, and the server gets SIGKILL after a uniform random 0-%v (p50 %v, max %v). "+
			"%d turns sent, %d in flight at a kill; of the unacknowledged, %d had their user turn stored (killed after the capture committed) and "+
			"%d not (killed before it committed). Sampled from pg_stat_activity right before each SIGKILL: %d of %d kills found the "+
			"server inside a transaction, %d inside a capture transaction (its statement one of the capture's inserts or updates). "+
			"Acknowledged = 2xx with the complete expected reply and the dialect's final event; %d complete replies answered another turn's "+
			"question (must be 0: the live question closes the frame). Every acknowledged turn's user message is looked up verbatim in the "+
			"database: %d missing; %d stored twice, %d stored that no client sent. Replies are captured after the response (DESIGN §2 step 7), "+
			"so a kill may lose them: %d of %d acknowledged replies stored whole, the rest lost with the process; %d stored cut short or "+
			"flagged interrupted (must be 0: the client had them whole). "+
			"Partial state counted from the rows (messages without items, gapped parts, items without a row per served version, activation or "+
			"birth record, term and corpus counts against a recount): %s. `perpetuity integrity` checked %d items: %d violations. %d recall "+
			"probes acknowledged (one opening each round after the first, %d after the last restart, which was ready in %v), every frame quoting "+
			"the earlier turn verbatim. Server logs with a panic: %d.",
			part.Messages, part.Items, part.Versions, firstTurnTimeout, quantile(r.firstAck, 0.5).Round(time.Millisecond), quantile(r.firstAck, 1).Round(time.Millisecond), r.refusedFirst,
			clients, maxKillDelay, quantile(r.delays, 0.5).Round(time.Millisecond), quantile(r.delays, 1).Round(time.Millisecond),
			a.Sent, r.inFlight, a.StoredUnacked, a.LostUnacked, r.inTx, kills, r.inCapture, a.Misanswered, len(a.Missing), a.Duplicates, a.Unknown,
			a.RepliesStored, a.Acked, a.RepliesPartial, part, items, violations, len(r.probes), final, readyIn.Round(time.Millisecond), panics),
	}
	figure.Record(t, fig)
	t.Log(fig.Details)
	for _, c := range a.CutReplies {
		t.Errorf("acknowledged turn whose stored reply is not whole: %s", c)
	}
	if a.Misanswered != 0 {
		t.Errorf("%d complete replies answered another turn's question", a.Misanswered)
	}
	for _, m := range a.Missing {
		t.Errorf("acknowledged turn not stored: client %d %s %q (sent %s, status %d)", m.Client, m.Kind, m.Text,
			m.Sent.Format(time.RFC3339Nano), m.Status)
	}
	if part.Total() != 0 {
		t.Errorf("partial state: %s", part)
	}
	if violations != 0 {
		t.Errorf("integrity: %d violations:\n%s", violations, out)
	}
	if items != part.Items {
		t.Errorf("integrity checked %d items, the tenant has %d", items, part.Items)
	}
	if a.Duplicates != 0 || a.Unknown != 0 {
		t.Errorf("%d user turns stored twice, %d stored that no client sent", a.Duplicates, a.Unknown)
	}
	if panics != 0 {
		t.Errorf("%d server logs mention a panic", panics)
	}
	if a.StoredUnacked+a.LostUnacked == 0 {
		t.Errorf("no kill cut a turn in %d rounds: the kills missed the captures", kills)
	}
	if figure.Full() && r.inCapture == 0 {
		t.Errorf("none of %d kills landed inside a capture transaction", kills)
	}
}
