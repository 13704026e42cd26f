package edgeinput

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/perpetuity/perpetuity/e2e/reliability/figure"
	"github.com/perpetuity/perpetuity/e2e/rig"
)

func randomName(r *rand.Rand, prefix string) string {
	const letters = "abcdefghijklmnopqrstuvwxyz0123456789"
	b := []byte(prefix)
	for range 12 {
		b = append(b, letters[r.IntN(len(letters))])
	}
	return string(b)
}

// rateLimited reports whether a is the dialect's rate-limit refusal with a
// usable Retry-After.
func rateLimited(d dialect, a answer) bool {
	typ, _, shaped := dialectError(d, a.body)
	retry, _ := strconv.Atoi(a.header.Get("Retry-After"))
	if a.status != http.StatusTooManyRequests || !shaped || retry < 1 {
		return false
	}
	if d.anthropic {
		return typ == "rate_limit_error"
	}
	return strings.Contains(string(a.body), "rate_limit_exceeded")
}

func TestNothingStoredAndUserBound(t *testing.T) {
	perDay := figure.N(25, 5)
	w := startWorld(t, "PERPETUITY_KEY_USERS_PER_DAY="+strconv.Itoa(perDay))
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	r := rand.New(rand.NewPCG(15, 12))

	// Probes and Capture: off with random user names, in every dialect,
	// with named and derived conversations.
	tn := rig.CreateTenant(t, w.env, "edge nothing stored", "--scope", "tenant")
	// A user with memory, so a probe naming an existing user is seen to
	// read it.
	zoe := map[string]string{"X-Perpetuity-User": "zoe", "X-Perpetuity-Conversation": "zoe-facts"}
	if a := w.post(ctx, tn.Key, dialects[0], zoe, chat{live: "My boat is called Marigold."}.body(dialects[0])); a.status != 200 {
		t.Fatalf("seed zoe: %d %s", a.status, a.body)
	}
	served := int64(1)
	w.settled(tn.TenantID, served)
	before := w.rows(tn.TenantID)
	n := figure.N(100, 20)
	var probeFail, offFail int
	kinds := []struct {
		name   string
		header map[string]string
	}{
		{"probe", map[string]string{"X-Perpetuity-Mode": "probe"}},
		{"capture off", map[string]string{"X-Perpetuity-Capture": "off"}},
	}
	for _, k := range kinds {
		for i := 0; i < n; i++ {
			d := dialects[i%len(dialects)]
			h := map[string]string{"X-Perpetuity-User": randomName(r, "ghost-")}
			for hk, hv := range k.header {
				h[hk] = hv
			}
			if i%2 == 0 {
				h["X-Perpetuity-Conversation"] = randomName(r, "conv-")
			}
			if i%5 == 4 {
				h["X-Perpetuity-Recall"] = "off"
			}
			a := w.post(ctx, tn.Key, d, h, chat{live: "Do you remember my boat? " + randomName(r, "q-")}.body(d))
			if a.status != 200 {
				t.Errorf("%s %d (%s): %d %s", k.name, i, d.name, a.status, a.body)
				if k.name == "probe" {
					probeFail++
				} else {
					offFail++
				}
				continue
			}
			served++
		}
	}
	// The key's own user and an existing one, in a new conversation each.
	for i, u := range []string{"", "zoe"} {
		h := map[string]string{"X-Perpetuity-Mode": "probe", "X-Perpetuity-Conversation": "new-" + strconv.Itoa(i)}
		if u != "" {
			h["X-Perpetuity-User"] = u
		}
		a := w.post(ctx, tn.Key, dialects[1], h, chat{live: "What is my boat called?"}.body(dialects[1]))
		if a.status != 200 {
			t.Fatalf("probe as %q: %d %s", u, a.status, a.body)
		}
		served++
		if items, _ := strconv.Atoi(a.header.Get("X-Perpetuity-Frame-Items")); u == "zoe" && items == 0 {
			t.Errorf("a probe as zoe showed none of zoe's memory")
		}
	}
	w.settled(tn.TenantID, served)
	after := w.rows(tn.TenantID)
	usersMade, convsMade := after.Users-before.Users, after.Conversations-before.Conversations
	msgsMade := after.Messages - before.Messages
	nothingOK := usersMade == 0 && convsMade == 0 && msgsMade == 0 && after.Items == before.Items && probeFail+offFail == 0
	if !nothingOK {
		t.Errorf("%d probes and %d capture-off requests made %d users, %d conversations, %d messages (rows %+v -> %+v)", n, n, usersMade, convsMade, msgsMade, before, after)
	}

	// New users per key per day.
	bt := rig.CreateTenant(t, w.env, "edge user bound", "--scope", "tenant")
	base := w.rows(bt.TenantID)
	admitted, refusedOK, refused := 0, 0, 0
	var made []string
	for i := 0; i < perDay+3; i++ {
		d := dialects[i%len(dialects)]
		name := randomName(r, "new-")
		a := w.post(ctx, bt.Key, d, map[string]string{"X-Perpetuity-User": name}, chat{live: "hello from " + name}.body(d))
		switch {
		case a.status == 200:
			admitted++
			made = append(made, name)
		case rateLimited(d, a):
			refused++
			refusedOK++
		default:
			refused++
			t.Errorf("new user %d (%s): %d %s", i, d.name, a.status, a.body)
		}
	}
	// What a refusal leaves alone: users made already, the key's own user,
	// another tenant's key; the import route counts against the same bound.
	existingOK := len(made) > 0 && w.post(ctx, bt.Key, dialects[0], map[string]string{"X-Perpetuity-User": made[0]}, chat{live: "again"}.body(dialects[0])).status == 200
	ownOK := w.post(ctx, bt.Key, dialects[1], nil, chat{live: "as myself"}.body(dialects[1])).status == 200
	other := rig.CreateTenant(t, w.env, "edge user bound, other", "--scope", "tenant")
	otherOK := w.post(ctx, other.Key, dialects[0], map[string]string{"X-Perpetuity-User": randomName(r, "new-")}, chat{live: "hi"}.body(dialects[0])).status == 200
	imp := dialect{name: "import", path: "/perpetuity/import"}
	line := `{"conversation":"imp","user":"` + randomName(r, "imp-") + `","turns":[{"role":"user","text":"hi","at":"2024-01-01T00:00:00Z"}]}` + "\n"
	impLine := w.post(ctx, bt.Key, imp, nil, []byte(line))
	impHeader := w.post(ctx, bt.Key, imp, map[string]string{"X-Perpetuity-User": randomName(r, "imp-")},
		[]byte(`{"conversation":"imp2","turns":[{"role":"user","text":"hi","at":"2024-01-01T00:00:00Z"}]}`+"\n"))
	importOK := impLine.status == http.StatusTooManyRequests && impHeader.status == http.StatusTooManyRequests
	if !importOK {
		t.Errorf("import past the bound: a line naming a new user %d %s; a new X-Perpetuity-User %d %s", impLine.status, impLine.body, impHeader.status, impHeader.body)
	}
	usersNow := w.rows(bt.TenantID).Users - base.Users
	boundOK := admitted == perDay && refused == 3 && refusedOK == refused && usersNow == int64(perDay) && existingOK && ownOK && otherOK && importOK
	if !boundOK {
		t.Errorf("bound %d: %d admitted, %d refused (%d well formed), %d users made; existing %v own %v other tenant %v import %v",
			perDay, admitted, refused, refusedOK, usersNow, existingOK, ownOK, otherOK, importOK)
	}

	pass := nothingOK && boundOK
	figure.Record(t, figure.Figure{
		Item: 112,
		Name: "Probe and Capture off store nothing; new users per key per day",
		Figure: fmt.Sprintf("%d probes and %d capture-off requests with random user names (3 dialects, named and derived conversations): %d users, %d conversations, %d messages created; "+
			"PERPETUITY_KEY_USERS_PER_DAY=%d: %d/%d new users admitted, %d/%d excess refused with 429 in the dialect, %d users made; import refused past the bound: %v",
			n, n, usersMade, convsMade, msgsMade, perDay, admitted, perDay+3, refusedOK, refused, usersNow, importOK),
		Target: "probe mode and Capture: off create no memory user and no conversation (an existing user's memory is still read); a key creates at most PERPETUITY_KEY_USERS_PER_DAY users per UTC day, the excess refused in the caller's dialect with nothing stored",
		Pass:   pass,
		Details: "rows of memory_users, conversations, messages and items counted at the database before and after, once every request was recorded; a probe as an existing user showed its memory; " +
			"past the bound, requests naming existing users, the key's own user and another tenant's key were still served, and the import route (a line's user, X-Perpetuity-User) was refused with 429",
	})
	if !pass {
		t.Fatal("requests that store nothing created rows, or the user bound did not hold")
	}
}
