package importlimits

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/perpetuity/perpetuity/e2e/reliability/figure"
	"github.com/perpetuity/perpetuity/e2e/rig"
)

// TestImportRequestLimit sends K imports in a row on a key limited to rpm
// requests a minute: rpm are admitted (plus what refills during the run),
// every other one is a 429 with Retry-After that stored nothing, not even
// the memory user it names (in a line or in X-Perpetuity-User).
func TestImportRequestLimit(t *testing.T) {
	t.Parallel()
	const rpm = 2
	k := figure.N(20, 6)
	w := startWorld(t)
	nt := rig.CreateTenant(t, w.env, "import rpm", "--scope", "tenant")
	w.limits(nt.TenantID, "--rpm", strconv.Itoa(rpm))
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()

	type sent struct {
		tag, user string
		a         answer
	}
	var all []sent
	admitted, refused, wellFormed := 0, 0, 0
	retryMin, retryMax := 1<<30, 0
	start := time.Now()
	for i := range k {
		s := spec{tag: fmt.Sprintf("rpm%d", i), lines: 2, perLine: 2, size: 40}
		hdr := http.Header{}
		user := "line-" + s.tag
		if i%2 == 0 {
			s.user = user
		} else {
			user = "header-" + s.tag
			hdr.Set("X-Perpetuity-User", user)
		}
		a, err := w.importBody(ctx, nt.Key, hdr, s.jsonl())
		if err != nil {
			t.Fatalf("import %d: %v", i, err)
		}
		all = append(all, sent{s.tag, user, a})
		switch {
		case a.status == http.StatusOK:
			admitted++
		case a.status == http.StatusTooManyRequests:
			refused++
			if a.retry >= 1 && a.retry <= 60 && strings.Contains(a.Message, "requests per minute") {
				wellFormed++
			} else {
				t.Errorf("import %d: 429 with Retry-After %d: %s", i, a.retry, a.body)
			}
			retryMin, retryMax = min(retryMin, a.retry), max(retryMax, a.retry)
		default:
			t.Fatalf("import %d: %d %s", i, a.status, a.body)
		}
	}
	maxAdmitted := rpm + int(time.Since(start).Seconds()*rpm/60)

	// What the refused imports left: nothing.
	leaked := 0
	for _, s := range all {
		convs := w.count(conversationsSQL, nt.TenantID, "h:"+s.tag+"-%")
		users := w.count(usersSQL, nt.TenantID, s.user)
		if s.a.status == http.StatusOK {
			if convs != 2 || users != 1 || s.a.Turns != 4 {
				t.Errorf("%s admitted: %d conversations and %d users stored, answer %s", s.tag, convs, users, s.a.body)
			}
			continue
		}
		if convs != 0 || users != 0 {
			leaked++
			t.Errorf("%s refused, yet %d conversations and %d users stored", s.tag, convs, users)
		}
	}
	pass := admitted >= rpm && admitted <= maxAdmitted && refused == k-admitted && wellFormed == refused && leaked == 0
	if refused == 0 {
		retryMin = 0
	}
	figure.Record(t, figure.Figure{
		Item: 108,
		Name: "Import against the request limit",
		Figure: fmt.Sprintf("%d imports in %.1f s on a key at %d rpm: %d admitted (at most %d with refill), %d refused with 429 and Retry-After %d-%d s, %d refused imports left a conversation or a memory user",
			k, time.Since(start).Seconds(), rpm, admitted, maxAdmitted, refused, retryMin, retryMax, leaked),
		Target:  "exactly the key's requests per minute admitted; every other import a 429 with Retry-After that stores nothing",
		Pass:    pass,
		Details: "raw HTTP POST /k/<key>/perpetuity/import, one after another, limits set with `perpetuity tenant limits ID --rpm 2`; half the imports name their memory user in the lines, half in X-Perpetuity-User; each refused import's conversations and users looked for in the database",
	})
	if !pass {
		t.Errorf("imports at %d rpm: %d of %d admitted (at most %d), %d refused, %d well-formed, %d leaked", rpm, admitted, k, maxAdmitted, refused, wellFormed, leaked)
	}
}

