package memory_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/perpetuity/perpetuity/memory"
)

// TestDeferredReheatSeesTheSame: a run of frames with reheats written after
// each frame returns renders exactly what the same run renders with reheats
// written inline, because each frame waits for its viewer's pending writes.
func TestDeferredReheatSeesTheSame(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	run := func(deferred bool) []string {
		f := newFixture(t)
		f.eng = memory.New(f.db, wordAnalysis{}, wordAnalysis{},
			memory.Options{Ceiling: 4000, Floor: 120, AutoCeiling: 160, Recent: 2, BaseTau: 200, DeferReheat: deferred,
				Errors: func(err error) { t.Errorf("deferred reheat: %v", err) }})
		w := f.who(t, "alice", "c")
		topics := []string{"lisbon tram", "porto wine", "madrid museum", "sevilla dance", "lisbon fado", "porto bridge"}
		for i, topic := range topics {
			for j := 0; j < 4; j++ {
				f.say(t, w, "user", fmt.Sprintf("%s note %d about %s and the weather", topic, j, topic), 10*i+j)
			}
		}
		var out []string
		for i := 0; i < 12; i++ {
			fr, err := f.eng.Frame(ctx, memory.FrameQuery{Who: w, Live: "what about " + topics[i%len(topics)]})
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, frameText(fr))
		}
		f.eng.WaitReheats()
		return out
	}
	inline, deferred := run(false), run(true)
	for i := range inline {
		if inline[i] != deferred[i] {
			t.Fatalf("frame %d differs:\ninline:\n%s\ndeferred:\n%s", i, inline[i], deferred[i])
		}
	}
}
