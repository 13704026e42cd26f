package store_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/perpetuity/perpetuity/memory"
	"github.com/perpetuity/perpetuity/memory/store"
)

// TestAppendedPlacesAfterNewest: a message sent without its history is
// placed after the conversation's newest message. Said again once its
// first asking was answered whole, it is a turn of its own; said again
// while unanswered, or answered only in part, it is a retry; sent again
// with an exchange after it, it is a tool loop's next round, which finds
// the turns stored since.
func TestAppendedPlacesAfterNewest(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := openDB(t)
	nt, err := db.CreateTenantWith(ctx, "append", "alice", store.TenantOptions{Dict: 1})
	if err != nil {
		t.Fatal(err)
	}
	conv, err := db.EnsureConversation(ctx, nt.TenantID, nt.UserID, "chat", "chat")
	if err != nil {
		t.Fatal(err)
	}
	at := time.Now().Add(-time.Hour)
	capture := func(role, text string, appended bool, pos, sentAfter int, interrupted bool) store.Captured {
		t.Helper()
		at = at.Add(time.Second)
		fp := memory.Fingerprint(role, pos, text)
		if appended {
			fp = memory.AppendedDigest(role, text)
		}
		got, err := db.Capture(ctx, store.Capture{TenantID: nt.TenantID, UserID: nt.UserID, ConversationID: conv,
			Role: role, Position: pos, Fingerprint: fp, Appended: appended, SentAfter: sentAfter,
			Interrupted: interrupted, CreatedAt: at, ClockAdvance: 1, Items: []store.CaptureItem{item(text, 1)}})
		if err != nil {
			t.Fatalf("capture %s %q: %v", role, text, err)
		}
		return got
	}
	ask := func(text string, sentAfter int) store.Captured {
		t.Helper()
		return capture("user", text, true, 0, sentAfter, false)
	}
	reply := func(q store.Captured, text string, interrupted bool) store.Captured {
		t.Helper()
		return capture("assistant", text, false, q.Position+1, 0, interrupted)
	}
	want := func(what string, got store.Captured, pos int, duplicate bool) {
		t.Helper()
		if got.Position != pos || got.Duplicate != duplicate {
			t.Fatalf("%s: at %d duplicate %v, want at %d duplicate %v", what, got.Position, got.Duplicate, pos, duplicate)
		}
	}

	first := ask("yes", 0)
	want("the first message", first, 0, false)
	want("asked again unanswered (a retry)", ask("yes", 0), 0, true)
	reply(first, "Done: the tests pass.", false)
	second := ask("yes", 0)
	want("asked again once answered", second, 2, false)
	if slices.Equal(second.ItemIDs, first.ItemIDs) {
		t.Fatalf("a turn of its own has the first asking's items %v", first.ItemIDs)
	}
	reply(second, "Half an ans", true)
	want("asked again after a reply cut short (a retry)", ask("yes", 0), 2, true)
	want("another question", ask("run the linter", 0), 4, false)

	// A tool loop: its round's reply is stored after the question, and the
	// next round sends the question with the exchange after it.
	loop := ask("fix the build", 0)
	want("a tool loop's question", loop, 5, false)
	said := reply(loop, "I'll read the Makefile first.", false)
	round := ask("fix the build", 3)
	want("the loop's next round", round, 5, true)
	if !slices.Equal(round.ItemIDs, loop.ItemIDs) || !slices.Equal(round.SentAfter, said.ItemIDs) {
		t.Fatalf("the loop's next round found %v and %v after it, want %v and %v", round.ItemIDs, round.SentAfter, loop.ItemIDs, said.ItemIDs)
	}

	// Parallel sub-agents of one session: each sends its task with its
	// exchange after it, while the other's task is the newest question.
	taskA, taskB := ask("find the flaky test", 0), ask("profile the build", 0)
	want("a second task beside the first", taskB, taskA.Position+1, false)
	want("the first task's next round", ask("find the flaky test", 3), taskA.Position, true)
	want("the second task's next round", ask("profile the build", 3), taskB.Position, true)

	// A reply is captured after its response, and takes the position after
	// its question's: a question placed meanwhile shares it, and is not
	// answered by it.
	deploy := ask("deploy it", 0)
	status := ask("status?", 0)
	want("a question placed before the last one's reply", status, deploy.Position+1, false)
	reply(deploy, "Deployed.", false)
	want("asked again: the reply at its position answered the one before", ask("status?", 0), status.Position, true)

	// A reply to a request with no question (a tool's output alone) is
	// appended too: after the newest message; the same words again with
	// no question between are a retry's reply; after a question, a reply
	// of their own.
	done := capture("assistant", "Done.", true, 1, 0, false)
	want("a reply with no question", done, status.Position+1, false)
	want("the same reply again", capture("assistant", "Done.", true, 1, 0, false), done.Position, true)
	again := ask("and now?", 0)
	want("a reply after a new question", capture("assistant", "Done.", true, 1, 0, false), again.Position+1, false)

	// Messages at the harness's positions and appended ones share the
	// conversation: an appended one goes after whichever is newest.
	capture("user", "from a client that resends its history", false, 20, 0, false)
	want("after a message at the harness's position", ask("yes", 0), 21, false)
}
