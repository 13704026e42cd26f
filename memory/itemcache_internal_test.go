package memory

import (
	"strings"
	"testing"

	"github.com/perpetuity/perpetuity/memory/store"
)

// TestItemCache: what put keeps, what a purge drops, a fill that read
// before a purge refused, and the byte bound.
func TestItemCache(t *testing.T) {
	t.Parallel()
	item := func(id, user int64, body string) store.ItemText {
		return store.ItemText{ID: id, UserID: user, Role: "user", Body: body}
	}
	for _, tc := range []struct {
		name string
		run  func(c *itemCache) []int64 // returns the ids of tenant 1 to look up
		want []int64
	}{
		{"kept", func(c *itemCache) []int64 {
			c.put(1, c.epoch(1), []store.ItemText{item(1, 10, "a"), item(2, 11, "b")})
			return []int64{1, 2, 3}
		}, []int64{1, 2}},
		{"purge drops the user only", func(c *itemCache) []int64 {
			c.put(1, c.epoch(1), []store.ItemText{item(1, 10, "a"), item(2, 11, "b")})
			c.purge(1, 10)
			return []int64{1, 2}
		}, []int64{2}},
		{"purge stays in its tenant", func(c *itemCache) []int64 {
			c.put(1, c.epoch(1), []store.ItemText{item(1, 10, "a")})
			c.purge(2, 10)
			return []int64{1}
		}, []int64{1}},
		{"a fill read before a purge is refused", func(c *itemCache) []int64 {
			e := c.epoch(1)
			c.purge(1, 10)
			c.put(1, e, []store.ItemText{item(1, 10, "a"), item(2, 11, "b")})
			return []int64{1, 2}
		}, nil},
		{"a fill read after a purge is kept", func(c *itemCache) []int64 {
			c.purge(1, 10)
			c.put(1, c.epoch(1), []store.ItemText{item(1, 10, "a")})
			return []int64{1}
		}, []int64{1}},
		{"least recently used out first", func(c *itemCache) []int64 {
			big := strings.Repeat("x", 1000)
			c.put(1, c.epoch(1), []store.ItemText{item(1, 10, big), item(2, 10, big)})
			c.get(1, []int64{1})
			c.put(1, c.epoch(1), []store.ItemText{item(3, 10, big)}) // over 3000: 2 goes
			return []int64{1, 2, 3}
		}, []int64{1, 3}},
		{"an item over the whole bound is not kept", func(c *itemCache) []int64 {
			c.put(1, c.epoch(1), []store.ItemText{item(1, 10, strings.Repeat("x", 4000))})
			return []int64{1}
		}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c := newItemCache(3000)
			ids := tc.run(c)
			got, _ := c.get(1, ids)
			var have []int64
			for _, id := range ids {
				if _, ok := got[id]; ok {
					have = append(have, id)
				}
			}
			if !equalIDs(have, tc.want) {
				t.Fatalf("cached %v, want %v", have, tc.want)
			}
			if c.used > c.budget || (len(c.by) == 0) != (c.used == 0) {
				t.Fatalf("%d bytes used of %d, %d entries", c.used, c.budget, len(c.by))
			}
		})
	}
}

func equalIDs(a, b []int64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
