package proxy

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/perpetuity/perpetuity/e2e/fakeprovider"
	"github.com/perpetuity/perpetuity/memory/store"
)

// TestInspectionErasedMidRequest: the user's memory is purged while a
// request of theirs waits for the provider. Its record, written after the
// reply, keeps its figures and no inspection: the frame it quotes was
// read before the purge. A request after the purge keeps its own.
func TestInspectionErasedMidRequest(t *testing.T) {
	t.Parallel()
	lp := newLimitedProxy(t, func(c *Config) { c.InspectRetention = time.Hour })
	ctx := context.Background()
	nt := lp.tenant("erased mid-request", store.LimitsUpdate{})
	ask := func(text string) {
		t.Helper()
		c := limitDialects[0].call(0, false)
		c.body = `{"model":"gpt-4o","messages":[{"role":"user","content":"` + text + `"}]}`
		c.header = map[string]string{"Authorization": "Bearer sk-proj-test", HeaderConversation: "c1"}
		if status, _, body := lp.do(nt.Key, c); status != http.StatusOK {
			t.Errorf("status %d: %s", status, body)
		}
	}
	ask("the vault code is 4417")
	drain(t, lp.px)

	entered, release := make(chan struct{}), make(chan struct{})
	lp.provider.SetDefault(func(fakeprovider.Recorded) fakeprovider.Reply {
		entered <- struct{}{}
		<-release
		return fakeprovider.Reply{Text: "the code is 4417"}
	})
	asked := make(chan struct{})
	go func() {
		defer close(asked)
		ask("what is the vault code")
	}()
	<-entered // the frame (showing the code) is with the provider
	if _, err := lp.db.PurgeUser(ctx, nt.TenantID, nt.UserID, store.Actor{Email: "test"}); err != nil {
		t.Fatal(err)
	}
	close(release)
	<-asked
	drain(t, lp.px)
	lp.provider.SetDefault(nil)
	ask("a new start")
	drain(t, lp.px)

	rows, err := lp.db.Requests(ctx, nt.TenantID, nt.UserID, 10)
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 3 {
		t.Fatalf("%d requests listed, want 3 (each keeps its figures)", len(rows))
	}
	// Newest first: after the purge, during it, before it.
	for i, want := range []bool{true, false, false} {
		if rows[i].Inspected != want || (rows[i].Question != "") != want {
			t.Errorf("request %d of 3 (newest first): inspection kept %v, question %q; want kept %v",
				i+1, rows[i].Inspected, rows[i].Question, want)
		}
	}
}
