package accounts

import (
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/perpetuity/perpetuity/e2e/reliability/figure"
)

// The service's defaults (web.Config).
const (
	perAccountAddress = 5  // free failures per account and address before each further attempt waits (30 s, doubling)
	perAddress        = 20 // failures per client address on any account, per 15 minutes
)

// TestLockoutByAnyone is item 110 (and issue 18, finding 2): an attacker
// who knows an admin's address sends wrong passwords for it from many
// addresses, eight at a time. Then the owner signs in from the browser it
// used before (holding its device cookie), at its usual address and at a
// new one, and from a fresh browser at a fresh address: all must succeed
// at once, since failures slow down only the addresses they came from and
// lock no account. Also measured: how many of the attacker's guesses were
// checked at all (the free ones of each address; the rest wait), that one
// address still cannot spray many accounts, and that an unknown address
// and a wrong password read and take alike.
func TestLockoutByAnyone(t *testing.T) {
	t.Parallel()
	w := startWorld(t)
	addresses, each := figure.N(100, 10), figure.N(8, 7)
	const victim = "owner@lockout.test"

	owner := w.browser("192.0.2.1")
	owner.signUp("Lockout", victim)
	if a := owner.signIn(victim, password); a.status != http.StatusSeeOther {
		t.Fatalf("owner's sign-in before the attack: %d", a.status)
	}
	hasDevice := owner.cookie("pp_device") != ""

	// The attack.
	type attempt struct{ addr, pw string }
	jobs := make(chan attempt)
	var mu sync.Mutex
	statuses := map[int]int{}
	checked := 0
	var wg sync.WaitGroup
	start := time.Now()
	for range 8 {
		wg.Go(func() {
			for j := range jobs {
				a := w.browser(j.addr).signIn(victim, j.pw)
				mu.Lock()
				statuses[a.status]++
				if a.status == http.StatusUnauthorized {
					checked++
				}
				mu.Unlock()
			}
		})
	}
	for i := range addresses * each {
		// An address's guesses come together, as a script's would: its
		// free ones are checked, the rest arrive inside the first wait.
		jobs <- attempt{fmt.Sprintf("10.66.%d.%d", i/each/250, 1+i/each%250), "guess number " + strconv.Itoa(i)}
	}
	close(jobs)
	wg.Wait()
	attack := time.Since(start)

	// The owner, from the browser it used, at its address and at a new one.
	type result struct {
		name   string
		status int
		took   time.Duration
	}
	var owners []result
	for _, addr := range []string{"192.0.2.1", "203.0.113.77"} {
		owner.addr = addr
		a := owner.signIn(victim, password)
		owners = append(owners, result{"owner's browser at " + addr, a.status, a.elapsed})
	}
	fresh := w.browser("203.0.113.88").signIn(victim, password)
	again := w.browser("10.66.0.1").signIn(victim, "one more guess")
	againRetry, _ := strconv.Atoi(again.header.Get("Retry-After"))

	// One address spraying unknown accounts (credential stuffing).
	sprayer := w.browser("10.99.0.1")
	spray := map[int]int{}
	for i := range perAddress + 5 {
		spray[sprayer.signIn(fmt.Sprintf("nobody%02d@lockout.test", i), "guess number "+strconv.Itoa(i)).status]++
	}

	// No such account against a wrong password, one at a time, alternating,
	// each from a fresh browser and address, on another team's admin.
	const known = "other@lockout.test"
	w.browser("192.0.2.2").signUp("Other", known)
	var tWrong, tUnknown []time.Duration
	pages := map[bool]map[string]int{true: {}, false: {}}
	for i := range figure.N(10, 6) {
		for _, exists := range []bool{i%2 == 0, i%2 != 0} {
			email := known
			if !exists {
				email = fmt.Sprintf("ghost%02d@lockout.test", i)
			}
			a := w.browser(fmt.Sprintf("10.77.0.%d", 2*i+btoi(exists)+1)).signIn(email, "guess number "+strconv.Itoa(i))
			if a.status != http.StatusUnauthorized {
				t.Errorf("timing sample %s: %d, want 401", email, a.status)
				continue
			}
			pages[exists][normalize(a.body, email)]++
			if exists {
				tWrong = append(tWrong, a.elapsed)
			} else {
				tUnknown = append(tUnknown, a.elapsed)
			}
		}
	}
	sameAnswer := len(pages[true]) == 1 && len(pages[false]) == 1
	for k := range pages[true] {
		sameAnswer = sameAnswer && pages[false][k] > 0
	}
	timing := alike(median(tWrong), median(tUnknown))

	total := addresses * each
	ownerOK := true
	for _, o := range owners {
		ownerOK = ownerOK && o.status == http.StatusSeeOther
	}
	pass := hasDevice && ownerOK && checked == addresses*min(each, perAccountAddress) &&
		statuses[http.StatusUnauthorized]+statuses[http.StatusTooManyRequests] == total &&
		fresh.status == http.StatusSeeOther && again.status == http.StatusTooManyRequests && againRetry > 0 &&
		spray[http.StatusUnauthorized] == perAddress && spray[http.StatusTooManyRequests] == 5 && sameAnswer && timing
	var os []string
	for _, o := range owners {
		os = append(os, fmt.Sprintf("%s: %d in %.0f ms", o.name, o.status, ms(o.took)))
	}
	figure.Record(t, figure.Figure{
		Item: 110,
		Name: "Lockout by anyone",
		Figure: fmt.Sprintf("%d wrong passwords for one admin from %d addresses in %s: %d checked (401), %d refused (429); then %s; "+
			"a fresh browser at a fresh address: %d; one more guess from an attacking address: %d, Retry-After %d s; "+
			"one address spraying %d unknown accounts: %d checked, %d refused; "+
			"one at a time, median 401 %.1f ms wrong password vs %.1f ms no such account, same page %v",
			total, addresses, attack.Round(time.Millisecond), statuses[http.StatusUnauthorized], statuses[http.StatusTooManyRequests],
			strings.Join(os, ", "), fresh.status, again.status, againRetry, perAddress+5, spray[http.StatusUnauthorized], spray[http.StatusTooManyRequests],
			ms(median(tWrong)), ms(median(tUnknown)), sameAnswer),
		Target: fmt.Sprintf("the owner signs in at once from any address, in a browser it used or a fresh one; %d guesses per account and address "+
			"before each further one waits (30 s, doubling up to an hour); %d failures per address; no such account answered like a wrong password",
			perAccountAddress, perAddress),
		Pass: pass,
		Details: "The real binary behind PERPETUITY_TRUSTED_PROXIES=127.0.0.1, addresses set in X-Forwarded-For, real argon2id. " +
			"The owner signed up and signed in from its browser (which then holds its device cookie, an HMAC of account, time and nonce keyed with the " +
			"account's password hash), then the attacker sent its guesses, each from a fresh browser, eight at a time. " +
			"Failures on an account are counted per client address, or per browser holding its device cookie: after 5 in a day each further " +
			"attempt from there waits 30 s after the one before, doubling up to an hour; nothing locks the account, so the attacker holds back only " +
			"the addresses it uses. An address's failures on any account are limited besides (20 per 15 minutes, 80 a day). Admins clear an " +
			"account's failures in the console (audited), and a platform admin or the operator can issue a password reset link. " +
			"Counts are taken under a lock per scope before the password is checked, so concurrent guesses cannot slip past.",
	})
	if !pass {
		t.Errorf("lockout: target missed (device cookie %v, owners %v, checked %d, fresh %d, again %d, spray %v, same answer %v, timing alike %v)",
			hasDevice, owners, checked, fresh.status, again.status, spray, sameAnswer, timing)
	}
}

// normalize takes out of a sign-in page what differs by design: the
// browser's CSRF token and the address it typed.
func normalize(body, email string) string {
	return strings.ReplaceAll(csrfValue.ReplaceAllString(body, `name="_csrf"`), email, "EMAIL")
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}
