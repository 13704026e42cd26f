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
	perAccountAll = 20 // failures per account from browsers without its device cookie, per 15 minutes
	perAddress    = 20 // failures per client address on any account, per 15 minutes
)

// TestLockoutByAnyone is item 110: an attacker who knows an admin's
// address sends wrong passwords for it from many addresses, eight at a
// time. Then the owner signs in from the browser it used before (holding
// its device cookie), at its usual address and at a new one: both must
// succeed at once. A fresh browser at a fresh address meets the account's
// limit for unknown browsers, which is what the attacker used up. Also
// measured: how many of the attacker's guesses were checked at all, that
// one address still cannot spray many accounts, and that an unknown
// address and a wrong password read and take alike.
func TestLockoutByAnyone(t *testing.T) {
	t.Parallel()
	w := startWorld(t)
	addresses, each := figure.N(100, 10), figure.N(5, 3)
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
		jobs <- attempt{fmt.Sprintf("10.66.%d.%d", i%addresses/250, 1+i%addresses%250), "guess number " + strconv.Itoa(i)}
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
	freshRetry, _ := strconv.Atoi(fresh.header.Get("Retry-After"))

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
	pass := hasDevice && ownerOK && checked <= perAccountAll && statuses[http.StatusUnauthorized]+statuses[http.StatusTooManyRequests] == total &&
		fresh.status == http.StatusTooManyRequests && freshRetry > 0 &&
		spray[http.StatusUnauthorized] == perAddress && spray[http.StatusTooManyRequests] == 5 && sameAnswer && timing
	var os []string
	for _, o := range owners {
		os = append(os, fmt.Sprintf("%s: %d in %.0f ms", o.name, o.status, ms(o.took)))
	}
	figure.Record(t, figure.Figure{
		Item: 110,
		Name: "Lockout by anyone",
		Figure: fmt.Sprintf("%d wrong passwords for one admin from %d addresses in %s: %d checked (401), %d refused (429); then %s; "+
			"a fresh browser at a fresh address: %d, Retry-After %d s; one address spraying %d unknown accounts: %d checked, %d refused; "+
			"one at a time, median 401 %.1f ms wrong password vs %.1f ms no such account, same page %v",
			total, addresses, attack.Round(time.Millisecond), statuses[http.StatusUnauthorized], statuses[http.StatusTooManyRequests],
			strings.Join(os, ", "), fresh.status, freshRetry, perAddress+5, spray[http.StatusUnauthorized], spray[http.StatusTooManyRequests],
			ms(median(tWrong)), ms(median(tUnknown)), sameAnswer),
		Target: fmt.Sprintf("the owner's known browser signs in at once from any address; at most %d guesses per account per 15 minutes (%d a day) "+
			"from browsers without its device cookie; %d failures per address; no such account answered like a wrong password",
			perAccountAll, 4*perAccountAll, perAddress),
		Pass: pass,
		Details: "The real binary behind PERPETUITY_TRUSTED_PROXIES=127.0.0.1, addresses set in X-Forwarded-For, real argon2id. " +
			"The owner signed up and signed in from its browser (which then holds its device cookie, an HMAC of account, time and nonce keyed with the " +
			"account's password hash), then the attacker sent its guesses, each from a fresh browser, eight at a time. " +
			"A browser with the account's device cookie is throttled on its own failures only (5 per 15 minutes, 20 a day); any other attempt by the " +
			"account's failures from its address (5), the address's on any account (20) and the account's from every such browser together (20, 80 a day): " +
			"the last is what the attacker used up, and it holds back only browsers the owner has not signed in from, which get 429 with Retry-After " +
			"until the window frees. Counts are taken under a lock per scope before the password is checked, so concurrent guesses cannot slip past.",
	})
	if !pass {
		t.Errorf("lockout: target missed (device cookie %v, owners %v, checked %d, fresh %d, spray %v, same answer %v, timing alike %v)",
			hasDevice, owners, checked, fresh.status, spray, sameAnswer, timing)
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
