package proxy

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/perpetuity/perpetuity/memory/store"
)

// checkExpired asserts the 401 an ended key gets, in the dialect's shape,
// saying why.
func checkExpired(t *testing.T, anthropic bool, status int, body []byte) {
	t.Helper()
	if status != http.StatusUnauthorized {
		t.Fatalf("status %d, want 401; body %s", status, body)
	}
	var e struct {
		Type  string `json:"type"`
		Error struct {
			Type, Message string
			Code          *string
		} `json:"error"`
	}
	if err := json.Unmarshal(body, &e); err != nil {
		t.Fatalf("not JSON: %s", body)
	}
	if !strings.Contains(e.Error.Message, "key expired") {
		t.Fatalf("the refusal does not say the key expired: %s", body)
	}
	if anthropic {
		if e.Type != "error" || e.Error.Type != "authentication_error" {
			t.Fatalf("not an Anthropic authentication error: %s", body)
		}
		return
	}
	if e.Error.Type != "invalid_request_error" || e.Error.Code == nil || *e.Error.Code != "invalid_api_key" {
		t.Fatalf("not an OpenAI invalid_api_key error: %s", body)
	}
}

// untilPast sleeps until t has passed.
func untilPast(t time.Time) { time.Sleep(time.Until(t) + 50*time.Millisecond) }

// TestKeyExpiryAndRotationInDialect, in each inbound dialect: a key with
// an end works before it and is refused as expired from it, on the very
// next request although the key was cached moments before; a rotated key's
// replacement works at once, the old key works through its grace and is
// refused as expired after it, and the replacement keeps working.
func TestKeyExpiryAndRotationInDialect(t *testing.T) {
	t.Parallel()
	lp := newLimitedProxy(t)
	ctx := context.Background()
	for _, d := range limitDialects {
		t.Run(d.name, func(t *testing.T) {
			t.Parallel()
			nt := lp.tenant("life-"+d.name, store.LimitsUpdate{})
			// The end is well inside the key cache's TTL from the first
			// request, so the request after it is served from the cache.
			end := time.Now().Add(700 * time.Millisecond)
			_, ending, err := lp.db.CreateKeyWith(ctx, nt.TenantID, nt.UserID, store.KeyOptions{Name: "ending", Scope: store.ScopeUser, ExpiresAt: &end})
			if err != nil {
				t.Fatal(err)
			}
			if status, _, body := lp.do(ending, d.call(0, false)); status != http.StatusOK {
				t.Fatalf("before its end: %d %s", status, body)
			}
			untilPast(end)
			if time.Since(end) > keyCacheTTL/2 {
				t.Fatal("too slow to prove the cached key is refused")
			}
			status, _, body := lp.do(ending, d.call(1, false))
			checkExpired(t, d.anthropic, status, body)

			// Rotation, as the console does it: the store's rotation, then
			// this process forgets the old key.
			if status, _, body := lp.do(nt.Key, d.call(2, false)); status != http.StatusOK {
				t.Fatalf("before rotation: %d %s", status, body)
			}
			r, err := lp.db.RotateKey(ctx, nt.TenantID, nt.KeyID, time.Second)
			if err != nil {
				t.Fatal(err)
			}
			lp.px.ForgetKey(nt.KeyID)
			for i, k := range []string{r.Key, nt.Key} {
				if status, _, body := lp.do(k, d.call(3+i, i == 1)); status != http.StatusOK {
					t.Fatalf("key %d during the grace: %d %s", i, status, body)
				}
			}
			untilPast(r.OldValidUntil)
			status, _, body = lp.do(nt.Key, d.call(5, false))
			checkExpired(t, d.anthropic, status, body)
			if status, _, body := lp.do(r.Key, d.call(6, true)); status != http.StatusOK {
				t.Fatalf("the replacement after the grace: %d %s", status, body)
			}
		})
	}
}

// TestKeyLimitsTakeEffectOnNextRequest: a key without limits of its own
// has the team's (here none); limits set on it hold from its next request
// (the console tells the proxy to forget the cached key), and clearing
// them gives the team's back.
func TestKeyLimitsTakeEffectOnNextRequest(t *testing.T) {
	t.Parallel()
	lp := newLimitedProxy(t)
	ctx := context.Background()
	d := limitDialects[0]
	nt := lp.tenant("own-limits", store.LimitsUpdate{})
	for i := 0; i < 3; i++ {
		if status, _, body := lp.do(nt.Key, d.call(i, false)); status != http.StatusOK {
			t.Fatalf("unlimited request %d: %d %s", i, status, body)
		}
	}
	one := 1
	if err := lp.db.SetKeyLimits(ctx, nt.TenantID, nt.KeyID, store.KeyLimits{RequestsPerMinute: &one}); err != nil {
		t.Fatal(err)
	}
	lp.px.ForgetKey(nt.KeyID)
	if status, _, body := lp.do(nt.Key, d.call(3, false)); status != http.StatusOK {
		t.Fatalf("the first request under the key's limit: %d %s", status, body)
	}
	status, h, body := lp.do(nt.Key, d.call(4, false))
	checkRefusal(t, d.anthropic, status, h, body, "requests", 1, 60)
	if got := h.Get("x-ratelimit-limit-requests"); got != "1" {
		t.Errorf("x-ratelimit-limit-requests %q, want the key's 1", got)
	}
	if err := lp.db.SetKeyLimits(ctx, nt.TenantID, nt.KeyID, store.KeyLimits{}); err != nil {
		t.Fatal(err)
	}
	lp.px.ForgetKey(nt.KeyID)
	if status, _, body := lp.do(nt.Key, d.call(5, false)); status != http.StatusOK {
		t.Fatalf("with the team's limits back: %d %s", status, body)
	}
}
