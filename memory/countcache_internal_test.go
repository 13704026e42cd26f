package memory

import (
	"strings"
	"testing"
)

// TestCountCache: a cached count is the count; a text is counted once
// while it is cached, again once both generations moved past it; short
// texts are not kept; a hit in the older generation survives a rotation.
func TestCountCache(t *testing.T) {
	t.Parallel()
	calls := map[string]int{}
	count := func(s string) int {
		calls[s]++
		return len(strings.Fields(s))
	}
	long := func(i int) string {
		return strings.Repeat("word ", 20) + strings.Repeat("x", i+1)
	}
	for _, tc := range []struct {
		name string
		run  func(c *countCache)
		want map[string]int // calls of count per text
	}{
		{"counted once", func(c *countCache) {
			for range 3 {
				c.count(long(0), count)
			}
		}, map[string]int{long(0): 1}},
		{"short texts each time", func(c *countCache) {
			c.count("【u1】 ", count)
			c.count("【u1】 ", count)
		}, map[string]int{"【u1】 ": 2}},
		{"dropped after two generations", func(c *countCache) {
			for i := range 5 { // limit 2: 0,1 | 2,3 | 4 leaves 0 and 1 out
				c.count(long(i), count)
			}
			c.count(long(0), count)
		}, map[string]int{long(0): 2, long(1): 1, long(2): 1, long(3): 1, long(4): 1}},
		{"a hit in the older generation moves it", func(c *countCache) {
			c.count(long(0), count)
			c.count(long(1), count)
			c.count(long(2), count) // 0,1 older
			c.count(long(0), count) // hit: 0 joins 2
			c.count(long(3), count) // 2,0 older
			c.count(long(0), count)
		}, map[string]int{long(0): 1, long(1): 1, long(2): 1, long(3): 1}},
	} {
		clear(calls)
		c := newCountCache(2)
		tc.run(c)
		for s, n := range tc.want {
			if calls[s] != n {
				t.Errorf("%s: %q counted %d times, want %d", tc.name, s[len(s)-3:], calls[s], n)
			}
		}
		for s := range calls {
			if _, ok := tc.want[s]; !ok {
				t.Errorf("%s: %q counted, not expected", tc.name, s)
			}
		}
	}
	c := newCountCache(4)
	for i := range 10 {
		s := long(i)
		if got, want := c.count(s, count), len(strings.Fields(s)); got != want {
			t.Errorf("cached count of %d: %d, want %d", i, got, want)
		}
		if got, want := c.count(s, count), len(strings.Fields(s)); got != want {
			t.Errorf("cached count of %d again: %d, want %d", i, got, want)
		}
	}
}
