// Package keyscope is issue 15, item 114: key scopes, against the real
// binary through the official SDKs. A key pinned to its memory user
// (alice) that names another (bob) must get nothing of bob's memory: a
// header or import line naming bob is refused with a 403 in the caller's
// dialect before anything is stored, forwarded or created; the API user
// field (a hint harnesses set on their own) is ignored and the request runs
// as alice; the memory tools run as alice, so asking them for bob's
// conversation or item by id finds nothing of his. A tenant-wide key of the
// same tenant still reads bob.
package keyscope

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/perpetuity/perpetuity/e2e/reliability/figure"
	"github.com/perpetuity/perpetuity/e2e/reliability/internal/harness"
)

const question = "What is the vault code for project Heron?"

// tally is the run's ledger.
type tally struct {
	attempts, refusals, refusedInDialect, ignored int
	toolsRun                                      int      // tool calls whose result reached the provider
	leaks                                         []string // bob's canaries seen by alice, with where
	forwardedRefusals                             int      // refused attempts that still reached the provider
	wideTried, wideRead                           int
}

func (tl *tally) leak(what string, found []string) {
	if len(found) > 0 {
		tl.leaks = append(tl.leaks, fmt.Sprintf("%s: %v", what, found))
	}
}

// attempt is one request with alice's pinned key.
type attempt struct {
	name   string
	refuse bool // must be a 403; otherwise must succeed as alice
	tool   bool // the fake calls a memory tool in round one
	run    func(ctx context.Context, nonce string) (outcome, func(outcome) bool)
}

