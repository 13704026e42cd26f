package memory_test

import (
	"context"
	"testing"
	"time"

	"github.com/perpetuity/perpetuity/memory"
)

// TestFrameForNoUser: a request naming a user that does not exist (probe
// mode creates none) recalls nothing and writes nothing: its frame is the
// question alone, even when another user of the tenant matches it.
func TestFrameForNoUser(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ctx := context.Background()
	w := f.who(t, "alice", "garden")
	f.say(t, w, "user", "my tomatoes are doing well", 0)
	q := memory.FrameQuery{Who: memory.Who{TenantID: f.nt.TenantID, UserName: "ghost"}, Live: "how are my tomatoes?",
		Probe: true, Now: time.Now()}
	fr, err := f.eng.Frame(ctx, q)
	if err != nil {
		t.Fatal(err)
	}
	if fr.Items != 0 || len(fr.Turns) != 1 || fr.Turns[0].Role != "user" || fr.Turns[0].Text != q.Live || fr.Tokens == 0 {
		t.Fatalf("frame for no user: %+v", fr)
	}
}
