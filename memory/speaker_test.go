package memory_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/perpetuity/perpetuity/memory"
)

// TestFramePrefersNamedSpeaker: in a memory holding two people's talk, a
// question naming one of them brings that person's own turn into a small
// frame ahead of the other's turns that only name them; a question naming
// no one keeps the scan's order, which leaves it out.
func TestFramePrefersNamedSpeaker(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ctx := context.Background()
	w := f.who(t, "conv-1", "chat")
	say := func(speaker, role, text string, pos int) {
		t.Helper()
		_, err := f.eng.Capture(ctx, memory.Message{Who: w, Role: role, Speaker: speaker, Text: text, Position: pos,
			At: time.Date(2026, 1, 2, 3, 4, 0, 0, time.UTC)})
		if err != nil {
			t.Fatal(err)
		}
	}
	for i := range 16 {
		say("Caroline", "user", fmt.Sprintf("Melanie, pottery again (%d)? Pottery!", i), 2*i)
		say("Caroline", "user", "I painted a lake today, it was calm and blue.", 2*i+1)
	}
	const own = "Lately I spend my free evenings glazing bowls and mugs in the pottery studio downtown; it calms me down after long days at the office."
	say("Melanie", "assistant", own, 100)
	ask := f.who(t, "conv-1", "later") // not the chat's recent stretch
	frame := func(question string) string {
		fr, err := f.eng.Frame(ctx, memory.FrameQuery{Who: ask, Live: question, Probe: true, Budget: 150, Now: time.Now()})
		if err != nil {
			t.Fatal(err)
		}
		return frameText(fr)
	}
	named := frame("What does Melanie think about pottery?")
	if !strings.Contains(named, own) {
		t.Error("a question naming Melanie: her own pottery turn is not in the frame")
	}
	if !strings.Contains(named, "Melanie, pottery again") {
		t.Error("a question naming Melanie: the best matches, mandatory, left the frame")
	}
	if strings.Contains(frame("What about pottery?"), own) {
		t.Error("a question naming no one: the frame took the pottery turn ahead of the better matches (the test no longer tells the two apart)")
	}
}