func TestPinnedKeyCannotReadAnotherUser(t *testing.T) {
	t.Parallel()
	reps := figure.N(50, 1)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	w := startWorld(t)
	if w.aliceScope != "user" {
		t.Errorf("tenant create --json printed scope %q for the first key, want user (pinned)", w.aliceScope)
	}
	seed(ctx, t, w)
	bobItem := w.scalar(ctx, `SELECT min(i.id) FROM items i JOIN memory_users u ON u.tenant_id = i.tenant_id AND u.id = i.user_id
		WHERE i.tenant_id = $1 AND u.name = 'bob' AND i.body LIKE 'Note:%'`, w.tenant)
	bobConv := w.scalar(ctx, `SELECT min(c.id) FROM conversations c JOIN memory_users u ON u.tenant_id = c.tenant_id AND u.id = c.user_id
		WHERE c.tenant_id = $1 AND u.name = 'bob'`, w.tenant)
	// Bob's seeded replies are captured after their responses went out:
	// count his messages once all have landed. The two imports' lines
	// hold a reply each and are stored before their 200, so they count
	// too: waiting for two alone once let a proxied reply land during
	// the attempts.
	const seededReplies = 4 // two proxied turns, two imported lines
	for deadline := time.Now().Add(15 * time.Second); w.bobsReplies(ctx) < seededReplies; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("bob's %d seeded replies not stored after 15 s (%d)", seededReplies, w.bobsReplies(ctx))
		}
	}
	bobBefore := w.bobsMessages(ctx)

	tl := &tally{}
	for rep := range reps {
		for _, a := range attempts(w, bobItem, bobConv) {
			nonce := fmt.Sprintf("a%d-%s", rep, strings.ReplaceAll(a.name, " ", "-"))
			o, inDialect := a.run(ctx, nonce)
			tl.attempts++
			if o.err != nil {
				t.Fatalf("%s: %v", a.name, o.err)
			}
			tl.leak(a.name+" response", w.bobsIn(o.body))
			up := w.upstream(nonce)
			for _, r := range up {
				tl.leak(a.name+" provider request", w.bobsIn(string(r.Body)))
			}
			switch {
			case a.refuse:
				tl.refusals++
				if inDialect(o) {
					tl.refusedInDialect++
				} else {
					t.Errorf("%s: want a 403 in the caller's dialect, got %d %q %q: %.300s", a.name, o.status, o.errType, o.code, o.body)
				}
				if len(up) > 0 {
					tl.forwardedRefusals++
					t.Errorf("%s: refused, yet %d provider requests", a.name, len(up))
				}
			case o.ok():
				tl.ignored++
				// Answered, and as alice: the conversation the request
				// landed in is hers.
				if owner := w.convOwner(ctx, "h:c-"+nonce); owner != "alice" {
					t.Errorf("%s: answered as %q, want alice", a.name, owner)
				}
				if a.tool {
					if len(up) == 2 && len(harness.ToolResults(up[1])) > 0 {
						tl.toolsRun++
					} else {
						t.Errorf("%s: the memory tool did not run (%d provider requests)", a.name, len(up))
					}
				}
			default:
				t.Errorf("%s: want 200 as alice, got %d: %.300s", a.name, o.status, o.body)
			}
		}
	}
	bobAfter := w.bobsMessages(ctx)
	if bobAfter != bobBefore {
		t.Errorf("bob's stored messages went from %d to %d during the pinned key's attempts", bobBefore, bobAfter)
	}
	created := w.scalar(ctx, `SELECT count(*) FROM memory_users WHERE tenant_id = $1 AND name NOT IN ('alice', 'bob')`, w.tenant)
	if created != 0 {
		t.Errorf("the pinned key's refused attempts created %d memory users", created)
	}
	halfImported := w.scalar(ctx, `SELECT count(*) FROM items WHERE tenant_id = $1 AND body LIKE '%mixed import%'`, w.tenant)
	if halfImported != 0 {
		t.Errorf("a refused import stored %d items of its allowed lines", halfImported)
	}

	// The tenant-wide key of the same tenant still names any user, by
	// header and (user-field identity is on) by the API user field.
	for rep := range reps {
		for i, d := range dialects {
			for _, byHint := range []bool{false, true} {
				c := call{key: w.wide, text: question, nonce: fmt.Sprintf("w%d-%s-%v", rep, d.name, byHint), conversation: "wide-" + d.name}
				if byHint {
					c.hint = "bob"
				} else {
					c.user = "bob"
				}
				c.stream = (rep+i)%2 == 1
				o := d.send(ctx, w, c)
				tl.wideTried++
				if o.ok() && len(w.bobsIn(o.body)) > 0 {
					tl.wideRead++
				} else {
					t.Errorf("tenant-wide key as bob (%s, by hint %v): %d, bob's canaries %v: %.300s", d.name, byHint, o.status, w.bobsIn(o.body), o.body)
				}
			}
		}
	}

	for i, l := range tl.leaks {
		if i == 20 {
			t.Errorf("... and %d more", len(tl.leaks)-20)
			break
		}
		t.Errorf("LEAK: %s", l)
	}
	pass := len(tl.leaks) == 0 && tl.refusedInDialect == tl.refusals && tl.forwardedRefusals == 0 && tl.toolsRun == 10*reps &&
		bobAfter == bobBefore && created == 0 && halfImported == 0 && tl.wideRead == tl.wideTried && w.aliceScope == "user"
	figure.Record(t, figure.Figure{
		Item: 114, Name: "Key scope: a pinned key reads only its own user",
		Figure: fmt.Sprintf("%d sightings of bob's canaries in %d attempts by alice's pinned key (responses and provider requests); %d of %d refusals a 403 in the caller's dialect, %d forwarded; %d user-field hints and memory-tool calls (%d tools run) answered as alice; tenant-wide key read bob in %d of %d",
			len(tl.leaks), tl.attempts, tl.refusedInDialect, tl.refusals, tl.forwardedRefusals, tl.ignored, tl.toolsRun, tl.wideRead, tl.wideTried),
		Target: "0 canaries; every header or import line naming another user refused (403, caller's dialect) with nothing stored, forwarded or created; a tenant-wide key still reads any user",
		Pass:   pass,
		Details: fmt.Sprintf("One tenant: alice's key from `tenant create` (pinned), bob's pinned key, a tenant-wide key; user-field identity on. "+
			"bob's %d canaries stored through chat, messages and import. Per round (%d rounds): X-Perpetuity-User bob, Bob and a new name over chat, messages and responses, "+
			"JSON and stream (official SDKs); the same header on import and on a memory-tool call; import lines naming bob (one mixed with an own line); "+
			"the API user field bob in all three dialects; memory_search, memory_search in bob's conversation, memory_chain on bob's item, memory_count, memory_reopen as alice. "+
			"Every response and every provider request of each attempt scanned for bob's canaries; bob's stored messages %d before and %d after; memory users created %d.",
			len(w.bobCanaries), reps, bobBefore, bobAfter, created),
	})
	if !pass {
		t.Errorf("item 114 misses its target")
	}
}

