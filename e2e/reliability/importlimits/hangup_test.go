package importlimits

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/perpetuity/perpetuity/e2e/reliability/figure"
	"github.com/perpetuity/perpetuity/e2e/rig"
)

const (
	hangUpPerLine = 50              // turns per line of the hang-up imports
	settle        = 2 * time.Second // after the hang-up, storing must have stopped by then
	watch         = 4 * time.Second // and must not start again during this
	pollEvery     = 50 * time.Millisecond
	maxAdmission  = 60 * time.Second // the imports must have begun storing by then
)

// stopRecord is the server's log line for an import that stopped early.
type stopRecord struct {
	Msg           string `json:"msg"`
	Reason        string `json:"reason"`
	Tenant        int64  `json:"tenant"`
	Line          int    `json:"line"`
	Conversations int    `json:"conversations"`
	Turns         int    `json:"turns"`
}

// TestImportHangUp starts M big imports, each into its own tenant, and
// hangs every client up once the imports are storing. The server must stop
// each at the next line boundary: a couple of seconds after the hang-up
// no turn is stored any more, every stored line is whole, and the log
// names, per import, the line it stopped before and the turns it stored,
// which match the database.
func TestImportHangUp(t *testing.T) {
	t.Parallel()
	m, turns := figure.N(4, 3), figure.N(50_000, 5_000)
	hangAfter := time.Duration(figure.N(3000, 500)) * time.Millisecond
	w := startWorld(t)

	type imp struct {
		tenant rig.Tenant
		spec   spec
		err    error
	}
	imps := make([]*imp, m)
	for i := range imps {
		imps[i] = &imp{
			tenant: rig.CreateTenant(t, w.env, fmt.Sprintf("hang-up %d", i), "--scope", "tenant"),
			spec:   spec{tag: fmt.Sprintf("hang%d", i), lines: turns / hangUpPerLine, perLine: hangUpPerLine, size: 60},
		}
	}
	ctx, hangUp := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	for _, im := range imps {
		body := im.spec.jsonl()
		wg.Add(1)
		go func() {
			defer wg.Done()
			a, err := w.importBody(ctx, im.tenant.Key, nil, body)
			if err == nil {
				err = fmt.Errorf("import ended before the hang-up: %d %s", a.status, a.body)
			}
			im.err = err
		}()
	}
	stored := func() (total int64, each []int64) {
		each = make([]int64, len(imps))
		for i, im := range imps {
			each[i] = w.count(messagesSQL, im.tenant.TenantID)
			total += each[i]
		}
		return total, each
	}
	// Hang up once every import is storing, and a moment later.
	deadline := time.Now().Add(maxAdmission)
	for {
		_, each := stored()
		if !containsZero(each) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("imports not storing after %v: %v", maxAdmission, each)
		}
		time.Sleep(pollEvery)
	}
	time.Sleep(hangAfter)
	atHangUp, _ := stored()
	hungUp := time.Now()
	hangUp()
	wg.Wait()
	for i, im := range imps {
		if !errors.Is(im.err, context.Canceled) {
			t.Fatalf("import %d: %v", i, im.err)
		}
	}

	// Watch the rows: the last time the count moved is when storing stopped.
	last, _ := stored()
	lastGrowth := time.Duration(0)
	for time.Since(hungUp) < settle+watch {
		time.Sleep(pollEvery)
		n, _ := stored()
		if n != last {
			last, lastGrowth = n, time.Since(hungUp)
		}
	}
	final, each := stored()

	// Every stored line whole; the log's report per import matches.
	reports := stopRecords(w.proc.Log.String())
	broken, unreported, mismatched := 0, 0, 0
	var details []string
	for i, im := range imps {
		b := w.count(brokenLinesSQL, im.tenant.TenantID, hangUpPerLine)
		broken += int(b)
		r, ok := reports[im.tenant.TenantID]
		switch {
		case !ok:
			unreported++
		case int64(r.Turns) != each[i] || r.Conversations != r.Line-1 || r.Turns != (r.Line-1)*hangUpPerLine:
			mismatched++
		}
		details = append(details, fmt.Sprintf("import %d: %d of %d turns stored, %d broken lines, log %+v", i, each[i], turns, b, r))
		if each[i] >= int64(turns) {
			t.Fatalf("import %d finished before the hang-up (%d turns): make it bigger", i, each[i])
		}
	}
	pass := lastGrowth <= settle && broken == 0 && unreported == 0 && mismatched == 0
	figure.Record(t, figure.Figure{
		Item: 108,
		Name: "Import whose client hung up",
		Figure: fmt.Sprintf("%d imports of %d turns (lines of %d) hung up %.1f s after they began storing: %d turns stored at the hang-up, %d at the end; the last stored %.2f s after the hang-up, %d more in the %.0f s after %.0f s; %d broken lines; %d/%d stops reported in the log by line, %d disagreeing with the database",
			m, turns, hangUpPerLine, hangAfter.Seconds(), atHangUp, final, lastGrowth.Seconds(), final-last, watch.Seconds(), settle.Seconds(),
			broken, m-unreported, m, mismatched),
		Target:  fmt.Sprintf("storing stops within about one line's time of the hang-up (no turn stored after %.0f s); only whole lines stored; the stop reported by line", settle.Seconds()),
		Pass:    pass,
		Details: "each import into a tenant of its own, raw HTTP, the client's context cancelled once every tenant has stored turns; stored turns counted in the database every 50 ms; a broken line is a conversation without all its turns; the log's \"import stopped\" record per tenant compared with the database\n" + strings.Join(details, "\n"),
	})
	if !pass {
		t.Errorf("hang-up: last turn stored %v after the hang-up (want <= %v), %d broken lines, %d unreported, %d mismatched", lastGrowth, settle, broken, unreported, mismatched)
	}
}

func containsZero(v []int64) bool {
	for _, n := range v {
		if n == 0 {
			return true
		}
	}
	return false
}

// stopRecords reads the server's "import stopped" log lines by tenant.
func stopRecords(log string) map[int64]stopRecord {
	out := map[int64]stopRecord{}
	for _, line := range strings.Split(log, "\n") {
		var r stopRecord
		if json.Unmarshal([]byte(line), &r) == nil && r.Msg == "import stopped" {
			out[r.Tenant] = r
		}
	}
	return out
}
