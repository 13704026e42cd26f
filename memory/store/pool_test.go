package store_test

import (
	"context"
	"strings"
	"testing"

	"github.com/perpetuity/perpetuity/memory/store"
	"github.com/perpetuity/perpetuity/migrations/dbtest"
)

// TestPoolSize: the pool holds at least 8 connections unless the URL sets
// pool_max_conns, which wins either way.
func TestPoolSize(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	url := dbtest.Shared(t)
	with := func(param string) string {
		if strings.Contains(url, "?") {
			return url + "&" + param
		}
		return url + "?" + param
	}
	cases := []struct {
		name    string
		url     string
		atLeast int32
		exactly int32
	}{
		{"default", url, 8, 0},
		{"set lower", with("pool_max_conns=3"), 0, 3},
		{"set higher", with("pool_max_conns=21"), 0, 21},
	}
	for _, c := range cases {
		db, err := store.Open(ctx, c.url)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		got := db.Pool.Config().MaxConns
		db.Close()
		if c.exactly != 0 && got != c.exactly {
			t.Errorf("%s: MaxConns = %d, want %d", c.name, got, c.exactly)
		}
		if got < c.atLeast {
			t.Errorf("%s: MaxConns = %d, want at least %d", c.name, got, c.atLeast)
		}
	}
}
