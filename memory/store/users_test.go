package store_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/perpetuity/perpetuity/memory/store"
)

func TestEnsureUserForKey(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := openDB(t)
	owner := ownerOf(t, db)
	nt, err := db.CreateTenantWith(ctx, "users-per-day", "alice", store.TenantOptions{Dict: 1})
	if err != nil {
		t.Fatal(err)
	}
	otherKey, _, err := db.CreateKey(ctx, nt.TenantID, nt.UserID, "second")
	if err != nil {
		t.Fatal(err)
	}
	users := func() int {
		var n int
		if err := owner.QueryRow(ctx, `SELECT count(*) FROM memory_users WHERE tenant_id = $1`, nt.TenantID).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	// A row of yesterday's is dropped by the next creation and counts nothing.
	if _, err := owner.Exec(ctx, `INSERT INTO key_user_creations (tenant_id, key_id, day, created)
		VALUES ($1, $2, (now() AT TIME ZONE 'UTC')::date - 1, 99)`, nt.TenantID, nt.KeyID); err != nil {
		t.Fatal(err)
	}
	steps := []struct {
		name    string
		key     int64
		user    string
		perDay  int
		refused bool
	}{
		{"first new user", nt.KeyID, "u1", 2, false},
		{"second new user", nt.KeyID, "u2", 2, false},
		{"third is past the bound", nt.KeyID, "u3", 2, true},
		{"an existing user is found past the bound", nt.KeyID, "u1", 2, false},
		{"the key's own user too", nt.KeyID, "alice", 2, false},
		{"another key counts on its own", otherKey, "u3", 2, false},
		{"0 is unlimited", nt.KeyID, "u4", 0, false},
		{"a raised bound admits more", nt.KeyID, "u5", 5, false},
	}
	ids := map[string]int64{}
	for _, s := range steps {
		before := users()
		id, err := db.EnsureUserForKey(ctx, nt.TenantID, s.key, s.user, s.perDay)
		if s.refused {
			if !errors.Is(err, store.ErrUserQuota) {
				t.Fatalf("%s: %v, want ErrUserQuota", s.name, err)
			}
			if users() != before {
				t.Fatalf("%s: a refused creation left a user behind", s.name)
			}
			continue
		}
		if err != nil {
			t.Fatalf("%s: %v", s.name, err)
		}
		if prev, ok := ids[s.user]; ok && prev != id {
			t.Fatalf("%s: %q is %d, was %d", s.name, s.user, id, prev)
		}
		ids[s.user] = id
	}
	var days, created int
	if err := owner.QueryRow(ctx, `SELECT count(*), coalesce(sum(created), 0) FROM key_user_creations WHERE tenant_id = $1 AND key_id = $2`,
		nt.TenantID, nt.KeyID).Scan(&days, &created); err != nil {
		t.Fatal(err)
	}
	if days != 1 || created != 4 { // u1, u2, u4, u5
		t.Fatalf("the key's counts: %d days, %d created; want today only, 4", days, created)
	}
}

// TestEnsureUserForKeyConcurrent: creations racing past the bound admit
// exactly the bound, and one name raced by many counts once.
func TestEnsureUserForKeyConcurrent(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := openDB(t)
	nt, err := db.CreateTenantWith(ctx, "users-per-day-race", "alice", store.TenantOptions{Dict: 1})
	if err != nil {
		t.Fatal(err)
	}
	const perDay, racers = 5, 16
	var wg sync.WaitGroup
	errs := make([]error, racers)
	for i := range racers {
		wg.Go(func() {
			_, errs[i] = db.EnsureUserForKey(ctx, nt.TenantID, nt.KeyID, fmt.Sprintf("r%d", i), perDay)
		})
	}
	wg.Wait()
	ok, refused := 0, 0
	for _, err := range errs {
		switch {
		case err == nil:
			ok++
		case errors.Is(err, store.ErrUserQuota):
			refused++
		default:
			t.Fatal(err)
		}
	}
	if ok != perDay || refused != racers-perDay {
		t.Fatalf("%d racers, bound %d: %d created, %d refused", racers, perDay, ok, refused)
	}

	other, err := db.CreateTenantWith(ctx, "users-per-day-same", "bob", store.TenantOptions{Dict: 1})
	if err != nil {
		t.Fatal(err)
	}
	got := make([]int64, racers)
	for i := range racers {
		wg.Go(func() {
			got[i], errs[i] = db.EnsureUserForKey(ctx, other.TenantID, other.KeyID, "same", 2)
		})
	}
	wg.Wait()
	for i := range racers {
		if errs[i] != nil || got[i] != got[0] {
			t.Fatalf("racer %d: id %d err %v, want %d", i, got[i], errs[i], got[0])
		}
	}
	var created int
	if err := ownerOf(t, db).QueryRow(ctx, `SELECT created FROM key_user_creations WHERE tenant_id = $1`, other.TenantID).Scan(&created); err != nil {
		t.Fatal(err)
	}
	if created != 1 {
		t.Fatalf("one name created by %d racers counted %d times", racers, created)
	}
}

func TestFindConversation(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := openDB(t)
	nt, err := db.CreateTenantWith(ctx, "find-conversation", "alice", store.TenantOptions{Dict: 1})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.FindConversation(ctx, nt.TenantID, nt.UserID, "h:none"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("a missing conversation: %v, want ErrNotFound", err)
	}
	id, err := db.EnsureConversation(ctx, nt.TenantID, nt.UserID, "h:trip", "trip")
	if err != nil {
		t.Fatal(err)
	}
	if got, err := db.FindConversation(ctx, nt.TenantID, nt.UserID, "h:trip"); err != nil || got != id {
		t.Fatalf("found %d %v, want %d", got, err, id)
	}
}
