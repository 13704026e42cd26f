package memory_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/perpetuity/perpetuity/memory"
	"github.com/perpetuity/perpetuity/memory/store"
)

// TestFrameBesideEqualsFrameAfterCapture holds the frame built beside the
// live question's capture to the one built after it: two tenants with the
// same memory, one asked through Capture then Frame, the other through
// FrameBeside, give the same frame, the same candidates and reasons, and
// the same stored turn, whether the frame's read sees the commit or not
// (a capture held back until the read is surely out).
func TestFrameBesideEqualsFrameAfterCapture(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 1, 2, 3, 4, 0, 0, time.UTC)
	now := time.Date(2026, 1, 5, 3, 4, 0, 0, time.UTC)
	type history func(t *testing.T, f *fixture) memory.Who // returns where the question is asked
	cases := []struct {
		name  string
		setup history
		live  string
		pos   int
	}{
		{"new conversation", func(t *testing.T, f *fixture) memory.Who {
			old := f.who(t, "alice", "trip")
			f.say(t, old, "user", "My passport number is stored in the blue folder", 0)
			f.say(t, old, "assistant", "Noted: blue folder.", 1)
			f.filler(t, f.who(t, "alice", "busy"), 30)
			return f.who(t, "alice", "today")
		}, "Where did I put my passport?", 0},
		{"long conversation", func(t *testing.T, f *fixture) memory.Who {
			w := f.who(t, "alice", "garden")
			for i := range 9 {
				f.say(t, w, []string{"user", "assistant"}[i%2], fmt.Sprintf("turn %d about tomatoes and basil number %d", i, i*7), i)
			}
			return w
		}, "Which turn said basil number 35?", 9},
		{"duplicate of a stored question", func(t *testing.T, f *fixture) memory.Who {
			w := f.who(t, "alice", "retry")
			f.say(t, w, "user", "The boiler code is 4471", 0)
			f.say(t, w, "assistant", "Got it.", 1)
			f.say(t, w, "user", "What is the boiler code?", 2)
			return w
		}, "What is the boiler code?", 2},
	}
	for _, c := range cases {
		for _, held := range []time.Duration{0, 40 * time.Millisecond} {
			t.Run(fmt.Sprintf("%s, capture held %v", c.name, held), func(t *testing.T) {
				t.Parallel()
				ctx := context.Background()
				after, beside := newFixture(t), newFixture(t)
				wa, wb := c.setup(t, after), c.setup(t, beside)
				msg := func(w memory.Who) memory.Message {
					return memory.Message{Who: w, Role: "user", Text: c.live, Position: c.pos, At: at}
				}
				q := func(w memory.Who) memory.FrameQuery {
					return memory.FrameQuery{Who: w, Live: c.live, Now: now, Explain: true}
				}
				ca, err := after.eng.Capture(ctx, msg(wa))
				if err != nil {
					t.Fatal(err)
				}
				qa := q(wa)
				qa.LiveStored, qa.LiveItems = true, ca.ItemIDs
				fa, err := after.eng.Frame(ctx, qa)
				if err != nil {
					t.Fatal(err)
				}
				cb, fb, err := beside.eng.FrameBeside(ctx, q(wb), func() (store.Captured, error) {
					time.Sleep(held)
					return beside.eng.Capture(context.Background(), msg(wb))
				})
				if err != nil {
					t.Fatal(err)
				}
				if len(cb.ItemIDs) != len(ca.ItemIDs) || cb.Duplicate != ca.Duplicate {
					t.Fatalf("captured %d items (duplicate %v) beside, %d (%v) after", len(cb.ItemIDs), cb.Duplicate, len(ca.ItemIDs), ca.Duplicate)
				}
				if a, b := frameText(fa), frameText(fb); a != b {
					t.Fatalf("frames differ\nafter capture:\n%s\nbeside it:\n%s", a, b)
				}
				if fa.Items != fb.Items || fa.Tokens != fb.Tokens || fa.Trimmed != fb.Trimmed || len(fa.Shown) != len(fb.Shown) {
					t.Fatalf("after: %d items %d tokens trimmed %v shown %d; beside: %d %d %v %d",
						fa.Items, fa.Tokens, fa.Trimmed, len(fa.Shown), fb.Items, fb.Tokens, fb.Trimmed, len(fb.Shown))
				}
				if a, b := considered(fa), considered(fb); a != b {
					t.Fatalf("candidates differ\nafter capture:\n%s\nbeside it:\n%s", a, b)
				}
				if strings.Contains(frameText(fb), "【now】") {
					t.Fatalf("the stored question rendered as unstored:\n%s", frameText(fb))
				}
			})
		}
	}
}

// considered lists the explained candidates without their ids (each tenant
// numbers its own items).
func considered(f memory.Frame) string {
	var b strings.Builder
	for _, c := range f.Considered {
		fmt.Fprintf(&b, "%s rank %d heat %.4f %v shown %v tokens %d\n", c.Excerpt, c.Rank, c.Heat, c.Reasons.Codes(), c.Shown, c.Tokens)
	}
	fmt.Fprintf(&b, "left out %d\n", f.Left)
	return b.String()
}

// TestFrameBesideFailedCapture: a capture that fails ends the turn with
// its error, whatever the frame made of it, and only after it returned.
func TestFrameBesideFailedCapture(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	w := f.who(t, "alice", "down")
	f.say(t, w, "user", "Something to find about the database", 0)
	boom := errors.New("database went away")
	returned := false
	_, _, err := f.eng.FrameBeside(context.Background(), memory.FrameQuery{Who: w, Live: "the database?", Now: time.Now()},
		func() (store.Captured, error) {
			time.Sleep(30 * time.Millisecond)
			returned = true
			return store.Captured{}, boom
		})
	if !errors.Is(err, boom) {
		t.Fatalf("err = %v, want the capture's", err)
	}
	if !returned {
		t.Fatal("FrameBeside returned before the capture did")
	}
}
