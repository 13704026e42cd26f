package memory_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/perpetuity/perpetuity/memory"
	"github.com/perpetuity/perpetuity/memory/ops"
	"github.com/perpetuity/perpetuity/memory/store"
)

// TestRedactionReachesEveryProcess: two serving processes (their own
// engines and pools over one store) both hold a pasted secret in their
// arena and item cache and return it in a frame and in memory_search. One
// redaction later, made through a third pool, neither returns it in a
// frame or a search, neither cache renders it even when asked for it by
// id, and what the user stored around it still comes back.
func TestRedactionReachesEveryProcess(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ctx := context.Background()
	open := func() *store.DB {
		db, err := store.Open(ctx, f.db.Pool.Config().ConnString())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(db.Close)
		return db
	}
	other := newEngine(open())
	a := f.who(t, "alice", "a1")
	var ids []int64
	for i, s := range []string{"the harbour server deploy token is zqx7tokenvalue", "the harbour server restarts at dawn",
		"harbour crates arrive at the server room"} {
		ids = append(ids, f.say(t, a, "user", s, i).ItemIDs...)
	}
	secret := ids[0]
	q := memory.FrameQuery{Who: f.who(t, "alice", "a2"), Live: "what is the harbour server deploy token", Now: time.Now()}
	look := func(e *memory.Engine) (frame, search string) {
		t.Helper()
		fr, err := e.Frame(ctx, q)
		if err != nil {
			t.Fatal(err)
		}
		out, err := e.RunTool(ctx, memory.NewToolState(q, memory.Frame{}), memory.ToolSearch, json.RawMessage(`{"query":"harbour server deploy token"}`))
		if err != nil {
			t.Fatal(err)
		}
		return frameText(fr), out
	}
	engines := []*memory.Engine{f.eng, other}
	for i, e := range engines {
		fr, s := look(e)
		if !strings.Contains(fr, "zqx7tokenvalue") || !strings.Contains(s, "zqx7tokenvalue") {
			t.Fatalf("engine %d before the redaction: frame\n%s\nsearch\n%s", i, fr, s)
		}
		if got := e.CachedItems(f.nt.TenantID, []int64{secret}); len(got) != 1 {
			t.Fatalf("engine %d does not cache the secret it rendered", i)
		}
	}

	rep, err := (&ops.Redactor{St: open()}).Redact(ctx, f.nt.TenantID, secret, store.Actor{Email: "admin@example.com"})
	if err != nil {
		t.Fatal(err)
	}
	if rep.ItemID != secret || rep.UserID != a.UserID {
		t.Fatalf("report %+v", rep)
	}
	for i, e := range engines {
		fr, s := look(e)
		if strings.Contains(fr, "zqx7") || strings.Contains(s, "zqx7") {
			t.Fatalf("engine %d after the redaction: frame\n%s\nsearch\n%s", i, fr, s)
		}
		if !strings.Contains(fr+s, "restarts at dawn") {
			t.Fatalf("engine %d lost the user's other turns: frame\n%s\nsearch\n%s", i, fr, s)
		}
		if got := e.CachedItems(f.nt.TenantID, []int64{secret}); len(got) != 0 {
			t.Fatalf("engine %d still caches the redacted item", i)
		}
		byID, err := e.FrameItems(ctx, f.nt.TenantID, a.UserID, ids)
		if err != nil {
			t.Fatal(err)
		}
		if _, ok := byID[secret]; ok || len(byID) != len(ids)-1 {
			t.Fatalf("engine %d asked by id renders %d items, the redacted one %v", i, len(byID), ok)
		}
	}
}
