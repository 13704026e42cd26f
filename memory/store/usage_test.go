package store_test

import (
	"context"
	"testing"
	"time"

	"github.com/perpetuity/perpetuity/memory/store"
)

// TestUsage: requests recorded with their key add up per user, per key and
// per day, frame tokens apart from the harness's, errors counted, and
// another tenant's requests never show.
func TestUsage(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := openDB(t)
	a, err := db.CreateTenantWith(ctx, "usage-a", "alice", store.TenantOptions{Dict: 1})
	if err != nil {
		t.Fatal(err)
	}
	b, err := db.CreateTenantWith(ctx, "usage-b", "zed", store.TenantOptions{Dict: 1})
	if err != nil {
		t.Fatal(err)
	}
	bob, err := db.EnsureUser(ctx, a.TenantID, "bob")
	if err != nil {
		t.Fatal(err)
	}
	bobKey, _, err := db.CreateKey(ctx, a.TenantID, bob, "bob laptop")
	if err != nil {
		t.Fatal(err)
	}
	recs := []store.RequestRecord{
		{TenantID: a.TenantID, UserID: a.UserID, KeyID: a.KeyID, Status: 200, TokensIn: 1000, TokensOut: 50, FrameTokens: 700},
		{TenantID: a.TenantID, UserID: a.UserID, KeyID: a.KeyID, Status: 502, TokensIn: 0, TokensOut: 0, FrameTokens: 300},
		{TenantID: a.TenantID, UserID: bob, KeyID: bobKey, Status: 200, TokensIn: 400, TokensOut: 20, FrameTokens: 100},
		{TenantID: a.TenantID, UserID: bob, KeyID: bobKey, Status: 429, TokensIn: 10, TokensOut: 0, FrameTokens: 0},
		{TenantID: b.TenantID, UserID: b.UserID, KeyID: b.KeyID, Status: 200, TokensIn: 99999, TokensOut: 9, FrameTokens: 9},
	}
	for i, r := range recs {
		r.RequestID, r.Dialect, r.Provider = "req", "openai", "openai"
		if err := db.RecordRequest(ctx, r); err != nil {
			t.Fatalf("request %d: %v", i, err)
		}
	}
	since := time.Now().UTC().Truncate(24 * time.Hour)
	u, err := db.Usage(ctx, a.TenantID, since)
	if err != nil {
		t.Fatal(err)
	}
	// Harness input is input less frame, never below 0 (the failed call
	// had a frame but no provider tokens).
	alice := store.UsageFigures{Requests: 2, Errors: 1, TokensIn: 1000, TokensOut: 50, Frame: 1000, Harness: 300}
	bobs := store.UsageFigures{Requests: 2, Errors: 1, TokensIn: 410, TokensOut: 20, Frame: 100, Harness: 310}
	total := store.UsageFigures{Requests: 4, Errors: 2, TokensIn: 1410, TokensOut: 70, Frame: 1100, Harness: 610}
	cases := []struct {
		name string
		got  []store.UsageFigures
		want []store.UsageFigures
	}{
		{"per user, most tokens first", figuresOf(u.Users, func(r store.UsageByUser) store.UsageFigures { return r.UsageFigures }), []store.UsageFigures{alice, bobs}},
		{"per key", figuresOf(u.Keys, func(r store.UsageByKey) store.UsageFigures { return r.UsageFigures }), []store.UsageFigures{alice, bobs}},
		{"per day", figuresOf(u.Days, func(r store.UsageByDay) store.UsageFigures { return r.UsageFigures }), []store.UsageFigures{total}},
		{"total", []store.UsageFigures{u.Total}, []store.UsageFigures{total}},
	}
	for _, c := range cases {
		if len(c.got) != len(c.want) {
			t.Errorf("%s: %d rows, want %d: %+v", c.name, len(c.got), len(c.want), c.got)
			continue
		}
		for i := range c.want {
			if c.got[i] != c.want[i] {
				t.Errorf("%s row %d: %+v, want %+v", c.name, i, c.got[i], c.want[i])
			}
		}
	}
	if len(u.Users) == 2 && (u.Users[0].User != "alice" || u.Users[1].User != "bob" || u.Users[1].UserID != bob) {
		t.Errorf("users named %q, %q", u.Users[0].User, u.Users[1].User)
	}
	if len(u.Keys) == 2 && (u.Keys[1].KeyID != bobKey || u.Keys[1].Name != "bob laptop" || u.Keys[1].User != "bob" || u.Keys[1].Prefix == "") {
		t.Errorf("bob's key row: %+v", u.Keys[1])
	}
	if len(u.Days) == 1 && !u.Days[0].Day.Equal(since) {
		t.Errorf("day %v, want %v", u.Days[0].Day, since)
	}
	later, err := db.Usage(ctx, a.TenantID, time.Now().Add(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	if later.Total.Requests != 0 || len(later.Users) != 0 {
		t.Errorf("a range after every request counts %+v", later.Total)
	}
	// A key revoked and then gone leaves its requests in the user's row.
	if err := db.RevokeKey(ctx, a.TenantID, bobKey); err != nil {
		t.Fatal(err)
	}
	if u2, err := db.Usage(ctx, a.TenantID, since); err != nil || u2.Total != total {
		t.Errorf("after a revoke: %+v, %v", u2.Total, err)
	}
}

func figuresOf[T any](rows []T, f func(T) store.UsageFigures) []store.UsageFigures {
	out := make([]store.UsageFigures, len(rows))
	for i, r := range rows {
		out[i] = f(r)
	}
	return out
}
