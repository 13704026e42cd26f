package accounts

import (
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/perpetuity/perpetuity/e2e/reliability/figure"
)

// perHour is the service's default: invitations a team may make per hour.
const perHour = 20

// TestInviteEnumeration is item 107: a tenant admin invites N addresses in
// a burst, mixing addresses that have accounts elsewhere (other teams'
// admins and member, the platform admin) with new ones. Every answer must
// read the same whatever the address (status, page, timing); past the
// team's limit every answer is a refusal, and a refused invitation leaves
// no row (counted in console_invites directly). A second team sends its
// burst from eight connections at once, to hold the limit under races.
func TestInviteEnumeration(t *testing.T) {
	t.Parallel()
	w := startWorld(t)
	n := figure.N(200, 30)

	prober := w.browser("198.51.100.7")
	prober.signUp("Prober", "admin@prober.test")
	var existing []string
	for i := range 3 {
		email := fmt.Sprintf("admin@victim%d.test", i)
		w.browser(fmt.Sprintf("192.0.2.%d", 10+i)).signUp(fmt.Sprintf("Victim %d", i), email)
		existing = append(existing, email)
	}
	victim := w.browser("192.0.2.10")
	victim.signIn("admin@victim0.test", password)
	victim.get("/console/accounts")
	link := inviteLink.FindString(victim.postFollow("/console/accounts/invite", url.Values{"email": {"member2@victim0.test"}, "role": {"tenant_reader"}}).body)
	joiner := w.browser("192.0.2.20")
	joiner.get(link)
	if a := joiner.post(link, url.Values{"password": {password}}); a.status != http.StatusSeeOther {
		t.Fatalf("victim's member joins: %d %.300s", a.status, a.body)
	}
	existing = append(existing, "member2@victim0.test", "root@platform.test")
	w.createPlatformAdmin("root@platform.test")
	proberTenant := w.scalar(`SELECT tenant_id FROM console_accounts WHERE email = 'admin@prober.test'`)

	// Existing addresses at spread positions, inside the limit and past it.
	addrs := make([]string, n)
	isExisting := make([]bool, n)
	for i := range addrs {
		addrs[i] = fmt.Sprintf("new%03d@elsewhere.test", i)
	}
	for k, pos := 0, 1; pos < n; k, pos = k+1, pos+4 {
		e := existing[k%len(existing)]
		if k%3 == 2 {
			e = strings.ToUpper(e)
		}
		addrs[pos], isExisting[pos] = e, true
	}

	prober.get("/console/accounts")
	var (
		createdPages, refusedPages = map[string]int{}, map[string]int{}
		wrong                      []string
		created, refused           int
		createdExisting            int
		badRetry                   int
		links                      = map[string]string{}
	)
	start := time.Now()
	for i, email := range addrs {
		a := prober.postFollow("/console/accounts/invite", url.Values{"email": {email}, "role": {"tenant_reader"}})
		page := tables.ReplaceAllString(inviteLink.ReplaceAllString(a.body, "/invite/LINK"), "<table/>")
		switch {
		case i < perHour && a.status == http.StatusOK && inviteLink.MatchString(a.body):
			created++
			createdPages[page]++
			links[strings.ToLower(email)] = inviteLink.FindString(a.body)
			if isExisting[i] {
				createdExisting++
			}
		case i >= perHour && a.status == http.StatusTooManyRequests && !inviteLink.MatchString(a.body):
			refused++
			refusedPages[page]++
			if ra, err := strconv.Atoi(a.header.Get("Retry-After")); err != nil || ra <= 0 {
				badRetry++
			}
		default:
			wrong = append(wrong, fmt.Sprintf("#%d %s (existing %v): %d %q", i+1, email, isExisting[i], a.status, formError(a.body)))
		}
	}
	burst := time.Since(start)
	rows := w.scalar(`SELECT count(*) FROM console_invites WHERE tenant_id = $1`, proberTenant)
	listed := strings.Count(prober.get("/console/accounts").body, `data-testid="invite-row"`)

	// The residual: an invitation to an address with an account cannot be
	// accepted, whoever holds the link (the inviter does); one for a new
	// address can, as before.
	holder := w.browser("203.0.113.5")
	holder.get(links["admin@victim1.test"])
	acceptExisting := holder.post(links["admin@victim1.test"], url.Values{"password": {"another long password"}})
	newcomer := w.browser("203.0.113.6")
	newcomer.get(links["new000@elsewhere.test"])
	acceptNew := newcomer.post(links["new000@elsewhere.test"], url.Values{"password": {password}})
	stillOne := w.scalar(`SELECT count(*) FROM console_accounts WHERE lower(email) = 'admin@victim1.test' AND tenant_id <> $1`, proberTenant)

	// A second team's burst from eight connections at once.
	racer := w.browser("198.51.100.8")
	racer.signUp("Racer", "admin@racer.test")
	racerTenant := w.scalar(`SELECT tenant_id FROM console_accounts WHERE email = 'admin@racer.test'`)
	racer.get("/console/accounts")
	var mu sync.Mutex
	raced := map[int]int{}
	var wg sync.WaitGroup
	jobs := make(chan int)
	for range 8 {
		wg.Go(func() {
			for i := range jobs {
				a := racer.post("/console/accounts/invite", url.Values{"email": {fmt.Sprintf("race%03d@elsewhere.test", i)}, "role": {"tenant_reader"}})
				mu.Lock()
				raced[a.status]++
				mu.Unlock()
			}
		})
	}
	for i := range n {
		jobs <- i
	}
	close(jobs)
	wg.Wait()
	racedRows := w.scalar(`SELECT count(*) FROM console_invites WHERE tenant_id = $1`, racerTenant)

	// Timing, on its own: more teams, each sending its hour's invitations
	// alternately to an address with an account and a new one (ABBA, so
	// drift on the shared machine falls on both alike).
	var sExisting, sNew []time.Duration
	for k := range figure.N(5, 2) {
		tb := w.browser(fmt.Sprintf("198.51.100.%d", 20+k))
		tb.signUp(fmt.Sprintf("Timer %d", k), fmt.Sprintf("admin@timer%d.test", k))
		tb.get("/console/accounts")
		for i := range perHour {
			exists := (i%4 == 0 || i%4 == 3) != (k%2 == 1)
			email := fmt.Sprintf("t%d-%02d@elsewhere.test", k, i)
			if exists {
				email = existing[i%len(existing)]
			}
			a := tb.postFollow("/console/accounts/invite", url.Values{"email": {email}, "role": {"tenant_reader"}})
			if a.status != http.StatusOK {
				t.Errorf("timing team %d, invitation %d (%s): %d %q", k, i, email, a.status, formError(a.body))
				continue
			}
			if exists {
				sExisting = append(sExisting, a.elapsed)
			} else {
				sNew = append(sNew, a.elapsed)
			}
		}
	}

	wantCreated := min(n, perHour)
	timing := alike(median(sExisting), median(sNew))
	pass := len(wrong) == 0 && created == wantCreated && refused == n-wantCreated && len(createdPages) == 1 &&
		len(refusedPages) <= 1 && badRetry == 0 && rows == int64(wantCreated) && listed == wantCreated &&
		createdExisting > 0 && timing &&
		acceptExisting.status == http.StatusConflict && acceptNew.status == http.StatusSeeOther && stillOne == 1 &&
		racedRows == int64(wantCreated) && raced[http.StatusSeeOther] == wantCreated && raced[http.StatusTooManyRequests] == n-wantCreated
	for _, s := range wrong {
		t.Errorf("invitation answered out of pattern: %s", s)
	}
	figure.Record(t, figure.Figure{
		Item: 107,
		Name: "Email enumeration through invitations",
		Figure: fmt.Sprintf("%d invitations in %s (%d to addresses with accounts elsewhere): %d answered 303 to a page showing a link once, %d distinct pages; "+
			"%d refused 429, %d distinct pages, %d without Retry-After; %d rows and %d listed (want %d); "+
			"8-connection burst of %d: %d created, %d refused, %d rows; median answer %.1f ms to addresses with accounts vs %.1f ms new (%d + %d alternated)",
			n, burst.Round(time.Millisecond), countTrue(isExisting), created, len(createdPages), refused, len(refusedPages), badRetry,
			rows, listed, wantCreated, n, raced[http.StatusSeeOther], raced[http.StatusTooManyRequests], racedRows,
			ms(median(sExisting)), ms(median(sNew)), len(sExisting), len(sNew)),
		Target: fmt.Sprintf("every address answered alike (same status, same page but for its link, medians within 2x or 5 ms); %d per team per hour, "+
			"the rest refused with Retry-After and no row", perHour),
		Pass: pass,
		Details: fmt.Sprintf("The real binary behind PERPETUITY_TRUSTED_PROXIES=127.0.0.1. A tenant admin sends invitations one after another: "+
			"new addresses mixed with three other teams' admins, another team's member and the platform admin (some upper-cased), "+
			"at every fourth position. Pages compared with the link and the tables (which list the address) taken out. "+
			"Rows counted in console_invites as the database owner. "+
			"What remains: an invitation to an address with an account cannot be accepted (409 at the link: %d; the account stays in its team: %d), "+
			"and a link for a new address can (%d), so whoever holds a link learns about that one address when trying it, "+
			"at most %d addresses per team per hour (100 a day). A second team sent %d invitations from 8 connections at once. Timing measured apart: further teams each sent their %d "+
			"invitations alternating (ABBA) addresses with accounts and new ones.",
			acceptExisting.status, stillOne, acceptNew.status, perHour, n, perHour),
	})
	if !pass {
		t.Errorf("invitation enumeration: target missed (timing alike %v, accept existing %d, accept new %d, raced %v rows %d)",
			timing, acceptExisting.status, acceptNew.status, raced, racedRows)
	}
}

func countTrue(bs []bool) int {
	n := 0
	for _, b := range bs {
		if b {
			n++
		}
	}
	return n
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
