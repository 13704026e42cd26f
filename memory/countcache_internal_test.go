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
			c.count(long(4), count) // 3,4 newer: had 0 stayed behind, it would be out now
			c.count(long(0), count)
		}, map[string]int{long(0): 1, long(1): 1, long(2): 1, long(3): 1, long(4): 1}},
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

// TestCountCacheAround: a count around a body's seams is derived once per
// (pre, body, n, post) while cached; another stored count, another label or
// another join is derived again; a failed derivation is not kept; a body
// too short to keep is derived each time; and its entries never answer
// for a text counted whole, nor a whole count for them.
func TestCountCacheAround(t *testing.T) {
	t.Parallel()
	body := strings.Repeat("word ", 20) + "end"
	type key struct {
		pre, mid string
		n        int
		post     string
	}
	for _, tc := range []struct {
		name    string
		run     func(c *countCache, around func(string, string, int, string) (int, bool), count func(string) int)
		arounds map[key]int // calls of around per key
		counts  map[string]int
	}{
		{"derived once", func(c *countCache, around func(string, string, int, string) (int, bool), _ func(string) int) {
			for range 3 {
				c.around("【a】 ", body, 21, "\n\n", around)
			}
		}, map[key]int{{"【a】 ", body, 21, "\n\n"}: 1}, nil},
		{"each part of the key counts", func(c *countCache, around func(string, string, int, string) (int, bool), _ func(string) int) {
			c.around("【a】 ", body, 21, "\n\n", around)
			c.around("【a】 ", body, 22, "\n\n", around)
			c.around("【b】 ", body, 21, "\n\n", around)
			c.around("【a】 ", body, 21, "", around)
			c.around("【a】 ", body, 21, "\n\n", around)
		}, map[key]int{{"【a】 ", body, 21, "\n\n"}: 1, {"【a】 ", body, 22, "\n\n"}: 1, {"【b】 ", body, 21, "\n\n"}: 1, {"【a】 ", body, 21, ""}: 1}, nil},
		{"where the label, body and join meet counts", func(c *countCache, around func(string, string, int, string) (int, bool), _ func(string) int) {
			// the same text, the same body length, cut elsewhere
			c.around("【a】 ", body, 21, "\n\n", around)
			c.around("【a】 w", body[1:]+"\n", 21, "\n", around)
			c.around("【a】 ", body+"\n", 21, "\n", around) // the same label
		}, map[key]int{{"【a】 ", body, 21, "\n\n"}: 1, {"【a】 w", body[1:] + "\n", 21, "\n"}: 1, {"【a】 ", body + "\n", 21, "\n"}: 1}, nil},
		{"a failure is not kept", func(c *countCache, around func(string, string, int, string) (int, bool), _ func(string) int) {
			c.around("【a】 ", "fail"+body, 21, "", around)
			c.around("【a】 ", "fail"+body, 21, "", around)
		}, map[key]int{{"【a】 ", "fail" + body, 21, ""}: 2}, nil},
		{"short bodies each time", func(c *countCache, around func(string, string, int, string) (int, bool), _ func(string) int) {
			c.around("【a】 ", "a short body", 3, "", around)
			c.around("【a】 ", "a short body", 3, "", around)
		}, map[key]int{{"【a】 ", "a short body", 3, ""}: 2}, nil},
		{"apart from whole counts", func(c *countCache, around func(string, string, int, string) (int, bool), count func(string) int) {
			c.around("【a】 ", body, 21, "", around)
			c.count("【a】 "+body, count)
			c.around("【a】 ", body, 21, "", around)
			c.count("【a】 "+body, count)
		}, map[key]int{{"【a】 ", body, 21, ""}: 1}, map[string]int{"【a】 " + body: 1}},
	} {
		arounds, counts := map[key]int{}, map[string]int{}
		around := func(pre, mid string, n int, post string) (int, bool) {
			arounds[key{pre, mid, n, post}]++
			if strings.HasPrefix(mid, "fail") {
				return 0, false
			}
			return n + len(pre) + len(post), true
		}
		count := func(s string) int { counts[s]++; return -len(s) }
		tc.run(newCountCache(16), around, count)
		for k, n := range tc.arounds {
			if arounds[k] != n {
				t.Errorf("%s: %q %d %q derived %d times, want %d", tc.name, k.pre, k.n, k.post, arounds[k], n)
			}
		}
		for k := range arounds {
			if _, ok := tc.arounds[k]; !ok {
				t.Errorf("%s: %q %d %q derived, not expected", tc.name, k.pre, k.n, k.post)
			}
		}
		for s, n := range tc.counts {
			if counts[s] != n {
				t.Errorf("%s: counted whole %d times, want %d", tc.name, counts[s], n)
			}
		}
	}
	c := newCountCache(16)
	around := func(pre, mid string, n int, post string) (int, bool) { return n + len(pre) + len(post), true }
	for i := range 3 {
		if got, ok := c.around("【a】 ", body, 21+i%2, "\n\n", around); !ok || got != 21+i%2+len("【a】 ")+2 {
			t.Errorf("cached around, call %d: %d %v", i, got, ok)
		}
	}
}
