package memory_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/perpetuity/perpetuity/memory"
	"github.com/perpetuity/perpetuity/memory/guard"
	"github.com/perpetuity/perpetuity/memory/store"
)

// TestFrameBesideEqualsFrameAfterCapture holds the frame built beside the
// live question's capture to the one built after it: two tenants with the
// same memory, one asked through Capture then Frame, the other through
// FrameBeside, give the same frame, the same candidates and reasons, and
// the same stored turn, whether the frame's read sees the commit or not
// (a capture held back until the read is surely out), and when the frame
// goes on before the commit (its live items not yet in the store's view).
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
		for _, hold := range []struct {
			name          string
			before, after time.Duration // the capture held before it starts, and between its statements and its commit
			warm          bool          // the arena loaded by a frame before (else the frame's cold load waits for the commit)
		}{{"at once", 0, 0, false}, {"capture held", 40 * time.Millisecond, 0, false}, {"commit held", 0, 40 * time.Millisecond, true}} {
			t.Run(c.name+", "+hold.name, func(t *testing.T) {
				t.Parallel()
				ctx := context.Background()
				after, beside := newFixture(t), newFixture(t)
				wa, wb := c.setup(t, after), c.setup(t, beside)
				if hold.warm {
					for _, fw := range []struct {
						f *fixture
						w memory.Who
					}{{after, wa}, {beside, wb}} {
						if _, err := fw.f.eng.Frame(ctx, memory.FrameQuery{Who: fw.w, Live: "warm up", Now: now, Probe: true}); err != nil {
							t.Fatal(err)
						}
					}
				}
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
				cb, fb, err := beside.eng.FrameBeside(ctx, q(wb), func(b memory.Beside) (store.Captured, error) {
					time.Sleep(hold.before)
					m := msg(wb)
					m.Stored = func(c store.Captured) {
						b.Stored(c)
						time.Sleep(hold.after)
					}
					return beside.eng.Capture(context.Background(), m)
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
		func(memory.Beside) (store.Captured, error) {
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

// TestFrameBesideCapturePanics: a panic in the capture, which runs on a
// goroutine of FrameBeside's own (outside the request's recovery), fails
// the turn as a capture error does, whether the frame had gone on with the
// stored ids or not, and the process goes on.
func TestFrameBesideCapturePanics(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	for _, tc := range []struct {
		name   string
		stored bool // the capture said its statements succeeded before it panicked
	}{
		{"before its statements", false},
		{"after its statements", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			w := f.who(t, "alice", "panics "+tc.name)
			f.say(t, w, "user", "Something to find about the harbour", 0)
			_, _, err := f.eng.FrameBeside(context.Background(), memory.FrameQuery{Who: w, Live: "the harbour?", Now: time.Now()},
				func(b memory.Beside) (store.Captured, error) {
					if tc.stored {
						b.Stored(store.Captured{MessageID: 1, ItemIDs: []int64{1 << 40}})
						time.Sleep(20 * time.Millisecond) // the frame goes on meanwhile
					}
					var ids []int64
					_ = ids[2]
					return store.Captured{}, nil
				})
			var pe *guard.Panic
			if !errors.As(err, &pe) || !strings.Contains(pe.What, "index out of range") {
				t.Fatalf("err = %v, want the capture's panic as an error", err)
			}
		})
	}
}

// renders tells when a frame was rendered.
type renders chan struct{}

func (r renders) Duration(string, time.Duration) {}
func (r renders) FrameTokens(int) {
	select {
	case r <- struct{}{}:
	default:
	}
}

// TestFrameBesideRendersBeforeCommit: the frame needs the capture's ids,
// not its commit, so it is rendered while the commit is out; a commit that
// then fails still fails the turn, and the frame's heat is not written.
func TestFrameBesideRendersBeforeCommit(t *testing.T) {
	t.Parallel()
	for _, commitFails := range []bool{false, true} {
		t.Run(fmt.Sprintf("commit fails %v", commitFails), func(t *testing.T) {
			t.Parallel()
			f := newFixture(t)
			rendered := make(renders, 1)
			f.eng.SetObserver(rendered)
			w := f.who(t, "alice", "pantry")
			f.say(t, w, "user", "The spare key hangs in the pantry behind the flour", 0)
			f.say(t, w, "assistant", "Noted: pantry, behind the flour.", 1)
			ctx := context.Background()
			var last int64
			if err := f.owner.QueryRow(ctx, `SELECT max(id) FROM items WHERE tenant_id = $1`, f.nt.TenantID).Scan(&last); err != nil {
				t.Fatal(err)
			}
			// The heat of the items stored before the question (its own is
			// born hot, committed here in either case).
			heat := func() string {
				var h string
				if err := f.owner.QueryRow(ctx, `SELECT string_agg(item_id || ':' || t_last || ':' || peak, ',' ORDER BY item_id)
					FROM activations WHERE tenant_id = $1 AND item_id <= $2`, f.nt.TenantID, last).Scan(&h); err != nil {
					t.Fatal(err)
				}
				return h
			}
			// A frame first: the arena is loaded (a cold load waits for
			// the commit, since it reads the question from the store).
			if _, err := f.eng.Frame(ctx, memory.FrameQuery{Who: w, Live: "pantry", Now: time.Now()}); err != nil {
				t.Fatal(err)
			}
			select { // that frame's render is not the one waited for
			case <-rendered:
			default:
			}
			before := heat()
			boom := errors.New("commit failed")
			var waited bool
			_, fr, err := f.eng.FrameBeside(ctx, memory.FrameQuery{Who: w, Live: "Where is the spare key?", Now: time.Now()},
				func(b memory.Beside) (store.Captured, error) {
					m := memory.Message{Who: w, Role: "user", Text: "Where is the spare key?", Position: 2, At: time.Now()}
					m.Stored = func(c store.Captured) {
						b.Stored(c)
						select {
						case <-rendered:
							waited = true
						case <-time.After(10 * time.Second):
						}
					}
					got, err := f.eng.Capture(ctx, m)
					if commitFails {
						return store.Captured{}, boom
					}
					return got, err
				})
			if !waited {
				t.Fatal("the frame was not rendered while the capture's commit waited")
			}
			if commitFails {
				if !errors.Is(err, boom) {
					t.Fatalf("err = %v, want the capture's", err)
				}
				if after := heat(); after != before {
					t.Fatalf("a failed turn's frame reheated memory: activations' peaks %v, then %v", before, after)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if txt := frameText(fr); !strings.Contains(txt, "behind the flour") || !strings.HasSuffix(strings.TrimSpace(txt), "Where is the spare key?") {
				t.Fatalf("frame:\n%s", txt)
			}
		})
	}
}

// TestFrameBesideRebuildsOnRetriedCapture: a capture whose statements the
// frame went on with, then rolled back and stored again under other ids,
// gets a frame built on what was stored.
func TestFrameBesideRebuildsOnRetriedCapture(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	w := f.who(t, "alice", "cellar")
	f.say(t, w, "user", "The wine rack is in the cellar under the stairs", 0)
	f.say(t, w, "assistant", "Noted: cellar, under the stairs.", 1)
	ctx := context.Background()
	if _, err := f.eng.Frame(ctx, memory.FrameQuery{Who: w, Live: "cellar", Now: time.Now()}); err != nil {
		t.Fatal(err)
	}
	live := "Where is the wine rack?"
	got, fr, err := f.eng.FrameBeside(ctx, memory.FrameQuery{Who: w, Live: live, Now: time.Now(), Explain: true},
		func(b memory.Beside) (store.Captured, error) {
			// The first attempt's statements, as the frame saw them.
			b.Stored(store.Captured{ItemIDs: []int64{1 << 40}, Items: []store.ItemText{{ID: 1 << 40, UserID: w.UserID,
				ConvID: w.ConversationID, Role: "user", Body: "a question that was rolled back", TokenCount: 6}}})
			return f.eng.Capture(ctx, memory.Message{Who: w, Role: "user", Text: live, Position: 2, At: time.Now()})
		})
	if err != nil {
		t.Fatal(err)
	}
	txt := frameText(fr)
	if strings.Contains(txt, "rolled back") || !strings.HasSuffix(strings.TrimSpace(txt), live) {
		t.Fatalf("frame for stored items %v:\n%s", got.ItemIDs, txt)
	}
}

// scans tells when a frame's scan ended.
type scans chan time.Time

func (s scans) Duration(name string, _ time.Duration) {
	if name == "scan" {
		select {
		case s <- time.Now():
		default:
		}
	}
}
func (s scans) FrameTokens(int) {}

// TestFrameBesideScansAfterCaptureSent: the frame's scan waits until the
// capture beside it has sent its statements (or ended). Its workers take
// every core, and a capture left to start beside them sent nothing until
// the scan was over: its round trips came after the scan, not beside it.
func TestFrameBesideScansAfterCaptureSent(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		sends bool // the capture says it sends; otherwise it ends without
	}{
		{"capture sends", true},
		{"capture fails before sending", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f := newFixture(t)
			scanned := make(scans, 4)
			f.eng.SetObserver(scanned)
			w := f.who(t, "alice", "scan waits "+tc.name)
			f.say(t, w, "user", "The harbour master keeps the boat keys in a tin", 0)
			ctx := context.Background()
			// The arena loaded first, so the frame's scan needs no store.
			if _, err := f.eng.Frame(ctx, memory.FrameQuery{Who: w, Live: "harbour", Now: time.Now()}); err != nil {
				t.Fatal(err)
			}
			for len(scanned) > 0 {
				<-scanned
			}
			boom := errors.New("no connection")
			var sentAt time.Time
			_, _, err := f.eng.FrameBeside(ctx, memory.FrameQuery{Who: w, Live: "Where are the boat keys?", Now: time.Now()},
				func(b memory.Beside) (store.Captured, error) {
					time.Sleep(50 * time.Millisecond) // preparing its statements
					sentAt = time.Now()
					if !tc.sends {
						return store.Captured{}, boom
					}
					m := memory.Message{Who: w, Role: "user", Text: "Where are the boat keys?", Position: 2, At: time.Now(),
						Stored: b.Stored, Sending: b.Sending}
					return f.eng.Capture(context.Background(), m)
				})
			if tc.sends && err != nil {
				t.Fatal(err)
			}
			if !tc.sends && !errors.Is(err, boom) {
				t.Fatalf("err = %v, want the capture's", err)
			}
			select {
			case at := <-scanned:
				if at.Before(sentAt) {
					t.Fatalf("the scan ended %v before the capture sent its statements", sentAt.Sub(at))
				}
			default:
				if tc.sends {
					t.Fatal("the frame did not scan")
				}
			}
		})
	}
}