// TestImportTokenBudget imports files far bigger than the key's token
// budgets. Against tokens per minute the import stops at a line boundary
// once the bucket is spent (one line may overshoot, as a proxied reply
// may), answers 429 with Retry-After naming the line to resume from, and
// has stored exactly the lines it reports; sent again after Retry-After,
// the whole file skips what is stored at no cost and stores more. Against
// tokens per day it stops after exactly the day's budget, and the next
// import is refused whole.
func TestImportTokenBudget(t *testing.T) {
	t.Parallel()
	w := startWorld(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()

	// Tokens per minute: lines of 100 tokens, a bucket of 60 lines that
	// refills one line a second.
	const tpm = 6000
	minute := rig.CreateTenant(t, w.env, "import tpm", "--scope", "tenant")
	w.limits(minute.TenantID, "--tpm", strconv.Itoa(tpm))
	s := spec{tag: "tpm", lines: figure.N(400, 120), perLine: 10, size: 40}
	perLine := s.tokensPerLine()
	start := time.Now()
	a, err := w.importBody(ctx, minute.Key, nil, s.jsonl())
	if err != nil {
		t.Fatal(err)
	}
	elapsed := time.Since(start)
	stored := w.count(messagesSQL, minute.TenantID)
	convs := w.count(conversationsSQL, minute.TenantID, "h:tpm-%")
	committed := a.Error.Line - 1
	// A token bucket lets through its capacity, what refills meanwhile,
	// and the line that took it into debt.
	minLines, maxLines := tpm/perLine, (tpm+int(elapsed.Minutes()*tpm))/perLine+1
	minuteOK := a.status == http.StatusTooManyRequests && a.retry >= 1 && a.retry <= 60 &&
		committed >= minLines && committed <= maxLines && a.Conversations == committed && a.Turns == committed*s.perLine &&
		stored == int64(a.Turns) && convs == int64(committed) && strings.Contains(a.Error.Message, "tokens per minute")
	if !minuteOK {
		t.Errorf("tpm %d: %d Retry-After %d, line %d (want %d-%d lines stored), %d conversations and %d turns stored: %s",
			tpm, a.status, a.retry, a.Error.Line, minLines, maxLines, convs, stored, a.body)
	}
	// Resume as the answer says: after Retry-After, the whole file again.
	time.Sleep(time.Duration(a.retry) * time.Second)
	resumed := time.Now()
	r, err := w.importBody(ctx, minute.Key, nil, s.jsonl())
	if err != nil {
		t.Fatal(err)
	}
	resumeElapsed := time.Since(resumed)
	newLines := r.Conversations - committed
	storedAfter := w.count(messagesSQL, minute.TenantID)
	broken := w.count(brokenLinesSQL, minute.TenantID, s.perLine)
	// Both imports together: the bucket, what refilled since the first
	// began, and one line of debt each.
	maxNew := (tpm+int(time.Since(start).Minutes()*tpm))/perLine + 2 - committed
	resumeOK := r.status == http.StatusTooManyRequests && r.Duplicates == a.Turns && newLines >= 1 && newLines <= maxNew &&
		r.Turns == newLines*s.perLine && r.Error.Line == r.Conversations+1 && storedAfter == int64(a.Turns+r.Turns) && broken == 0
	if !resumeOK {
		t.Errorf("resumed after %d s: %d, %d new lines (at most %d), %d turns stored in all, %d broken lines: %s",
			a.retry, r.status, newLines, maxNew, storedAfter, broken, r.body)
	}

	// Tokens per day: no refill, so the count is exact.
	const tpd = 5000
	day := rig.CreateTenant(t, w.env, "import tpd", "--scope", "tenant")
	w.limits(day.TenantID, "--tpd", strconv.Itoa(tpd))
	d := spec{tag: "tpd", lines: figure.N(200, 20), perLine: 10, size: 400}
	da, err := w.importBody(ctx, day.Key, nil, d.jsonl())
	if err != nil {
		t.Fatal(err)
	}
	dayStored := w.count(messagesSQL, day.TenantID)
	dayBroken := w.count(brokenLinesSQL, day.TenantID, d.perLine)
	wantLines := tpd / d.tokensPerLine()
	now := time.Now().UTC()
	toMidnight := int(now.Truncate(24*time.Hour).Add(24*time.Hour).Sub(now).Seconds()) + 1
	dayOK := da.status == http.StatusTooManyRequests && da.Error.Line == wantLines+1 &&
		da.Turns == wantLines*d.perLine && dayStored == int64(da.Turns) && dayBroken == 0 &&
		da.retry >= toMidnight-10 && da.retry <= toMidnight+1 && strings.Contains(da.Error.Message, "tokens per day")
	if !dayOK {
		t.Errorf("tpd %d: %d Retry-After %d (midnight in %d s), line %d, %d turns stored (%d broken lines): %s",
			tpd, da.status, da.retry, toMidnight, da.Error.Line, dayStored, dayBroken, da.body)
	}
	// The day is spent: the next import is refused before anything.
	next := spec{tag: "after", lines: 1, perLine: 2, size: 40, user: "after-user"}
	na, err := w.importBody(ctx, day.Key, nil, next.jsonl())
	if err != nil {
		t.Fatal(err)
	}
	afterLeft := w.count(conversationsSQL, day.TenantID, "h:after-%") + w.count(usersSQL, day.TenantID, "after-user")
	nextOK := na.status == http.StatusTooManyRequests && na.retry >= 1 && afterLeft == 0
	if !nextOK {
		t.Errorf("import after the day's budget: %d Retry-After %d, %d rows left: %s", na.status, na.retry, afterLeft, na.body)
	}

	pass := minuteOK && resumeOK && dayOK && nextOK
	figure.Record(t, figure.Figure{
		Item: 108,
		Name: "Import against the token budgets",
		Figure: fmt.Sprintf("a %d-line import (%d tokens a line) at %d TPM stopped with 429 at line %d after %.1f s: %d lines stored (%d-%d allowed), %d turns reported and %d stored; "+
			"sent again after Retry-After %d s it skipped those %d turns and stored %d more lines (at most %d allowed) in %.1f s, %d broken lines in all; "+
			"at %d TPD it stopped at line %d (want %d), %d turns reported and %d stored, Retry-After %d s to UTC midnight; the next import refused %d, storing %d rows",
			s.lines, perLine, tpm, a.Error.Line, elapsed.Seconds(), committed, minLines, maxLines, a.Turns, stored,
			a.retry, r.Duplicates, newLines, maxNew, resumeElapsed.Seconds(), broken,
			tpd, da.Error.Line, wantLines+1, da.Turns, dayStored, da.retry, na.status, afterLeft),
		Target:  "an import spends what it stores (turn text bytes / 4) from the key's TPM and TPD and stops at the line boundary where they run out, reporting by line exactly what is stored; resuming skips what is stored at no cost; a spent budget refuses the next import whole",
		Pass:    pass,
		Details: fmt.Sprintf("limits set with `perpetuity tenant limits ID --tpm %d` and `--tpd %d`; TPM lines of 10 turns of 40 bytes, TPD lines of 10 turns of 400 bytes; stored turns and conversations counted in the database; a broken line is a conversation without exactly its 10 turns", tpm, tpd),
	})
}
