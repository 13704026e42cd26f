package proxy

import (
	"context"
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/perpetuity/perpetuity/memory/store"
)

// TestConversationCached: a conversation is looked up once per process;
// once the engine has applied an erasure of the tenant (a purge from the
// tenant log), the next request looks it up again.
func TestConversationCached(t *testing.T) {
	t.Parallel()
	tp := newTestProxy(t)
	r := userRoutes[0]
	ask := func(text string) string {
		t.Helper()
		status, h, body := tp.post(r.path, r.body(text), r.header, HeaderConversation+": c1")
		if status != http.StatusOK {
			t.Fatalf("status %d: %s", status, body)
		}
		return h.Get(HeaderConvID)
	}
	ensured := func() int {
		tp.dir.mu.Lock()
		defer tp.dir.mu.Unlock()
		return tp.dir.ensured
	}
	first := ask("one")
	if second := ask("two"); second != first || first == "" {
		t.Fatalf("conversation ids %q then %q", first, second)
	}
	if n := ensured(); n != 1 {
		t.Fatalf("looked the conversation up %d times for two requests, want 1", n)
	}
	tp.mem.mu.Lock()
	tp.mem.erasures++
	tp.mem.mu.Unlock()
	ask("three")
	if n := ensured(); n != 2 {
		t.Fatalf("looked the conversation up %d times after an erasure, want 2", n)
	}
	tp.settle(3)
}

// TestConversationCacheBounded: past its bound the cache starts over
// rather than growing.
func TestConversationCacheBounded(t *testing.T) {
	t.Parallel()
	c := newConvCache()
	for i := range convCacheMax + 1 {
		c.put(convKey{tenant: 1, user: int64(i), ext: "c"}, int64(i), 0)
	}
	if len(c.m) > convCacheMax {
		t.Fatalf("%d entries, bound %d", len(c.m), convCacheMax)
	}
	if id, ok := c.get(convKey{tenant: 1, user: convCacheMax, ext: "c"}, 0); !ok || id != convCacheMax {
		t.Fatalf("the last entry put is %d, %v", id, ok)
	}
	if _, ok := c.get(convKey{tenant: 1, user: convCacheMax, ext: "c"}, 1); ok {
		t.Fatal("an entry older than an erasure was served")
	}
}

// TestConversationPurgedElsewhere: a purge made by another process (here:
// straight in the store) that this process has not applied yet leaves it
// a cached conversation id that no longer exists. The live capture into
// it is refused whole, the conversation is made again, and the request
// goes through with its question stored in the new conversation.
func TestConversationPurgedElsewhere(t *testing.T) {
	t.Parallel()
	lp := newLimitedProxy(t)
	ctx := context.Background()
	nt := lp.tenant("purged elsewhere", store.LimitsUpdate{})
	ask := func(text string) string {
		t.Helper()
		c := limitDialects[0].call(0, false)
		c.body = `{"model":"gpt-4o","messages":[{"role":"user","content":"` + text + `"}]}`
		c.header = map[string]string{"Authorization": "Bearer sk-proj-test", HeaderConversation: "c1"}
		status, h, body := lp.do(nt.Key, c)
		if status != http.StatusOK {
			t.Fatalf("status %d: %s", status, body)
		}
		return h.Get(HeaderConvID)
	}
	before := ask("what is my cat called")
	drain(t, lp.px)
	if _, err := lp.db.PurgeUser(ctx, nt.TenantID, nt.UserID, store.Actor{Email: "test"}); err != nil {
		t.Fatal(err)
	}
	after := ask("my cat is called Miso")
	if after == before || after == "" {
		t.Fatalf("conversation %q after the purge, %q before", after, before)
	}
	drain(t, lp.px)
	var conv int64
	err := lp.db.InTenant(ctx, nt.TenantID, func(tx pgx.Tx) error {
		return tx.QueryRow(ctx, `SELECT conversation_id FROM messages WHERE tenant_id = $1 AND role = 'user'`, nt.TenantID).Scan(&conv)
	})
	if err != nil {
		t.Fatalf("the question after the purge, stored once: %v", err)
	}
	if strconv.FormatInt(conv, 10) != after {
		t.Fatalf("the question after the purge is in conversation %d, the response says %s", conv, after)
	}
	if got := ask("and my dog?"); got != after {
		t.Fatalf("conversation %q on the next request, want %q", got, after)
	}
	drain(t, lp.px)
}

func drain(t *testing.T, p *Proxy) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := p.Drain(ctx); err != nil {
		t.Fatal(err)
	}
}