// seed stores alice's and bob's facts: bob's through his own pinned key in
// both dialects and by import, and through the tenant-wide key by import.
func seed(ctx context.Context, t *testing.T, w *world) {
	t.Helper()
	fact := func(c string) string { return "Note: the vault code for project Heron is " + c + "." }
	w.aliceCanary = canary("ALICE", 0)
	for i := range 4 {
		w.bobCanaries = append(w.bobCanaries, canary("BOB", i))
	}
	for i, d := range dialects[:2] {
		if o := d.send(ctx, w, call{key: w.bob, text: fact(w.bobCanaries[i]), nonce: "seed-bob-" + d.name, conversation: "bob-notes-" + d.name}); !o.ok() {
			t.Fatalf("seed bob through %s: %d %.300s", d.name, o.status, o.body)
		}
	}
	if o := w.importHTTP(ctx, w.bob, "", "seed-bob-import", line("bob-import", "", fact(w.bobCanaries[2]))); o.status != http.StatusOK {
		t.Fatalf("seed bob by import: %d %.300s", o.status, o.body)
	}
	if o := w.importHTTP(ctx, w.wide, "", "seed-wide-import", line("bob-wide-import", "bob", fact(w.bobCanaries[3]))); o.status != http.StatusOK {
		t.Fatalf("tenant-wide key imports for bob: %d %.300s", o.status, o.body)
	}
	own := call{key: w.alice, user: "alice", text: fact(w.aliceCanary), nonce: "seed-alice", conversation: "alice-notes"}
	if o := dialects[0].send(ctx, w, own); !o.ok() {
		t.Fatalf("alice repeating her own user: %d %.300s", o.status, o.body)
	}
	// Her own memory answers her: the pinned key is not broken, only bounded.
	o := dialects[1].send(ctx, w, call{key: w.alice, text: question, nonce: "alice-recall", conversation: "alice-recall"})
	if !o.ok() || !strings.Contains(o.body, w.aliceCanary) {
		t.Fatalf("alice's pinned key does not recall her own fact: %d %.300s", o.status, o.body)
	}
}

// attempts is one round of alice's attacks on bob's memory.
func attempts(w *world, bobItem, bobConv int64) []attempt {
	var out []attempt
	for _, d := range dialects {
		for _, stream := range []bool{false, true} {
			for _, name := range []string{"bob", "Bob", "mallory"} {
				out = append(out, attempt{fmt.Sprintf("%s stream=%v header %s", d.name, stream, name), true, false,
					func(ctx context.Context, nonce string) (outcome, func(outcome) bool) {
						u := name
						if name == "mallory" {
							u = "mallory-" + nonce
						}
						o := d.send(ctx, w, call{key: w.alice, user: u, text: question, nonce: nonce, stream: stream, conversation: "c-" + nonce})
						return o, func(o outcome) bool { return permissionRefusal(d, o) }
					}})
			}
		}
		out = append(out, attempt{d.name + " user field bob", false, false, func(ctx context.Context, nonce string) (outcome, func(outcome) bool) {
			return d.send(ctx, w, call{key: w.alice, hint: "bob", text: question, nonce: nonce, conversation: "c-" + nonce}), nil
		}})
	}
	for _, d := range dialects[:2] {
		out = append(out, attempt{d.name + " memory tool with header bob", true, false, func(ctx context.Context, nonce string) (outcome, func(outcome) bool) {
			o := d.send(ctx, w, call{key: w.alice, user: "bob", text: question, nonce: nonce, conversation: "c-" + nonce,
				tool: "memory_search", args: `{"query":"vault code project Heron","limit":50}`})
			return o, func(o outcome) bool { return permissionRefusal(d, o) }
		}})
		tools := []struct{ name, args string }{
			{"memory_search", `{"query":"vault code project Heron","limit":50}`},
			{"memory_search", fmt.Sprintf(`{"query":"vault code project Heron","conversation":%d,"limit":50}`, bobConv)},
			{"memory_chain", fmt.Sprintf(`{"item":%d,"direction":"around","depth":10}`, bobItem)},
			{"memory_count", `{"query":"vault code Heron","by":"speaker","examples":5}`},
			{"memory_reopen", `{"limit":100}`},
		}
		for i, tc := range tools {
			out = append(out, attempt{fmt.Sprintf("%s %s %d as alice", d.name, tc.name, i), false, true, func(ctx context.Context, nonce string) (outcome, func(outcome) bool) {
				return d.send(ctx, w, call{key: w.alice, text: question, nonce: nonce, conversation: "c-" + nonce, tool: tc.name, args: tc.args}), nil
			}})
		}
	}
	out = append(out,
		attempt{"import with header bob", true, false, func(ctx context.Context, nonce string) (outcome, func(outcome) bool) {
			return w.importHTTP(ctx, w.alice, "bob", nonce, line("i-"+nonce, "", "Note: bob's vault code is now 0000.")), importRefusal
		}},
		attempt{"import line naming bob", true, false, func(ctx context.Context, nonce string) (outcome, func(outcome) bool) {
			return w.importHTTP(ctx, w.alice, "", nonce, line("i-"+nonce, "bob", "Note: bob's vault code is now 0000.")), importRefusal
		}},
		attempt{"import mixing an own line and one naming bob", true, false, func(ctx context.Context, nonce string) (outcome, func(outcome) bool) {
			return w.importHTTP(ctx, w.alice, "", nonce,
				line("i-own-"+nonce, "alice", "A mixed import line of alice's own."),
				line("i-bob-"+nonce, "bob", "A mixed import line for bob.")), importRefusal
		}},
	)
	return out
}
