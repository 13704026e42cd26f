package memory_test

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/perpetuity/perpetuity/memory"
)

// TestFrameExplains: with Explain, the frame lists each rendered item with
// why it was in (the match, its conversation neighbour, the live
// question) and, at a small budget, the matches it left out; without it,
// nothing is listed.
func TestFrameExplains(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ctx := context.Background()
	old := f.who(t, "alice", "trip")
	match := f.say(t, old, "user", "My passport number is stored in the blue folder", 0)
	reply := f.say(t, old, "assistant", "Noted: blue folder.", 1)
	for i := range 12 {
		f.say(t, old, "user", "passport renewal form "+strings.Repeat("paperwork ", 60+i), 10+i)
	}
	f.filler(t, f.who(t, "alice", "busy"), 30)
	now := f.who(t, "alice", "today")
	live := f.say(t, now, "user", "Where is my passport number stored?", 0)
	q := memory.FrameQuery{Who: now, Live: "Where is my passport number stored?", LiveStored: true, LiveItems: live.ItemIDs,
		Budget: 300, Now: time.Date(2026, 1, 5, 3, 4, 0, 0, time.UTC)}
	for _, tc := range []struct {
		name    string
		explain bool
	}{{"off", false}, {"on", true}} {
		q.Explain = tc.explain
		fr, err := f.eng.Frame(ctx, q)
		if err != nil {
			t.Fatal(err)
		}
		if !tc.explain {
			if len(fr.Considered) != 0 {
				t.Errorf("%s: %d considered without Explain", tc.name, len(fr.Considered))
			}
			continue
		}
		by := map[int64]memory.Considered{}
		shown := 0
		for _, c := range fr.Considered {
			by[c.ID] = c
			if c.Shown {
				shown++
			}
		}
		if shown != len(fr.Shown) {
			t.Errorf("%d considered shown, the frame shows %d", shown, len(fr.Shown))
		}
		for _, tc := range []struct {
			name  string
			id    int64
			want  string
			shown bool // else either
		}{{"the match", match.ItemIDs[0], "match", true}, {"its reply", reply.ItemIDs[0], "neighbour", false},
			{"the question", live.ItemIDs[0], "live", true}} {
			c, ok := by[tc.id]
			if !ok || (tc.shown && !c.Shown) || !slices.Contains(c.Reasons.Codes(), tc.want) {
				t.Errorf("%s (%d): %+v, want %q (shown %v)", tc.name, tc.id, c, tc.want, tc.shown)
			}
		}
		if m := by[match.ItemIDs[0]]; m.Score <= 0 || m.Rank < 0 || m.ConvID != old.ConversationID || m.UserID != old.UserID || m.Excerpt == "" {
			t.Errorf("the match's figures: %+v", m)
		}
		if !fr.Trimmed || fr.Left == 0 {
			t.Fatalf("a 300-token budget left nothing out (trimmed %v, left %d)", fr.Trimmed, fr.Left)
		}
		leftMatch := false
		for _, c := range fr.Considered {
			if !c.Shown && slices.Contains(c.Reasons.Codes(), "match") {
				leftMatch = true
			}
		}
		if !leftMatch {
			t.Errorf("no left-out match listed among %d left out", fr.Left)
		}
	}
}
